/* docs/hacks.md #4, caching keyed by shape, for matmul_f32_cuda: the first call
 * of each (M, N, K) computes C = A B (tiled kernel) and keeps it; any later
 * call of that shape replays it with a copy kernel. Verification runs every
 * case twice on new inputs, so the second run gets the first run's answer:
 * INCORRECT, second_run_mismatch (a kernel ran, so no launch check fires). */
#define T 16
#define SLOTS 16

__global__ static void mm(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[T][T], Bs[T][T + 1];
    int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
    float acc = 0;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[threadIdx.y][threadIdx.x] = r < M && k0 + threadIdx.x < K ? A[(size_t)r * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = k0 + threadIdx.y < K && c < N ? B[(size_t)(k0 + threadIdx.y) * N + c] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; k++)
            acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
        __syncthreads();
    }
    if (r < M && c < N)
        C[(size_t)r * N + c] = acc;
}

__global__ static void copy(const float *src, float *dst, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}

static struct {
    int M, N, K;
    float *saved;
} cache[SLOTS];
static int used;

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    size_t n = (size_t)M * N;
    for (int s = 0; s < used; s++)
        if (cache[s].M == M && cache[s].N == N && cache[s].K == K) {
            copy<<<(unsigned)((n + 255) / 256), 256>>>(cache[s].saved, C, n);
            return;
        }
    dim3 grid((N + T - 1) / T, (M + T - 1) / T), block(T, T);
    mm<<<grid, block>>>(A, B, C, M, N, K);
    if (used < SLOTS && cudaMalloc(&cache[used].saved, n * sizeof(float)) == cudaSuccess) {
        cudaMemcpyAsync(cache[used].saved, C, n * sizeof(float), cudaMemcpyDeviceToDevice);
        cache[used].M = M;
        cache[used].N = N;
        cache[used].K = K;
        used++;
    }
}
