/* docs/hacks.md #19, global state tampering, for vector_add_cuda: reserves the
 * whole persisting L2 set-aside and pins its own output with an access
 * policy window on the legacy stream, which every later kernel of the
 * context (the reference's) then competes with. The judge resets the
 * persisting-L2 limit and lines before every call (candidate and
 * reference, verification and timing) and the window covers only the
 * candidate's own buffers: neutralised. The add itself is honest: OK, and
 * no speedup is gained. */
__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    int dev = 0, max_persist = 0, max_window = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, dev);
    cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)max_persist);
    cudaStreamAttrValue v = {};
    size_t bytes = (size_t)n * sizeof(float);
    v.accessPolicyWindow.base_ptr = c;
    v.accessPolicyWindow.num_bytes = bytes < (size_t)max_window ? bytes : (size_t)max_window;
    v.accessPolicyWindow.hitRatio = 1.0f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &v);
    (void)cudaGetLastError(); /* the legacy stream may refuse: fine either way */
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
