/* Accumulates in bf16 (8 bits of mantissa): every partial sum is rounded,
 * so the error grows with K far past the task's tolerance. A precision
 * downgrade, not a different algorithm. */
#include <cuda_bf16.h>

__global__ static void mm_bf16acc(const __nv_bfloat16 *A, const __nv_bfloat16 *B,
                                  __nv_bfloat16 *C, int M, int N, int K)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N)
        return;
    __nv_bfloat16 acc = __float2bfloat16(0.0f);
    for (int k = 0; k < K; k++)
        acc = __hfma(A[(size_t)i * K + k], B[(size_t)k * N + j], acc);
    C[(size_t)i * N + j] = acc;
}

void solve(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C, int M, int N, int K)
{
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    mm_bf16acc<<<grid, block>>>(A, B, C, M, N, K);
}
