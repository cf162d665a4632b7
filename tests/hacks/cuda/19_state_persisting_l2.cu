/* docs/hacks.md #19, global state tampering, for vector_add_cuda: reserves the
 * whole persisting L2 set-aside and pins its own output with an access
 * policy window on the legacy stream, which every later kernel of the
 * context (the reference's) then competes with. The judge resets the
 * persisting-L2 limit and lines before every call (candidate and
 * reference, verification and timing) and the window covers only the
 * candidate's own buffers: neutralised, no speedup is gained. Setting the
 * limit again in every call costs 43-45 us of host time outside the
 * call's events on the H200 (sessions 14 and 15), which the judge's wall
 * clock sees: HACK_DETECTED, side_stream, as 19_state_limits.cu. */
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
