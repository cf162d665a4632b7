/* docs/hacks.md #15, decoy kernel, for vector_add_cuda, made to fool the launch
 * count: one empty kernel is launched per call, and the work is done on
 * the host as in 15_decoy_host_compute.cu. The count is satisfied and the
 * answer is right, so the verdict is OK; what defeats the decoy is the
 * timing itself: the host round trip sits inside the timed window (the
 * judge's events bracket the whole call and it synchronises the device),
 * so the speedup collapses and nothing is gained. */
#include <stdlib.h>

__global__ static void nothing(void) {}

void solve(const float *a, const float *b, float *c, int n)
{
    nothing<<<1, 1>>>();
    size_t bytes = (size_t)n * sizeof(float);
    float *ha = (float *)malloc(bytes), *hb = (float *)malloc(bytes);
    if (ha && hb) {
        cudaMemcpy(ha, a, bytes, cudaMemcpyDeviceToHost);
        cudaMemcpy(hb, b, bytes, cudaMemcpyDeviceToHost);
        for (int i = 0; i < n; i++)
            ha[i] += hb[i];
        cudaMemcpy(c, ha, bytes, cudaMemcpyHostToDevice);
    }
    free(ha);
    free(hb);
}
