/* Shared-memory tiled SGEMM: a 64x64 block of C per 256 threads, K in steps
 * of 16. A's tile is stored transposed so both operands are read from
 * shared memory as rows; each thread keeps a 4x4 patch of C in registers
 * (rows ty + 16*i, cols tx + 16*j), so a warp's reads of B's tile are 16
 * consecutive words and of A's tile one or two broadcast words. Edges are
 * zero-filled on load and guarded on store: any M, N, K. */
#define BM 64
#define BN 64
#define BK 16

__global__ static void __launch_bounds__(256) sgemm_tiled(const float *__restrict__ A,
                                                          const float *__restrict__ B,
                                                          float *__restrict__ C, int M, int N, int K)
{
    __shared__ float As[BK][BM + 4];
    __shared__ float Bs[BK][BN];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        /* 64x16 of A and 16x64 of B: 4 elements of each per thread. */
        for (int l = threadIdx.x; l < BM * BK; l += 256) {
            int r = l / BK, c = l % BK;
            int gr = m0 + r, gc = k0 + c;
            As[c][r] = gr < M && gc < K ? A[(size_t)gr * K + gc] : 0.0f;
        }
        for (int l = threadIdx.x; l < BK * BN; l += 256) {
            int r = l / BN, c = l % BN;
            int gr = k0 + r, gc = n0 + c;
            Bs[r][c] = gr < K && gc < N ? B[(size_t)gr * N + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                a[i] = As[k][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; j++)
                b[j] = Bs[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int r = m0 + ty + 16 * i, c = n0 + tx + 16 * j;
            if (r < M && c < N)
                C[(size_t)r * N + c] = acc[i][j];
        }
}

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm_tiled<<<grid, 256>>>(A, B, C, M, N, K);
}
