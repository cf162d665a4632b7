/* softmax over each row, in double: one block per row finds the maximum,
 * then the sum of exp(x - max), then writes exp(x - max) / sum. */
__global__ static void softmax_ref(const float *x, float *y, int cols)
{
    __shared__ double s[256];
    const float *r = x + (size_t)blockIdx.x * cols;
    float *o = y + (size_t)blockIdx.x * cols;
    double m = -1e300;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        m = fmax(m, (double)r[j]);
    s[threadIdx.x] = m;
    __syncthreads();
    for (int k = 128; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] = fmax(s[threadIdx.x], s[threadIdx.x + k]);
        __syncthreads();
    }
    m = s[0];
    __syncthreads();
    double sum = 0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        sum += exp((double)r[j] - m);
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int k = 128; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    sum = s[0];
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        o[j] = (float)(exp((double)r[j] - m) / sum);
}

void solve(const float *x, float *y, int rows, int cols)
{
    softmax_ref<<<rows, 256>>>(x, y, cols);
}
