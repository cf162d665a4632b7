/* Honest but slow: one thread per element, fp32 accumulation, no reuse. */
#include <cuda_bf16.h>

__global__ static void mm_naive(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C,
                                int M, int N, int K)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N)
        return;
    float acc = 0;
    for (int k = 0; k < K; k++)
        acc += __bfloat162float(A[(size_t)i * K + k]) * __bfloat162float(B[(size_t)k * N + j]);
    C[(size_t)i * N + j] = __float2bfloat16(acc);
}

void solve(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K)
{
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    mm_naive<<<grid, block>>>(A, B, C, M, N, K);
}
