/* clocks.c — the CUDA judge's use of NVML (see cuda_int.h): SM clock and
 * throttle reads, the lock policies and their reset on every exit path,
 * and the signal handling that goes with a lock. */
#include "cuda_int.h"

/* Signal and exit handling while clocks are locked: the handler only sets a
 * flag the poll loop reads; exit() inside candidate code still resets. */
volatile sig_atomic_t cr__cuda_signalled;
static cr_nvml_t *volatile s_locked; /* NVML handle while clocks are locked */
static int s_atexit_done;            /* s_atexit_reset registered */

static void s_on_signal(int sig)
{
    cr__cuda_signalled = sig;
}

static void s_atexit_reset(void)
{
    cr_nvml_t *n = s_locked;
    if (n) {
        s_locked = NULL;
        cr_nvml_reset(n);
    }
}

void cr__cuda_unlock(cr__cuda_judge_t *J)
{
    if (!J->locked_mhz)
        return;
    s_locked = NULL;
    int rc = cr_nvml_reset(J->d.nvml);
    if (rc != 0)
        cr_error("could not reset locked clocks on %s: %s (the worker resets them too)", J->d.bus,
                 cr_nvml_last_error(J->d.nvml));
    else
        cr_info("clocks of %s reset after lock at %u MHz", J->d.bus, J->locked_mhz);
    J->locked_mhz = 0;
}

/* Reads the SM clock and throttle reasons; 0s when NVML is absent. */
void cr__cuda_clock_read(cr__cuda_judge_t *J, unsigned *mhz, uint64_t *reasons)
{
    *mhz = 0;
    *reasons = 0;
    if (!J->d.nvml)
        return;
    if (cr_nvml_sm_clock(J->d.nvml, mhz) != 0)
        *mhz = 0;
    if (cr_nvml_throttle_reasons(J->d.nvml, reasons) != 0)
        *reasons = 0;
}

int cr__cuda_lock(cr__cuda_judge_t *J)
{
    if (!J->policy.lock)
        return 0;
    if (!s_atexit_done) {
        atexit(s_atexit_reset);
        s_atexit_done = 1;
    }
    /* Only while locked: otherwise SIGTERM keeps its default (the runner
     * dies, as the supervisor means), and a flag nobody polls helps nobody. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &J->old_term);
    sigaction(SIGINT, &sa, &J->old_int);
    J->handlers = 1;
    int rc = cr_nvml_lock(J->d.nvml, J->policy.mhz, &J->locked_mhz);
    if (rc != 0) {
        J->locked_mhz = 0;
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "clock lock on %s failed: %s",
                      J->d.bus, cr_nvml_last_error(J->d.nvml));
        return -1;
    }
    s_locked = J->d.nvml;
    cr_info("clocks of %s locked at %u MHz", J->d.bus, J->locked_mhz);
    return 0;
}
