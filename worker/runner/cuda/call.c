/* call.c — one call of an entry point (see cuda_int.h): the verdicts for
 * CUDA errors met around it, the wait for its inputs, the call itself and
 * the bounded wait for all of its work (§1-§3). */
#include "cuda_int.h"

#define S_SPIN_NS 2000000LL        /* 2 ms of busy polling before sleeping (§2) */
#define S_NAP_MIN_NS 20000LL       /* first nap 20 us, doubling ... */
#define S_NAP_MAX_NS 1000000LL     /* ... up to 1 ms: a hung kernel costs no CPU */

static const char *const s_who[] = {"candidate", "reference", "baseline"};

/* A verdict outside the OK < INCORRECT < HACK_DETECTED order (CUDA_FAULT,
 * OOM, TIMEOUT, INFRA_ERROR, INVALID_TASK): it replaces whatever was there
 * and ends the judging. The first one wins. */
void cr__cuda_hard(cr__cuda_judge_t *J, int status, const char *fmt, ...)
{
    if (J->verdict)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    J->verdict = 1;
    J->rec->status = (Crucible__Status)status;
    cr_judge_set_str(&J->rec->message, msg);
    cr_info("%s", msg);
}

/* Verdict for a CUDA error met around a call of `who`; returns -1. Errors
 * the context survives (a bad launch configuration) still end the run:
 * the verdict is reached. */
static int s_cuda_fail(cr__cuda_judge_t *J, int who, cudaError_t e, const char *what, int c)
{
    /* Errors the context survives leave it usable for cleanup; others poison it. */
    int sticky = !(e == cudaErrorMemoryAllocation || e == cudaErrorInvalidConfiguration ||
                   e == cudaErrorInvalidValue || e == cudaErrorLaunchOutOfResources ||
                   e == cudaErrorInvalidDeviceFunction || e == cudaErrorNoKernelImageForDevice);
    int status;
    if (e == cudaErrorMemoryAllocation)
        status = CRUCIBLE__STATUS__STATUS_OOM;
    else if (e == cudaErrorLaunchTimeout)
        status = CRUCIBLE__STATUS__STATUS_TIMEOUT;
    else if (who == CR_CUDA_CAND || (sticky && J->cand_ran))
        /* A context broken while the reference runs after the candidate may
         * be the candidate's doing (a thread it left behind): never a free pass. */
        status = CRUCIBLE__STATUS__STATUS_CUDA_FAULT;
    else
        status = CRUCIBLE__STATUS__STATUS_INVALID_TASK; /* the task's own code failed */
    cr__cuda_hard(J, status, "case %d: %s: %s: %s (%s)", c, s_who[who], what, cudaGetErrorName(e),
                  cudaGetErrorString(e));
    J->dead = sticky;
    return -1;
}

/* For the judge's own CUDA calls outside a candidate's call. */
int cr__cuda_infra(cr__cuda_judge_t *J, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    if (e == cudaErrorMemoryAllocation) {
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_OOM, "out of device memory: %s", what);
        return -1;
    }
    /* Once the candidate has run, a sticky error in the judge's own calls
     * came from its work (e.g. a kernel it left running that faulted). */
    cr__cuda_hard(
        J, J->cand_ran ? CRUCIBLE__STATUS__STATUS_CUDA_FAULT : CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
        "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
    J->dead = 1;
    return -1;
}

/* ---------------------------------------------------------------- calls */

/* Waits (untimed) until the judge's queued work is done, so a candidate
 * that computes on a stream of its own never races the input generator:
 * inputs are complete when solve() is called, as in any framework. */
int cr__cuda_ready(cr__cuda_judge_t *J)
{
    int64_t t0 = cr_time_mono_ns();
    cudaError_t e = cudaDeviceSynchronize();
    return cr__cuda_step(J, CR_CUDA_ST_SYNC, t0, cr__cuda_infra(J, e, "preparing inputs"));
}

/* Polls ev against the deadline and the signal flag (§2). Returns 0,
 * or -1 with a verdict. */
static int s_wait(cr__cuda_judge_t *J, cudaEvent_t ev, int who, int c)
{
    int64_t start = cr_time_mono_ns(), nap = S_NAP_MIN_NS;
    for (;;) {
        cudaError_t q = cudaEventQuery(ev);
        if (q == cudaSuccess)
            return 0;
        if (q != cudaErrorNotReady)
            return s_cuda_fail(J, who, q, "kernel failed", c);
        int64_t now = cr_time_mono_ns();
        if (cr__cuda_signalled) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                          "case %d: runner interrupted by signal %d while the %s ran", c,
                          (int)cr__cuda_signalled, s_who[who]);
            J->dead = 1;
            return -1;
        }
        if (now >= J->deadline_ns) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_TIMEOUT,
                          "case %d: the %s's GPU work was still running after %.1f s (run timeout)",
                          c, s_who[who], (double)(now - start) / 1e9);
            J->dead = 1;
            return -1;
        }
        if (now - start > S_SPIN_NS) {
            struct timespec ts = {0, (long)nap};
            nanosleep(&ts, NULL);
            nap = nap * 2 > S_NAP_MAX_NS ? S_NAP_MAX_NS : nap * 2;
        }
    }
}

/* Calls fn(args) for `who` with the buffers in B and waits for all of its
 * work, device-wide. Returns 0 with the times in *tm, or -1 with a verdict. */
static int s_do_call(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                     const cr__cuda_bufs_t *B, cr__cuda_time_t *tm)
{
    const cr_task_t *t = J->t;
    void *ptr[CR_CUDA_NP], *args[CR_CUDA_NP];
    for (int p = 0; p < t->nparams; p++) {
        if (cr__cuda_is_buf(&t->params[p])) {
            ptr[p] = B->p[p];
            args[p] = &ptr[p];
        } else {
            args[p] = (void *)L->val[p];
        }
    }
    if (J->last_error[who])
        J->last_error[who](); /* clears an error from an earlier call */
    J->cand_ran |= who == CR_CUDA_CAND;
    cudaGetLastError();
    cr__cuda_lc_begin(J, who); /* verification only: off while timing (§8) */
    int64_t t0 = cr_time_mono_ns();
    cudaEventRecord(J->d.ev0, cudaStreamLegacy);
    J->fn[who](args);
    cudaError_t rec = cudaEventRecord(J->d.ev1, cudaStreamLegacy);
    cr__cuda_lc_end(J, who);
    cr__cuda_launch_tail(J->tail_now); /* §12; an error here shows at the wait */
    cudaError_t launch = J->last_error[who] ? (cudaError_t)J->last_error[who]() : cudaSuccess;
    if (launch != cudaSuccess)
        return s_cuda_fail(J, who, launch, "launch failed", L->c);
    if (rec != cudaSuccess)
        return s_cuda_fail(J, who, rec, "device error after the call", L->c);
    if (s_wait(J, J->d.ev1, who, L->c) != 0)
        return -1;
    cudaError_t e = cudaDeviceSynchronize(); /* work on non-blocking streams (§2) */
    int64_t t1 = cr_time_mono_ns();
    if (e != cudaSuccess)
        return s_cuda_fail(J, who, e, "device error after the call", L->c);
    float ms = 0;
    e = cudaEventElapsedTime(&ms, J->d.ev0, J->d.ev1);
    if (e != cudaSuccess)
        return s_cuda_fail(J, who, e, "event timing", L->c);
    if (tm) {
        tm->ev_us = (double)ms * 1e3;
        tm->wall_us = (double)(t1 - t0) / 1e3;
    }
    return 0;
}

int cr__cuda_call(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                  const cr__cuda_bufs_t *B, cr__cuda_time_t *tm)
{
    int64_t t0 = cr_time_mono_ns();
    return cr__cuda_step(J, who == CR_CUDA_CAND ? CR_CUDA_ST_CAND : CR_CUDA_ST_REF, t0,
                         s_do_call(J, who, L, B, tm));
}
