/* docs/hacks.md #7, side-stream work, for vector_add_cuda: like
 * 07_side_stream_nonblocking.cu, but the hidden kernel is a single block
 * (a "persistent" kernel that walks the whole vector), so it runs far past
 * the judge's stop event and its L2 flush. The wall clock, taken after a
 * device-wide synchronise, exceeds the event time by much more than the
 * reference's gap: HACK_DETECTED, side_stream (timed by the wall clock). */
__global__ static void add_walk(const float *a, const float *b, float *c, int n)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    static cudaStream_t s;
    if (!s)
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    add_walk<<<1, 1024, 0, s>>>(a, b, c, n);
}
