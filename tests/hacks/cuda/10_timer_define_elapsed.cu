/* docs/hacks.md #10, timer tampering, for vector_add_cuda: defines
 * cudaEventElapsedTime (reporting a microsecond for everything) hoping to
 * interpose on the judge's. The judge links its runtime statically and the
 * candidate is loaded RTLD_LOCAL with -Bsymbolic, so it could not bind
 * anyway, and the link audit refuses an object that defines a CUDA API
 * name or anything cudaEvent*: HACK_DETECTED, link_audit. */
__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    (void)start;
    (void)end;
    *ms = 0.001f;
    return cudaSuccess;
}

void solve(const float *a, const float *b, float *c, int n)
{
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
