/* An endless loop of sched_yield system calls (24 on x86-64) made with the
 * syscall instruction: allowed, and ended only by the run timeout. */
void solve(const float *a, const float *b, float *c, int n)
{
    (void)a, (void)b, (void)c, (void)n;
    for (;;) {
        long r;
        __asm__ volatile("syscall" : "=a"(r) : "a"(24L) : "rcx", "r11", "memory");
    }
}
