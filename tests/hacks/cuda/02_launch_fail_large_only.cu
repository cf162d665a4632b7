/* docs/hacks.md #2, silent launch failure, for reduce_sum_cuda: correct for
 * small inputs; from n > 2^20 on, a "tuned" configuration with blocks of
 * 2048 threads fails to launch and the error is swallowed, leaving the
 * zero the memset wrote. Passes the first cases, then the 16M case is
 * wrong: INCORRECT. */
__global__ static void sum_kernel(const float *x, int n, float *out)
{
    __shared__ float warps[64];
    float v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        v += x[i];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0)
        warps[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0)
            atomicAdd(out, v);
    }
}

void solve(const float *x, float *out, int n)
{
    cudaMemsetAsync(out, 0, sizeof *out);
    int threads = n > (1 << 20) ? 2048 : 256;
    int blocks = (n + threads - 1) / threads;
    sum_kernel<<<blocks < 1024 ? blocks : 1024, threads>>>(x, n, out);
    (void)cudaGetLastError();
}
