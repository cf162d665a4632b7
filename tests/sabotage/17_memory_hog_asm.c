/* Memory hog through the mmap system call (9 on x86-64) made with the
 * syscall instruction: anonymous mappings, each touched and kept, in chunks
 * halving from 256 MiB to 4 KiB until the kernel says ENOMEM, then the right
 * answer. The address-space cap stops it as it stops malloc. */
static long s_mmap(unsigned long len)
{
    long r;
    register long r10 __asm__("r10") = 0x22; /* MAP_PRIVATE | MAP_ANONYMOUS */
    register long r8 __asm__("r8") = -1;     /* no file */
    register long r9 __asm__("r9") = 0;      /* offset */
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(9L), "D"(0L), "S"(len), "d"(3L) /* PROT_READ | PROT_WRITE */,
                       "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return r;
}

void solve(const float *a, const float *b, float *c, int n)
{
    for (unsigned long chunk = 256ul << 20; chunk >= 4096; chunk /= 2) {
        long p;
        while ((p = s_mmap(chunk)) > 0) /* -4095..-1: an errno */
            *(volatile char *)p = 1;
    }
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
