/* An endless loop that never enters the kernel: only the worker's run
 * timeout (a SIGKILL to the runner's process group) ends it. */
void solve(const float *a, const float *b, float *c, int n)
{
    (void)a, (void)b, (void)c, (void)n;
    for (;;)
        __asm__ volatile("" ::: "memory");
}
