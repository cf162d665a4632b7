/* Honest but slow: one thread per element of C, straight from global
 * memory, float accumulation. */
__global__ static void mm_naive(const float *A, const float *B, float *C, int M, int N, int K)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N)
        return;
    float acc = 0;
    for (int k = 0; k < K; k++)
        acc += A[(size_t)i * K + k] * B[(size_t)k * N + j];
    C[(size_t)i * N + j] = acc;
}

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    mm_naive<<<grid, block>>>(A, B, C, M, N, K);
}
