/* Tiled like the fast version, but the K loop stops at the last full tile
 * (K / 16 * 16): the remainder of every dot product is dropped whenever K
 * is not a multiple of 16. */
#define T 16

__global__ static void mm_tiles(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[T][T], Bs[T][T];
    int j = blockIdx.x * T + threadIdx.x, i = blockIdx.y * T + threadIdx.y;
    float acc = 0;
    for (int k0 = 0; k0 + T <= K; k0 += T) {
        As[threadIdx.y][threadIdx.x] = i < M ? A[(size_t)i * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = j < N ? B[(size_t)(k0 + threadIdx.y) * N + j] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; k++)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (i < M && j < N)
        C[(size_t)i * N + j] = acc;
}

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    mm_tiles<<<grid, block>>>(A, B, C, M, N, K);
}
