/* HACKS.md #22, the work done after the call returns, in a timer's signal
 * handler. vector_add. For sizes of at least 64 Ki elements (the bench case)
 * solve() only remembers its arguments, arms a one-shot ITIMER_REAL of 50 us
 * (a raw setitimer system call: the link audit refuses the import) and
 * returns at once; the SIGALRM handler computes c = a + b 50 us
 * later, while the judge is still busy with its own untimed work (restoring
 * page protections, hashing inputs, flushing the cache, running the
 * reference), long before it compares. Small sizes are computed in the call.
 * A judge that freezes the executor when the call is declared done (SIGSTOP)
 * and checks outputs then finds the output poisoned: INCORRECT,
 * output_unwritten. */
/* body */
static const float *pa, *pb;
static float *pc;
static int pn;

static void on_alarm(int sig)
{
    (void)sig;
    for (int i = 0; i < pn; i++)
        pc[i] = pa[i] + pb[i];
    pn = 0;
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int armed;
    if (n < 65536) {
        for (int i = 0; i < n; i++)
            c[i] = a[i] + b[i];
        return;
    }
    if (!armed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGALRM, &sa, NULL);
        armed = 1;
    }
    if (pn) /* the last one has not run yet: do it now */
        on_alarm(SIGALRM);
    pa = a, pb = b, pc = c, pn = n;
    struct itimerval it = {{0, 0}, {0, 50}};
    k_sys(SYS_setitimer, ITIMER_REAL, (long)&it, 0, 0, 0, 0);
}
