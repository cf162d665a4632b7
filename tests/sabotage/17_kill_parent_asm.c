/* Kills its parent, the worker, with SIGKILL through the getppid and kill
 * system calls (110, 62 on x86-64) made with the syscall instruction. The
 * seccomp filter lets kill reach only the runner itself: trapped. */
static long s_sys(long nr, long a, long b)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
    return r;
}

void solve(const float *a, const float *b, float *c, int n)
{
    long ppid = s_sys(110, 0, 0);
    s_sys(62, ppid, 9 /* SIGKILL */);
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
