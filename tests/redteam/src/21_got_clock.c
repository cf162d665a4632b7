/* HACKS.md #21 (and #10), patching the judge's GOT. vector_add, computed
 * correctly but three times over (honest, ~3x slower than the reference).
 * The runner is linked lazily (no BIND_NOW), so its .got.plt is writable
 * without even an mprotect. The candidate finds the runner's link map through
 * AT_PHDR and DT_DEBUG (what dl_iterate_phdr would give), the GOT slot of
 * clock_gettime in its DT_JMPREL relocations, and points it at its own clock:
 * honest, except that the first CLOCK_MONOTONIC read after solve() returns
 * (s_timed_call's stop) says 1 us after solve() began. No dlsym, no mprotect,
 * no syscall import: the link audit passes it. A judge that times from
 * another process: OK, and no call faster than the reference. */
/* body */
static int64_t entered = -1;

static int fake_clock(clockid_t id, struct timespec *ts)
{
    long r = k_sys(SYS_clock_gettime, id, (long)ts, 0, 0, 0, 0);
    if (id == CLOCK_MONOTONIC && entered >= 0) {
        int64_t ns = entered + 1000;
        entered = -1;
        ts->tv_sec = ns / 1000000000LL, ts->tv_nsec = ns % 1000000000LL;
    }
    return (int)r;
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int patched;
    if (!patched) {
        patched = 1;
        void **slot = k_got("clock_gettime");
        if (slot)
            *slot = (void *)fake_clock;
    }
    int64_t t = k_now();
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < n; i++)
            c[i] = a[i] + b[i];
        __asm__ __volatile__("" : : "r"(c) : "memory");
    }
    entered = t;
}
