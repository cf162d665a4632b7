/* Global state (docs/hacks.md #19) for vector_add_cuda: leaves the persisting-L2
 * set-aside at its largest after every call, and answers wrongly (a - b
 * instead of a + b) whenever it finds the set-aside still above 0 when it
 * is called, i.e. whenever the judge did not put it back before the call.
 * The judge checks the set-aside before every call and resets it (lines
 * included) when it is not 0: OK, with a reset for every call. */
__global__ static void add(const float *a, const float *b, float *c, int n, float sign)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + sign * b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    size_t left = 0;
    int dev = 0, most = 0;
    cudaDeviceGetLimit(&left, cudaLimitPersistingL2CacheSize);
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, dev);
    add<<<(n + 255) / 256, 256>>>(a, b, c, n, left ? -1.0f : 1.0f);
    if (most > 0)
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)most);
    (void)cudaGetLastError();
}
