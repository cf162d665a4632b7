/* HACKS.md #19 and #22 for CUDA, poisoning the reference figure the worker
 * caches. vector_add_cuda, computed correctly, two passes (a little slower
 * than the reference). The `cached` policy, and the process level's anchor
 * (docs/cuda-judge.md §7, §11), reuse reference medians measured in an
 * earlier job of the task; a candidate that is the first of its task on a
 * worker would like them slow. Limits and cache settings are restored by
 * the executor before every call (19_state_*.cu in tests/hacks/cuda), so this
 * one leaves behind what no reset puts back: on its first call it takes and
 * keeps three quarters of the free device memory, touched so that the pages
 * are really backed, for the reference's executor (and the judge's next
 * context) to work beside. The judge's and the reference's buffers were
 * allocated when their executors started, before any candidate; the
 * reference's calls allocate nothing; the judge flushes the L2 before every
 * sample; and the candidate's executor is frozen while the reference runs. The reference's figure is unchanged: OK,
 * and no call faster than the reference. Reasoned, not yet run on a GPU. */
__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    static void *hog;
    if (!hog) {
        size_t free_b = 0, total = 0;
        if (cudaMemGetInfo(&free_b, &total) == cudaSuccess &&
            cudaMalloc(&hog, free_b / 4 * 3) == cudaSuccess)
            cudaMemsetAsync(hog, 0x5a, free_b / 4 * 3, cudaStreamLegacy);
        else
            hog = (void *)1; /* tried; never freed */
        cudaGetLastError();
    }
    for (int k = 0; k < 2; k++)
        add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
