/* C = A B (row-major), one thread per element, accumulated in double. */
__global__ static void mm_ref(const float *A, const float *B, float *C, int M, int N, int K)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N)
        return;
    double acc = 0;
    for (int k = 0; k < K; k++)
        acc += (double)A[(size_t)i * K + k] * B[(size_t)k * N + j];
    C[(size_t)i * N + j] = (float)acc;
}

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    mm_ref<<<grid, block>>>(A, B, C, M, N, K);
}
