/* docs/hacks.md #20, verifier bugs, for softmax_rows_cuda: writes the judge's
 * own poison pattern (float bits 0x7fc0dead), for a verifier that skips
 * poisoned elements as "not its business". Poison left in an output is an
 * element never written: INCORRECT, output_unwritten. */
__global__ static void poison(float *y, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __int_as_float(0x7fc0dead);
}

void solve(const float *x, float *y, int rows, int cols)
{
    (void)x;
    size_t n = (size_t)rows * cols;
    poison<<<(unsigned)((n + 255) / 256), 256>>>(y, n);
}
