/* docs/hacks.md #12, precision downgrade, for matmul_f32_cuda: converts A and B
 * to fp16 and multiplies on the tensor cores (WMMA 16x16x16, fp32
 * accumulation), several times faster than fp32 FMA. fp16 keeps 11
 * significant bits; over K = 65 products of O(1) values the error reaches
 * ~1e-3, above the task's atol 1e-3 + rtol 1e-4 (a tolerance set for fp32
 * math against a double reference): INCORRECT. */
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

/* One warp per 16x16 tile of C; operands staged (zero-padded) through
 * shared memory as half. */
__global__ static void mm_half(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(32) half As[16 * 16], Bs[16 * 16];
    __shared__ __align__(32) float Cs[16 * 16];
    int m0 = blockIdx.y * 16, n0 = blockIdx.x * 16, lane = threadIdx.x;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int e = lane; e < 256; e += 32) {
            int r = e / 16, c = e % 16;
            As[e] = __float2half(m0 + r < M && k0 + c < K ? A[(size_t)(m0 + r) * K + k0 + c] : 0.0f);
            Bs[e] = __float2half(k0 + r < K && n0 + c < N ? B[(size_t)(k0 + r) * N + n0 + c] : 0.0f);
        }
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, As, 16);
        wmma::load_matrix_sync(fb, Bs, 16);
        wmma::mma_sync(acc, fa, fb, acc);
        __syncwarp();
    }
    wmma::store_matrix_sync(Cs, acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
        int r = e / 16, c = e % 16;
        if (m0 + r < M && n0 + c < N)
            C[(size_t)(m0 + r) * N + n0 + c] = Cs[e];
    }
}

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    mm_half<<<grid, 32>>>(A, B, C, M, N, K);
}
