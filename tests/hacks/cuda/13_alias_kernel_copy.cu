/* docs/hacks.md #13, output aliasing, for transpose_cuda: a copy kernel, y = x,
 * which is the transpose only when a dimension is 1 (the first case, 1 x 1,
 * passes). 3 x 5 is not: INCORRECT. */
__global__ static void copy(const float *x, float *y, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}

void solve(const float *x, float *y, int rows, int cols)
{
    size_t n = (size_t)rows * cols;
    copy<<<(unsigned)((n + 255) / 256), 256>>>(x, y, n);
}
