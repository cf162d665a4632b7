/* HACKS.md #22 for CUDA, work after the call returns, by the runtime's own
 * thread. vector_add_cuda, computed correctly. solve() queues on a
 * non-blocking stream a host function (cudaLaunchHostFunc: the CUDA
 * runtime's callback thread runs it, no thread of its own, no timer) that
 * waits 200 us, and behind it the kernel, then returns at once: the
 * executor's stop event on the legacy stream is recorded before the kernel
 * starts, so the event window holds nothing. The executor synchronises the
 * device before it says done, and the judge stops it only then, so the work
 * still lands inside the command the judge timed by its own wall clock: the
 * candidate's (wall - event) gap is ~200 us over the reference's, far above
 * max(25 us, 20%) (docs/judge.md §5, check 2): HACK_DETECTED, side_stream
 * (and below_roofline where the case declares bytes). Reasoned, not yet run
 * on a GPU. */
#include <time.h>

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static void s_later(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 200000}; /* 200 us, a sleep: the audit refuses clock reads */
    nanosleep(&ts, 0);
}

void solve(const float *a, const float *b, float *c, int n)
{
    static cudaStream_t side;
    if (!side)
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaLaunchHostFunc(side, s_later, 0);
    add<<<(n + 255) / 256, 256, 0, side>>>(a, b, c, n);
}
