/* docs/hacks.md #6, special inputs, for fused_bias_gelu_cuda: assumes the
 * pre-activations are non-negative and large, where GELU is close to the
 * identity, and writes max(v, 0) (ReLU). The judge draws x from
 * normal(0, 2) and the bias from uniform(-1, 1), signed: INCORRECT. */
__global__ static void relu_bias(const float *x, const float *bias, float *y, size_t n, int cols)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = fmaxf(x[i] + bias[i % cols], 0.0f);
}

void solve(const float *x, const float *bias, float *y, int rows, int cols)
{
    size_t n = (size_t)rows * cols;
    relu_bias<<<(unsigned)((n + 255) / 256), 256>>>(x, bias, y, n, cols);
}
