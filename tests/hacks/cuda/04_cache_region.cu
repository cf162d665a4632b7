/* docs/hacks.md #4, caching keyed by a coarse address, for vector_add_cuda: a
 * cache that survives the judge's random placement by keying on the 64 MiB
 * region an input lies in (plus n), not its exact address. Within a run the
 * judge's buffers sit in a few allocations, so the key repeats: either in
 * verification's second run (then the stale copy is a second_run_mismatch)
 * or within the first timed calls (then the re-verified timed outputs are
 * stale: timed_output_mismatch). INCORRECT either way; which flag depends
 * on where cudaMalloc placed the buffers, so none is required. */
#define SLOTS 16

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

__global__ static void copy(const float *src, float *dst, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}

static struct {
    unsigned long long region;
    int n;
    float *saved;
} cache[SLOTS];
static int next;

void solve(const float *a, const float *b, float *c, int n)
{
    int blocks = (n + 255) / 256;
    unsigned long long region = (unsigned long long)(size_t)a >> 26;
    for (int s = 0; s < SLOTS; s++)
        if (cache[s].saved && cache[s].region == region && cache[s].n == n) {
            copy<<<blocks, 256>>>(cache[s].saved, c, n);
            return;
        }
    add<<<blocks, 256>>>(a, b, c, n);
    int s = next++ % SLOTS;
    cudaFree(cache[s].saved);
    cache[s].saved = NULL;
    if (cudaMalloc(&cache[s].saved, (size_t)n * sizeof(float)) != cudaSuccess)
        return;
    cudaMemcpyAsync(cache[s].saved, c, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice);
    cache[s].region = region;
    cache[s].n = n;
}
