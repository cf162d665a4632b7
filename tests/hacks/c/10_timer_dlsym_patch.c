/* docs/hacks.md #10, timer tampering by patching: finds the C library's
 * clock_gettime through dlsym, makes its page writable with mprotect and
 * overwrites its first bytes with a jump to its own clock. That clock is
 * honest except for the first CLOCK_MONOTONIC read after each solve()
 * returns, the judge's "stop" timestamp, which it moves back to 1 us after
 * solve() began: every call would look like it took a microsecond (x86-64
 * only; elsewhere it only computes). The link audit rejects an object that
 * imports dlsym and mprotect: HACK_DETECTED, link_audit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long entered = -1; /* ns on CLOCK_MONOTONIC when solve began; -1 = none pending */

static long long now_ns(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fake_clock(clockid_t id, struct timespec *ts)
{
    long r = syscall(SYS_clock_gettime, id, ts);
    if (id == CLOCK_MONOTONIC && entered >= 0) {
        long long ns = entered + 1000;
        entered = -1;
        ts->tv_sec = ns / 1000000000LL, ts->tv_nsec = ns % 1000000000LL;
    }
    return (int)r;
}

static void patch(void)
{
#if defined(__x86_64__)
    unsigned char *f = dlsym(RTLD_DEFAULT, "clock_gettime");
    if (!f)
        return;
    uintptr_t page = (uintptr_t)f & ~(uintptr_t)4095;
    if (mprotect((void *)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return;
    unsigned char jmp[12] = {0x48, 0xb8}; /* movabs rax, fake_clock; jmp rax */
    uint64_t to = (uint64_t)(uintptr_t)fake_clock;
    memcpy(jmp + 2, &to, 8);
    jmp[10] = 0xff, jmp[11] = 0xe0;
    memcpy(f, jmp, sizeof jmp);
    mprotect((void *)page, 8192, PROT_READ | PROT_EXEC);
#endif
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int patched;
    if (!patched) {
        patched = 1;
        patch();
    }
    long long t = now_ns();
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
    entered = t;
}
