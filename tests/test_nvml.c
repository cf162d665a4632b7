/* test_nvml.c — common/nvml.c against tests/fake_nvml (never a real GPU).
 *
 * The fake libnvidia-ml.so.1 is loaded by path and appends every call it
 * receives to $CR_FAKE_NVML_LOG, so each test reads back which NVML calls
 * were made, with which arguments and in which order. */
#include "error.h"
#include "nvml.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAKE CR_TEST_BIN_DIR "/fake_nvml/libnvidia-ml.so.1"
#define BUS "00000000:65:00.0"

static char s_dir[64];
static char s_log[128];

static void setup(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cr_test_nvml.XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
    snprintf(s_log, sizeof s_log, "%s/calls.log", s_dir);
    setenv("CR_FAKE_NVML_LOG", s_log, 1);
    unsetenv("CR_FAKE_NVML_FAIL");
    unsetenv("CR_FAKE_NVML_REASONS");
    /* Sanity: this test must only ever talk to the fake. */
    void *h = dlopen(FAKE, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "fake NVML not built at %s: %s", FAKE, dlerror());
    cr_assert_not_null(dlsym(h, "cr_fake_nvml"), "%s is not the fake", FAKE);
    dlclose(h);
}

static void teardown(void)
{
    unlink(s_log);
    rmdir(s_dir);
}

/* The log's text (static buffer). */
static const char *s_calls(void)
{
    static char buf[16384];
    buf[0] = '\0';
    FILE *f = fopen(s_log, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Position of line `needle` in the log, or -1. */
static long s_pos(const char *log, const char *needle)
{
    const char *p = strstr(log, needle);
    return p ? (long)(p - log) : -1;
}

TestSuite(nvml, .init = setup, .fini = teardown, .timeout = 20);

Test(nvml, policy_parse)
{
    cr_clock_policy_t p;
    cr_assert_eq(cr_clock_policy_parse(NULL, &p), 0);
    cr_assert_eq(p.lock, 0);
    cr_assert_eq(cr_clock_policy_parse("", &p), 0);
    cr_assert_eq(cr_clock_policy_parse("observe", &p), 0);
    cr_assert_eq(p.lock, 0);
    cr_assert_eq(cr_clock_policy_parse("lock:base", &p), 0);
    cr_assert(p.lock && p.mhz == 0);
    cr_assert_eq(cr_clock_policy_parse("lock:1410", &p), 0);
    cr_assert(p.lock && p.mhz == 1410);
    const char *bad[] = {"lock", "lock:", "lock:abc", "lock:0", "lock:-5", "lock:99999",
                         "lock:12x", "observe ", "Lock:base", "fast"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(cr_clock_policy_parse(bad[i], &p), CR_E_USAGE, "'%s' accepted", bad[i]);
}

Test(nvml, open_reads_identity_and_clock)
{
    cr_nvml_t *n = NULL;
    char err[256];
    cr_assert_eq(cr_nvml_open(FAKE, BUS, &n, err, sizeof err), 0, "%s", err);
    cr_nvml_info_t info;
    cr_assert_eq(cr_nvml_info(n, &info), 0);
    cr_assert_str_eq(info.name, "NVIDIA H200 (crucible fake)");
    cr_assert(strncmp(info.uuid, "GPU-", 4) == 0);
    cr_assert_eq(info.cc_major, 9);
    cr_assert_eq(info.cc_minor, 0);
    cr_assert_eq(info.max_sm_mhz, 1980);
    cr_assert_eq(info.base_mhz, 1755);
    unsigned mhz = 0;
    cr_assert_eq(cr_nvml_sm_clock(n, &mhz), 0);
    cr_assert_eq(mhz, 1980);
    uint64_t r = 7;
    cr_assert_eq(cr_nvml_throttle_reasons(n, &r), 0);
    cr_assert_eq(r, 0);
    cr_nvml_close(&n);
    cr_assert_null(n);
    cr_nvml_close(&n); /* safe on NULL */

    const char *log = s_calls();
    long init = s_pos(log, "nvmlInit_v2 -> 0");
    long handle = s_pos(log, "nvmlDeviceGetHandleByPciBusId_v2 " BUS " -> 0");
    long shut = s_pos(log, "nvmlShutdown -> 0");
    cr_assert(init >= 0 && handle > init && shut > handle, "calls:\n%s", log);
    cr_assert(s_pos(log, "nvmlDeviceGetCurrentClocksEventReasons -> 0") >= 0, "%s", log);
    cr_assert(s_pos(log, "nvmlDeviceGetClockInfo 1 -> 0") >= 0, "%s", log);
    /* Observing never changes a setting. */
    cr_assert(s_pos(log, "SetGpuLockedClocks") < 0 && s_pos(log, "Reset") < 0, "%s", log);
}

Test(nvml, lock_base_then_reset)
{
    cr_nvml_t *n = NULL;
    cr_assert_eq(cr_nvml_open(FAKE, BUS, &n, NULL, 0), 0);
    unsigned locked = 0, mhz = 0;
    cr_assert_eq(cr_nvml_lock(n, 0, &locked), 0, "%s", cr_nvml_last_error(n));
    cr_assert_eq(locked, 1755, "base = the default applications clock");
    cr_assert_eq(cr_nvml_sm_clock(n, &mhz), 0);
    cr_assert_eq(mhz, 1755);
    cr_assert_eq(cr_nvml_reset(n), 0);
    cr_assert_eq(cr_nvml_sm_clock(n, &mhz), 0);
    cr_assert_eq(mhz, 1980);
    cr_nvml_close(&n);
    const char *log = s_calls();
    long lock = s_pos(log, "nvmlDeviceSetGpuLockedClocks 1755 1755 -> 0");
    long reset = s_pos(log, "nvmlDeviceResetGpuLockedClocks -> 0");
    cr_assert(lock >= 0 && reset > lock, "lock then reset expected:\n%s", log);
}

Test(nvml, lock_at_mhz)
{
    cr_nvml_t *n = NULL;
    cr_assert_eq(cr_nvml_open(FAKE, BUS, &n, NULL, 0), 0);
    unsigned locked = 0;
    cr_assert_eq(cr_nvml_lock(n, 1410, &locked), 0);
    cr_assert_eq(locked, 1410);
    cr_assert_eq(cr_nvml_reset(n), 0);
    /* A clock the GPU cannot run at is refused by NVML, reported, not fatal. */
    cr_assert_lt(cr_nvml_lock(n, 5000, &locked), 0);
    cr_assert(strstr(cr_nvml_last_error(n), "nvmlDeviceSetGpuLockedClocks") != NULL);
    cr_nvml_close(&n);
    const char *log = s_calls();
    cr_assert(s_pos(log, "nvmlDeviceSetGpuLockedClocks 1410 1410 -> 0") >= 0, "%s", log);
    cr_assert(s_pos(log, "nvmlDeviceSetGpuLockedClocks 5000 5000 -> 2") >= 0, "%s", log);
}

Test(nvml, lock_base_falls_back_to_max_clock)
{
    setenv("CR_FAKE_NVML_FAIL", "nvmlDeviceGetDefaultApplicationsClock", 1);
    cr_nvml_t *n = NULL;
    cr_assert_eq(cr_nvml_open(FAKE, BUS, &n, NULL, 0), 0);
    unsigned locked = 0;
    cr_assert_eq(cr_nvml_lock(n, 0, &locked), 0);
    cr_assert_eq(locked, 1980);
    cr_assert_eq(cr_nvml_reset(n), 0);
    cr_nvml_close(&n);
}

Test(nvml, lock_without_permission_is_an_error)
{
    setenv("CR_FAKE_NVML_FAIL", "nvmlDeviceSetGpuLockedClocks", 1);
    cr_nvml_t *n = NULL;
    cr_assert_eq(cr_nvml_open(FAKE, BUS, &n, NULL, 0), 0);
    unsigned locked = 123;
    cr_assert_eq(cr_nvml_lock(n, 0, &locked), -EPERM);
    cr_assert_eq(locked, 123, "untouched on failure");
    cr_assert(strstr(cr_nvml_last_error(n), "Insufficient Permissions") != NULL, "%s",
              cr_nvml_last_error(n));
    cr_nvml_close(&n);
}

Test(nvml, reset_clocks_at_opens_resets_and_shuts_down)
{
    cr_assert_eq(cr_nvml_reset_clocks_at(FAKE, 0, NULL, 0), 0);
    const char *log = s_calls();
    long init = s_pos(log, "nvmlInit_v2 -> 0");
    long handle = s_pos(log, "nvmlDeviceGetHandleByIndex_v2 0 -> 0");
    long reset = s_pos(log, "nvmlDeviceResetGpuLockedClocks -> 0");
    long shut = s_pos(log, "nvmlShutdown -> 0");
    cr_assert(init >= 0 && handle > init && reset > handle && shut > reset, "%s", log);
}

/* A runner that locked and was then killed cannot reset; the supervisor's
 * reset after it puts the clocks back (test_worker checks when it is made). */
Test(nvml, reset_after_killed_locker)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        cr_nvml_t *n = NULL;
        unsigned locked;
        if (cr_nvml_open(FAKE, BUS, &n, NULL, 0) != 0 || cr_nvml_lock(n, 0, &locked) != 0)
            _exit(3);
        raise(SIGKILL);
        _exit(4);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    cr_assert_eq(cr_nvml_reset_clocks_at(FAKE, 0, NULL, 0), 0);
    const char *log = s_calls();
    long lock = s_pos(log, "nvmlDeviceSetGpuLockedClocks 1755 1755 -> 0");
    long reset = s_pos(log, "nvmlDeviceResetGpuLockedClocks -> 0");
    cr_assert(lock >= 0 && reset > lock, "%s", log);
}

Test(nvml, errors_are_returned_not_fatal)
{
    cr_nvml_t *n = (cr_nvml_t *)0x1;
    char err[256];
    cr_assert_eq(cr_nvml_open("/nonexistent/libnvidia-ml.so.1", BUS, &n, err, sizeof err),
                 -ENOENT);
    cr_assert_null(n);
    cr_assert(err[0] != '\0');
    cr_assert_eq(cr_nvml_open(FAKE, "ffff:00:00.0", &n, err, sizeof err), -ENODEV);
    cr_assert(strstr(err, "ffff:00:00.0") != NULL, "%s", err);
    cr_assert_lt(cr_nvml_open(FAKE, "not-a-bus-id", &n, err, sizeof err), 0);
    cr_assert_eq(cr_nvml_open(FAKE, "", &n, err, sizeof err), -EINVAL);
    setenv("CR_FAKE_NVML_FAIL", "nvmlInit_v2", 1);
    cr_assert_eq(cr_nvml_open(FAKE, BUS, &n, err, sizeof err), -EPERM);
    cr_assert_null(n);
    /* A library that is not NVML at all. */
    cr_assert_eq(cr_nvml_open("libc.so.6", BUS, &n, err, sizeof err), -ENOENT);
    /* The worker's reset where there is no NVML: an error code, nothing else. */
    cr_assert_eq(cr_nvml_reset_clocks_at("/nonexistent/libnvidia-ml.so.1", 0, err, sizeof err),
                 -ENOENT);
    cr_assert(err[0] != '\0');
    /* Every failed open shut NVML down again (no leaked init). */
    const char *log = s_calls();
    cr_assert(s_pos(log, "nvmlShutdown -> 0") >= 0, "%s", log);
}

Test(nvml, throttle_reasons_and_mask)
{
    setenv("CR_FAKE_NVML_REASONS", "0x5", 1); /* idle + power cap */
    cr_nvml_t *n = NULL;
    cr_assert_eq(cr_nvml_open(FAKE, BUS, &n, NULL, 0), 0);
    uint64_t r = 0;
    cr_assert_eq(cr_nvml_throttle_reasons(n, &r), 0);
    cr_assert_eq(r, 5);
    cr_assert((r & CR_NVML_THROTTLE_MASK) == CR_NVML_REASON_SW_POWER_CAP);
    setenv("CR_FAKE_NVML_REASONS", "0x1", 1); /* idle alone does not spoil a sample */
    cr_assert_eq(cr_nvml_throttle_reasons(n, &r), 0);
    cr_assert_eq(r & CR_NVML_THROTTLE_MASK, 0);
    setenv("CR_FAKE_NVML_FAIL", "nvmlDeviceGetCurrentClocksEventReasons", 1);
    cr_assert_eq(cr_nvml_throttle_reasons(n, &r), -EPERM);
    cr_nvml_close(&n);
}

Test(nvml, count_for_gpus_all)
{
    unsigned n = 99;
    char err[256];
    cr_assert_eq(cr_nvml_count(FAKE, &n, err, sizeof err), 0, "%s", err);
    cr_assert_eq(n, 1);
    const char *log = s_calls();
    long init = s_pos(log, "nvmlInit_v2 -> 0");
    long count = s_pos(log, "nvmlDeviceGetCount_v2 -> 0");
    long shut = s_pos(log, "nvmlShutdown -> 0");
    cr_assert(init >= 0 && count > init && shut > count, "calls:\n%s", log);
    /* failures are codes and messages, with the count zeroed */
    setenv("CR_FAKE_NVML_FAIL", "nvmlDeviceGetCount_v2", 1);
    n = 99;
    cr_assert_eq(cr_nvml_count(FAKE, &n, err, sizeof err), -EPERM);
    cr_assert_eq(n, 0);
    cr_assert(strstr(err, "nvmlDeviceGetCount_v2") != NULL, "%s", err);
    cr_assert_eq(cr_nvml_count("/nonexistent/libnvidia-ml.so.1", &n, err, sizeof err), -ENOENT);
    cr_assert_eq(cr_nvml_count("libc.so.6", &n, NULL, 0), -ENOENT);
}

/* NVLink pairs as the driver reports them (CR_FAKE_NVML_NVLINK), for the
 * worker's GPU groups (docs/multigpu.md). */
Test(nvml, nvlink_matrix_reads_p2p_status)
{
    setenv("CR_FAKE_NVML_COUNT", "4", 1);
    setenv("CR_FAKE_NVML_NVLINK", "0-2,3-1", 1);
    unsigned idx[4] = {0, 1, 2, 3};
    unsigned char j[16];
    char err[256];
    cr_assert_eq(cr_nvml_nvlink_matrix(FAKE, idx, 4, j, err, sizeof err), 0, "%s", err);
    const unsigned char want[16] = {1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1};
    cr_assert_arr_eq(j, want, sizeof want);
    /* a subset, in another order */
    unsigned sub[2] = {3, 1};
    cr_assert_eq(cr_nvml_nvlink_matrix(FAKE, sub, 2, j, err, sizeof err), 0, "%s", err);
    cr_assert(j[1] == 1 && j[2] == 1);
    /* an index the driver does not know: an error, nothing joined */
    unsigned bad[2] = {0, 7};
    cr_assert_eq(cr_nvml_nvlink_matrix(FAKE, bad, 2, j, err, sizeof err), -ENODEV);
    cr_assert(strstr(err, "device index 7"), "%s", err);
    cr_assert(j[1] == 0 && j[2] == 0);
    /* a driver without the P2P call */
    setenv("CR_FAKE_NVML_FAIL", "nvmlDeviceGetP2PStatus", 1);
    cr_assert_eq(cr_nvml_nvlink_matrix(FAKE, idx, 2, j, err, sizeof err), 0);
    cr_assert(j[1] == 0, "a pair NVML refuses to describe is not NVLink");
    unsetenv("CR_FAKE_NVML_FAIL");
    /* no library at all */
    cr_assert_eq(cr_nvml_nvlink_matrix("/nonexistent/libnvidia-ml.so.1", idx, 2, j, err,
                                       sizeof err), -ENOENT);
    unsetenv("CR_FAKE_NVML_COUNT");
    unsetenv("CR_FAKE_NVML_NVLINK");
}
