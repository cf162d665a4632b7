/* docs/hacks.md #1, stale output, for vector_add_cuda: a grid that covers only
 * the first half of the vector (a classic "forgot the rounding up" that a
 * judge reusing buffers would not notice). The rest keeps the judge's
 * poison: INCORRECT, output_unwritten. At n = 1 the half is empty, so the
 * very first case already shows it. */
__global__ static void add_half(const float *a, const float *b, float *c, int half)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < half)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    int half = n / 2, blocks = (half + 255) / 256;
    add_half<<<blocks > 0 ? blocks : 1, 256>>>(a, b, c, half);
}
