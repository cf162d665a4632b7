/* docs/hacks.md #7, side-stream work, for vector_add_cuda: the real kernel runs
 * on a stream created with cudaStreamNonBlocking and is never joined, so
 * the judge's stop event on the legacy stream does not wait for it. The
 * outputs are right (the judge synchronises the device before reading
 * them). At full speed the hidden kernel even runs under the judge's L2
 * flush, before the start event: the event window holds nothing. Either
 * the wall clock shows the hidden work (side_stream, when it stretches the
 * call by more than 10 us over the reference's) or the event median lands
 * far under what the GPU's bandwidth allows for 25 MB (below_roofline);
 * which of the two depends on how much the hidden kernel slows the flush,
 * so only the status is fixed: HACK_DETECTED. 07_side_stream_slow.cu is
 * the case where side_stream alone must fire. */
__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    static cudaStream_t s;
    if (!s)
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    add<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);
}
