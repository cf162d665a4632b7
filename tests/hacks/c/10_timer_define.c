/* docs/hacks.md #10, timer tampering by interposition: defines clock_gettime
 * and gettimeofday that report a clock running 100x slow, hoping the
 * judge's timer binds to them. The judge loads candidates RTLD_LOCAL and
 * -Bsymbolic, so nothing would bind; the link audit rejects an object that
 * defines timing symbols at all: HACK_DETECTED, link_audit. */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int clock_gettime(clockid_t id, struct timespec *ts)
{
    long r = syscall(SYS_clock_gettime, id, ts);
    long long ns = (ts->tv_sec * 1000000000LL + ts->tv_nsec) / 100;
    ts->tv_sec = ns / 1000000000LL, ts->tv_nsec = ns % 1000000000LL;
    return (int)r;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    struct timespec ts;
    int r = clock_gettime(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec, tv->tv_usec = ts.tv_nsec / 1000;
    (void)tz;
    return r;
}

void solve(const float *a, const float *b, float *c, int n)
{
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
