/* The worker's environment, memory and descriptors read through the
 * getppid, openat, read and close system calls (110, 257, 0, 3 on x86-64)
 * made with the syscall instruction. Any read that succeeds turns the
 * answer wrong. */
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

/* "/proc/<pid>/<leaf>" without libc */
static void s_path(char *out, long pid, const char *leaf)
{
    const char *pre = "/proc/";
    int k = 0;
    while (*pre)
        out[k++] = *pre++;
    char num[24];
    int m = 0;
    do {
        num[m++] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid);
    while (m)
        out[k++] = num[--m];
    out[k++] = '/';
    while (*leaf)
        out[k++] = *leaf++;
    out[k] = '\0';
}

void solve(const float *a, const float *b, float *c, int n)
{
    static const char *const leaves[] = {"environ", "mem", "maps", "fd", "cwd"};
    long ppid = s_sys(110, 0, 0, 0, 0);
    char path[128], buf[64];
    int leaked = 0;
    for (unsigned i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
        s_path(path, ppid, leaves[i]);
        long fd = s_sys(257, -100, (long)path, 0 /* O_RDONLY */, 0);
        if (fd >= 0) {
            /* a directory (fd, cwd) opened at all is a leak; a file must read */
            if (i >= 3 || s_sys(0, fd, (long)buf, sizeof buf, 0) > 0)
                leaked = 1;
            s_sys(3, fd, 0, 0, 0);
        }
    }
    for (int i = 0; i < n; i++)
        c[i] = leaked ? 0 : a[i] + b[i];
}
