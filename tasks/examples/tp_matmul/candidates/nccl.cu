/* The baseline itself, as a candidate (OK, speedup about 1): this rank's
 * partial product X_r W_r, one thread per output, then NCCL's all-reduce of
 * the partials in place. */
#include <nccl.h>

__global__ static void partial(const float *x, const float *w, float *y, int m, int n, int kr)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
    if (c >= n || i >= m)
        return;
    float s = 0.0f;
    for (int t = 0; t < kr; t++)
        s += x[(size_t)i * kr + t] * w[(size_t)t * n + c];
    y[(size_t)i * n + c] = s;
}

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, const float *w,
                      float *y, int m, int n, int kr)
{
    (void)rank;
    (void)world;
    partial<<<dim3((n + 127) / 128, m), 128>>>(x, w, y, m, n, kr);
    ncclAllReduce(y, y, (size_t)m * n, ncclFloat, ncclSum, comm, 0);
}
