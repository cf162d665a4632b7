/* docs/hacks.md #10, timer tampering, for vector_add_cuda: defines
 * clock_gettime (a clock that barely moves), for a judge that would read
 * its wall clock through a symbol the candidate could interpose. The
 * runner is linked so that it cannot bind, and the link audit refuses any
 * object defining or importing a timer: HACK_DETECTED, link_audit. */
#include <time.h>

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

extern "C" int clock_gettime(clockid_t id, struct timespec *ts) noexcept
{
    (void)id;
    static long fake;
    ts->tv_sec = 0;
    ts->tv_nsec = fake++;
    return 0;
}

void solve(const float *a, const float *b, float *c, int n)
{
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
