/* docs/hacks.md #12, precision downgrade, for matmul_f32_cuda: TF32 tensor
 * cores (what cuBLAS does with CUBLAS_TF32_TENSOR_OP_MATH, and PyTorch's
 * allow_tf32): inputs rounded to 10-bit mantissas, fp32 accumulation. The
 * error over K terms is ~1e-3 for these inputs, above the task's tolerance
 * for fp32 math: INCORRECT. */
#include <mma.h>

using namespace nvcuda;

__global__ static void mm_tf32(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(32) float As[16 * 8], Bs[8 * 16], Cs[16 * 16];
    int m0 = blockIdx.y * 16, n0 = blockIdx.x * 16, lane = threadIdx.x;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 8) {
        for (int e = lane; e < 128; e += 32) {
            int r = e / 8, c = e % 8;
            As[e] = m0 + r < M && k0 + c < K ? A[(size_t)(m0 + r) * K + k0 + c] : 0.0f;
            int rb = e / 16, cb = e % 16;
            Bs[e] = k0 + rb < K && n0 + cb < N ? B[(size_t)(k0 + rb) * N + n0 + cb] : 0.0f;
        }
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, As, 8);
        wmma::load_matrix_sync(fb, Bs, 16);
        for (int i = 0; i < fa.num_elements; i++)
            fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
        for (int i = 0; i < fb.num_elements; i++)
            fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
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
    mm_tf32<<<grid, 32>>>(A, B, C, M, N, K);
}
