/* transpose reference: y[c][r] = x[r][c], one thread per element (reads
 * coalesced, writes strided). */
__global__ static void transpose_ref(const float *x, float *y, int rows, int cols)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * cols)
        return;
    size_t r = i / cols, c = i % cols;
    y[c * rows + r] = x[i];
}

void solve(const float *x, float *y, int rows, int cols)
{
    size_t n = (size_t)rows * cols;
    transpose_ref<<<(unsigned)((n + 255) / 256), 256>>>(x, y, rows, cols);
}
