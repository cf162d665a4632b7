/* call.c — one call of an entry point (see cuda_int.h): the verdicts for
 * CUDA errors met around it, the wait for its inputs, the command that has
 * the call's executor run it (executor.c) and the judge's idle probe after
 * it (§1-§3; docs/judge.md §5). */
#include "cuda_int.h"


#define S_EV_SLACK_FRAC 0.1 /* an event time may exceed the judge's wall time of its */
#define S_EV_SLACK_US 20.0  /* command by this much (clock granularity), never more */

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
    if (J->nranks > 1) /* every rank's GPU (docs/multigpu.md) */
        return cr__cuda_step(J, CR_CUDA_ST_SYNC, t0, cr__cuda_ranks_ready(J));
    cudaError_t e = cudaDeviceSynchronize();
    return cr__cuda_step(J, CR_CUDA_ST_SYNC, t0, cr__cuda_infra(J, e, "preparing inputs"));
}

/* After an executor stopped serving (cr_exec_fault): the verdict of the
 * one rule (cr_judge_exec_verdict), and the judging ends. Returns -1. */
int cr__cuda_exec_fail(cr__cuda_judge_t *J, int who)
{
    if (!J->verdict) {
        cr_judge_exec_verdict(J->rec, J->x[who], who == CR_CUDA_CAND);
        J->verdict = 1;
    }
    return -1;
}

/* The judge's idle probe (§4 of docs/judge.md's CUDA part): an event on the
 * judge's own context, waited for. The GPU runs one context at a time, so
 * it completes only once whatever an executor left running has finished
 * or given up its time slice. Returns its host microseconds, or -1 with a
 * verdict. */
double cr__cuda_probe(cr__cuda_judge_t *J, int who, int c)
{
    int64_t t0 = cr_time_mono_ns();
    cudaError_t e = cudaEventRecord(J->d.evx, cudaStreamLegacy);
    for (; e == cudaSuccess;) {
        e = cudaEventQuery(J->d.evx);
        if (e == cudaSuccess)
            return (double)(cr_time_mono_ns() - t0) / 1e3;
        if (e != cudaErrorNotReady)
            break;
        e = cudaSuccess;
        if (cr_time_mono_ns() >= J->deadline_ns) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_TIMEOUT,
                          "case %d: the %s's GPU work was still running after its executor "
                          "stopped (run timeout)", c, s_who[who]);
            J->dead = 1;
            return -1;
        }
    }
    cr__cuda_infra(J, e, "idle probe");
    return -1;
}

/* Writes the call of `who` with the buffers in B into its executor's
 * control block. Returns 0, or -1 with a verdict. */
int cr__cuda_call_args(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                       const cr__cuda_bufs_t *B)
{
    const cr_task_t *t = J->t;
    cr_exec_t *x = J->x[who];
    const int ar = cr__cuda_arena_of(who);
    if (!x || B->arena != ar || !J->d.ar[ar].base) {
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                      "case %d: cuda judge: the %s's buffers are not in its arena", L->c,
                      s_who[who]);
        return -1;
    }
    cr_exec_ctl_t *ctl = cr_exec_ctl(x);
    for (int p = 0; p < t->nparams; p++) {
        cr_exec_arg_t *a = &ctl->args[p];
        memset(a, 0, sizeof *a);
        if (cr__cuda_is_buf(&t->params[p])) {
            a->kind = CR_EXEC_ARG_DEV;
            a->off = (uint64_t)((char *)B->p[p] - J->d.ar[ar].base);
        } else if (t->params[p].role == CR_ROLE_COMM) {
            a->kind = CR_EXEC_ARG_COMM; /* its own; NULL in the reference's (docs/multigpu.md) */
        } else {
            a->kind = CR_EXEC_ARG_VALUE;
            memcpy(a->val, L->val[p], sizeof a->val);
        }
    }
    ctl->nargs = (uint32_t)t->nparams;
    ctl->cuda.tail = (uint32_t)J->tail_now;
    const int count = J->lc_on && who != CR_CUDA_BASE;
    ctl->cuda.count = (uint32_t)count;
    ctl->cuda.names_usable = J->lc_names == 1;
    ctl->cuda.allow_libs = t->nallow > 0;
    J->cand_ran |= who == CR_CUDA_CAND;
    return 0;
}

/* After the call's command: the executor's report of it. us is the
 * judge's time of the command, probe that of its idle probe. Returns 0 with
 * the times in *tm (may be NULL), or -1 with a verdict. */
int cr__cuda_call_result(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L, double us,
                         double probe, cr__cuda_time_t *tm)
{
    cr_exec_ctl_t *ctl = cr_exec_ctl(J->x[who]);
    const int count = J->lc_on && who != CR_CUDA_BASE; /* as cr__cuda_call_args asked: never
                                                          the executor's copy */
    /* What the executor wrote back: a failure is its verdict; anything else
     * is checked against the judge's own measure (timing.c). */
    cr_exec_cuda_t r = ctl->cuda;
    r.foreign[sizeof r.foreign - 1] = r.foreign_path[sizeof r.foreign_path - 1] = '\0';
    if (ctl->result != 0) {
        cr__cuda_hard(J, who == CR_CUDA_CAND ? CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR
                                             : CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                      "case %d: the %s's executor refused the call", L->c, s_who[who]);
        return -1;
    }
    if (r.cuda_error != 0) {
        static const char *const at[] = {"call", "launch failed", "device error after the call",
                                         "event timing"};
        return s_cuda_fail(J, who, (cudaError_t)r.cuda_error,
                           at[r.error_at < 4 ? r.error_at : 0], L->c);
    }
    if (count) {
        J->lc_ok[who] = (unsigned long)r.launches_ok;
        J->lc_failed[who] = (unsigned long)r.launches_failed;
        if (who == CR_CUDA_REF) {
            J->lc_ref_named = r.names_seen;
            J->lc_ref_found = r.names_found;
        } else if (r.foreign[0] && !J->lc_suspect[0]) {
            snprintf(J->lc_suspect, sizeof J->lc_suspect, "%s", r.foreign);
            snprintf(J->lc_suspect_path, sizeof J->lc_suspect_path, "%s", r.foreign_path);
        }
    }
    if (tm) {
        double ev = r.ev_us, wall = us + probe;
        /* Both events are recorded inside the command the judge timed. */
        if (!isfinite(ev) || ev < 0 || ev > wall * (1 + S_EV_SLACK_FRAC) + S_EV_SLACK_US) {
            if (who == CR_CUDA_CAND) {
                cr_judge_flag(J->rec, "timing_mismatch");
                cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                              "case %d: the candidate's executor reported an event time of %g "
                              "us for a call the judge measured at %.1f us (docs/judge.md §5)",
                              L->c, ev, wall);
            }
            ev = isfinite(ev) ? fmin(fmax(ev, 0), wall) : wall;
        }
        tm->ev_us = ev;
        tm->wall_us = wall;
    }
    return 0;
}

/* Runs one call of `who` with the buffers in B in its executor and waits
 * until it is stopped and the GPU idle; with ranks (docs/multigpu.md), every
 * rank's executor at once (ranks.c). Returns 0 with the times in *tm, or -1
 * with a verdict. */
static int s_do_call(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                     const cr__cuda_bufs_t *B, cr__cuda_time_t *tm)
{
    if (J->nranks > 1 && who != CR_CUDA_REF)
        return cr__cuda_ranks_call(J, who, L, B, tm);
    if (cr__cuda_call_args(J, who, L, B) != 0)
        return -1;
    double us = 0;
    if (cr_exec_command(J->x[who], CR_EXEC_OP_CALL, &us) != 0)
        return cr__cuda_exec_fail(J, who);
    double probe = cr__cuda_probe(J, who, L->c);
    if (probe < 0)
        return -1;
    return cr__cuda_call_result(J, who, L, us, probe, tm);
}

int cr__cuda_call(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                  const cr__cuda_bufs_t *B, cr__cuda_time_t *tm)
{
    int64_t t0 = cr_time_mono_ns();
    return cr__cuda_step(J, who == CR_CUDA_CAND ? CR_CUDA_ST_CAND : CR_CUDA_ST_REF, t0,
                         s_do_call(J, who, L, B, tm));
}

/* Launch checks (§8) on: both executors subscribed and saw their objects. */
void cr__cuda_lc_on(cr__cuda_judge_t *J)
{
    J->lc_on = J->x[CR_CUDA_CAND] && J->x[CR_CUDA_REF] &&
               cr_exec_ctl(J->x[CR_CUDA_CAND])->cuda.lc_on &&
               cr_exec_ctl(J->x[CR_CUDA_REF])->cuda.lc_on;
    if (!J->lc_on)
        cr_warn("launch checks off: an executor has no CUPTI subscription");
    else
        cr_info("launch checks on (in the executors)");
}

/* ... and off, in every executor: no callback in a timed window. */
void cr__cuda_lc_off(cr__cuda_judge_t *J)
{
    for (int i = 0; i < 3; i++)
        if (J->x[i] && (i == 0 || J->x[i] != J->x[i - 1]) &&
            cr_exec_ctl(J->x[i])->cuda.lc_on &&
            cr_exec_command(J->x[i], CR_EXEC_OP_LC_STOP, NULL) != 0) {
            cr__cuda_exec_fail(J, i);
            break;
        }
    J->lc_on = 0;
}
