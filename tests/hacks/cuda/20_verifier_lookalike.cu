/* docs/hacks.md #20, verifier bugs, for transpose_cuda (atol = rtol = 0): a NaN
 * one payload bit away from the poison (0x7fc0deac), for a verifier that
 * matches the poison loosely or treats any NaN as unwritten and then skips
 * it. It is written, and it is wrong: INCORRECT. */
__global__ static void lookalike(float *y, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __int_as_float(0x7fc0deac);
}

void solve(const float *x, float *y, int rows, int cols)
{
    (void)x;
    size_t n = (size_t)rows * cols;
    lookalike<<<(unsigned)((n + 255) / 256), 256>>>(y, n);
}
