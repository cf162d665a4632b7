/* layernorm over each row, in double: mean, then variance (biased, as
 * PyTorch), then y = (x - mean) / sqrt(var + eps) * gamma + beta. */
__global__ static void ln_ref(const float *x, const float *gamma, const float *beta, float *y,
                              int cols, float eps)
{
    __shared__ double s[256];
    const float *r = x + (size_t)blockIdx.x * cols;
    float *o = y + (size_t)blockIdx.x * cols;
    double acc = 0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        acc += r[j];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = 128; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    double mean = s[0] / cols;
    __syncthreads();
    acc = 0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        acc += (r[j] - mean) * (r[j] - mean);
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = 128; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    double rstd = 1.0 / sqrt(s[0] / cols + (double)eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        o[j] = (float)((r[j] - mean) * rstd * gamma[j] + beta[j]);
}

void solve(const float *x, const float *gamma, const float *beta, float *y, int rows, int cols,
           float eps)
{
    ln_ref<<<rows, 256>>>(x, gamma, beta, y, cols, eps);
}
