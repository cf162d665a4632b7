/* docs/hacks.md #12, precision downgrade, for softmax_rows_cuda: loads the row
 * as half (half the bytes of a float row) and computes exp in half
 * precision. Outputs carry ~3 significant digits; the task asks rtol 2e-5
 * against a double reference: INCORRECT. */
#include <cuda_fp16.h>

__global__ static void softmax_half(const float *x, float *y, int cols)
{
    __shared__ float red[32];
    const float *r = x + (size_t)blockIdx.x * cols;
    float *o = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        m = fmaxf(m, __half2float(__float2half(r[j])));
    for (int k = 16; k > 0; k >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, k));
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); w++)
        m = fmaxf(m, red[w]);
    __syncthreads();
    float s = 0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        s += __half2float(hexp(__float2half(r[j] - m)));
    for (int k = 16; k > 0; k >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, k);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    __syncthreads();
    s = 0;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++)
        s += red[w];
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        o[j] = __half2float(hexp(__float2half(r[j] - m))) / s;
}

void solve(const float *x, float *y, int rows, int cols)
{
    softmax_half<<<rows, 256>>>(x, y, cols);
}
