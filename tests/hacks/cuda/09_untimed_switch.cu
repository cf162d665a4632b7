/* docs/hacks.md #9, work in untimed phases, for vector_add_cuda: behaves during
 * verification (the task has 6 cases, each verified twice: the first 12
 * calls), keeps a copy of the last b it saw, and from then on adds that
 * remembered b instead of reading the new one. Same memory traffic, so no
 * roofline alarm, but the judge draws new inputs for every timed call and
 * re-verifies a random subset of timed outputs after timing: INCORRECT,
 * timed_output_mismatch. */
#define VERIFY_CALLS 12

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static int calls;
static float *kept_b;
static int kept_n;

void solve(const float *a, const float *b, float *c, int n)
{
    int blocks = (n + 255) / 256;
    if (++calls > VERIFY_CALLS && kept_b && kept_n >= n) {
        add<<<blocks, 256>>>(a, kept_b, c, n);
        return;
    }
    add<<<blocks, 256>>>(a, b, c, n);
    if (n > kept_n) {
        cudaFree(kept_b);
        kept_b = NULL;
        kept_n = 0;
        if (cudaMalloc(&kept_b, (size_t)n * sizeof(float)) != cudaSuccess)
            return;
        kept_n = n;
    }
    cudaMemcpyAsync(kept_b, b, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice);
}
