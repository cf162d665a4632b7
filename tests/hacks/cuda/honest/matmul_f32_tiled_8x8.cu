/* Honest, matmul_f32_cuda: the classic register-blocked SGEMM. A 128x128
 * block of C per 256 threads, K in steps of 8; each thread accumulates an
 * 8x8 patch in registers. A's tile is stored transposed in shared memory so
 * both operands are read as rows, B's tile is loaded with 16-byte loads
 * when N is a multiple of 4. Edges are zero-filled on load and guarded on
 * store, so any M, N, K works. fp32 FMA throughout (the task's precision). */
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8

__global__ static void __launch_bounds__(256)
    sgemm_8x8(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
              int M, int N, int K)
{
    __shared__ float As[BK][BM + 4]; /* transposed: As[k][m] */
    __shared__ __align__(16) float Bs[BK][BN];
    int tid = threadIdx.x, tr = tid / (BN / TN), tc = tid % (BN / TN); /* 16 x 16 threads */
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    bool vec_b = N % 4 == 0;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        /* A: 128 x 8 = 1024 elements, 4 per thread */
        for (int l = tid; l < BM * BK; l += 256) {
            int r = l / BK, c = l % BK, gr = m0 + r, gc = k0 + c;
            As[c][r] = gr < M && gc < K ? A[(size_t)gr * K + gc] : 0.0f;
        }
        /* B: 8 x 128 = 256 float4, 1 per thread */
        {
            int r = tid / (BN / 4), c = (tid % (BN / 4)) * 4, gr = k0 + r, gc = n0 + c;
            float4 v;
            if (vec_b && gr < K && gc + 3 < N) {
                v = __ldg((const float4 *)(B + (size_t)gr * N + gc));
            } else {
                v.x = gr < K && gc < N ? B[(size_t)gr * N + gc] : 0.0f;
                v.y = gr < K && gc + 1 < N ? B[(size_t)gr * N + gc + 1] : 0.0f;
                v.z = gr < K && gc + 2 < N ? B[(size_t)gr * N + gc + 2] : 0.0f;
                v.w = gr < K && gc + 3 < N ? B[(size_t)gr * N + gc + 3] : 0.0f;
            }
            *(float4 *)&Bs[r][c] = v;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; i++)
                a[i] = As[k][tr + 16 * i];
#pragma unroll
            for (int j = 0; j < TN; j++)
                b[j] = Bs[k][tc + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) {
            int r = m0 + tr + 16 * i, c = n0 + tc + 16 * j;
            if (r < M && c < N)
                C[(size_t)r * N + c] = acc[i][j];
        }
}

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm_8x8<<<grid, 256>>>(A, B, C, M, N, K);
}
