/* docs/hacks.md #19, global state tampering, for vector_add_cuda: on every call
 * prefers shared memory over L1 for the whole context, sets the L2 fetch
 * granularity to its smallest and grows the per-thread stack (local memory
 * the driver must re-reserve), all aimed at slowing whatever runs next
 * (the reference, interleaved with it in timing). The judge restores the
 * device limits and the cache configuration before every candidate and
 * reference call: neutralised. The add itself is honest: OK, no speedup
 * gained. */
__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    cudaDeviceSetCacheConfig(cudaFuncCachePreferShared);
    cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 32);
    cudaDeviceSetLimit(cudaLimitStackSize, 8192);
    (void)cudaGetLastError();
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
