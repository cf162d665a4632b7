/* docs/hacks.md #1, stale output, for softmax_rows_cuda: allocates scratch of
 * the output's size, hoping cudaMalloc hands back memory the reference
 * just freed with its answer still in it, and copies that to the output
 * with a kernel of its own. The reference for these inputs has not run
 * yet (the candidate always runs first, and the reference's buffers of
 * earlier runs held other inputs' answers): INCORRECT. */
__global__ static void copy_rows(const float *src, float *dst, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}

void solve(const float *x, float *y, int rows, int cols)
{
    (void)x;
    size_t n = (size_t)rows * cols;
    float *old = NULL;
    if (cudaMalloc(&old, n * sizeof *old) != cudaSuccess)
        return;
    copy_rows<<<(unsigned)((n + 255) / 256), 256>>>(old, y, n);
    cudaFree(old);
}
