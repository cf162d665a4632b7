/* ranks.c — tasks with "gpus": N (docs/multigpu.md; see cuda_int.h).
 *
 * The judge of such a task is the one-GPU judge, with a rank loop in its
 * primitives. Rank 0 is the judge itself (J, on device 0); each further rank
 * r has a judge of its own, J->rk[r], holding device r's state (context,
 * scratch, flush buffer, arenas: cr__cuda_setup_device with d.dev = r) and
 * that rank's candidate and baseline executors, and sharing J's request,
 * task, record and secrets. A candidate's or baseline's buffers are every
 * rank's (cr__cuda_bufs_t.ranks); the reference computes the whole on
 * device 0 (cr__cuda_layout_whole). So verify.c's order, timing.c's samples,
 * stopping rule, statistics and checks, and call.c's reading of an
 * executor's report are written once, and run unchanged on one GPU.
 *
 * Process picture, per job:
 *
 *   judge (crucible-runner): its context on every rank's GPU, one
 *     ncclUniqueId per role (candidate, baseline) made here
 *   reference executor: device 0, no communicator, the whole
 *   baseline executor of rank r (device r) ┐ each ncclCommInitRank(world,
 *   candidate executor of rank r (device r) ┘ id, r) before its sandbox
 *
 * A call of the candidate (cr__cuda_ranks_call) is the barrier: every rank's
 * executor is released back to back (cr_exec_command_all), after the inputs
 * of every rank were drawn and every GPU's L2 flushed and waited for
 * (cr__cuda_ranks_flush, cr__cuda_ranks_ready); its times are the slowest
 * rank's: the largest event time, and that plus the largest gap between a
 * rank's wall and event times as the wall time. A rank that
 * dies, hangs or reports a CUDA error ends the call for all (their peers
 * would wait in a collective until the deadline) with that rank's verdict,
 * the message naming it.
 *
 * Invariants:
 *   1. Every CUDA call of the judge on rank r's objects is made with device r
 *      current (cr__cuda_on), and device 0 is current again after every
 *      rank loop.
 *   2. A rank's inputs come from its own secret streams (cr__cuda_fill); the
 *      reference's whole draws each part from its rank's, so the reference
 *      sees exactly the ranks' inputs and no candidate sees another rank's.
 *   3. A verdict reached on a rank's judge is on the shared record and is
 *      raised to J (cr__cuda_rank_fail), its message naming the rank. */
#include "cuda_int.h"

#ifdef CR_WITH_NCCL
#include <nccl.h>
_Static_assert(sizeof(ncclUniqueId) <= sizeof(((cr_exec_cuda_t *)0)->nccl_id),
               "an NCCL id fits the control block");
#endif

#define S_LINK_BYTES (256ull << 20) /* interconnect probe: as the copy probe (timing.c) */
#define S_SET_PLACEMENT 0xfffffffdu /* judge.c's placement stream, one per rank's judge */

static const char *const s_role[] = {"candidate", "reference", "baseline"};

void cr__cuda_on(const cr__cuda_judge_t *R)
{
    if (R->rank > 0 || R->nranks > 1)
        cudaSetDevice(R->d.dev);
}

/* Prefixes the record's message with "rank r of n: ", once. */
static void s_name_rank(cr__cuda_judge_t *J, int r)
{
    char msg[1200];
    const char *m = J->rec->message ? J->rec->message : "";
    char head[32];
    snprintf(head, sizeof head, "rank %d of %d: ", r, J->nranks);
    if (!strncmp(m, head, strlen(head)))
        return;
    snprintf(msg, sizeof msg, "%s%s", head, m);
    cr_judge_set_str(&J->rec->message, msg);
}

int cr__cuda_rank_fail(cr__cuda_judge_t *J, int r)
{
    cr__cuda_judge_t *R = cr__cuda_rank(J, r);
    if (R != J) {
        if (R->verdict && !J->verdict) {
            J->verdict = 1;
            s_name_rank(J, r);
        }
        J->dead |= R->dead;
        J->cand_ran |= R->cand_ran;
    }
    return -1;
}

int cr__cuda_ranks_setup(cr__cuda_judge_t *J)
{
    const cr_task_t *t = J->t;
    J->nranks = cr_task_ranks(t);
    J->rank = 0;
#ifndef CR_WITH_NCCL
    if (t->gpus > 0) {
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                      "this runner was built without NCCL: tasks with \"gpus\" need a build "
                      "against the toolkit's NCCL (docs/multigpu.md)");
        return -1;
    }
#endif
    if (J->nranks < 2)
        return 0;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess)
        count = 0;
    cudaGetLastError();
    if (count < J->nranks) {
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                      "the task needs %d GPUs of one node; this runner sees %d (a worker owns "
                      "several with --gpu-group or --gpus-per-worker: docs/multigpu.md)",
                      J->nranks, count);
        return -1;
    }
    for (int r = 1; r < J->nranks; r++) {
        cr__cuda_judge_t *R = (cr__cuda_judge_t *)malloc(sizeof *R);
        if (!R) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cuda judge: out of host memory");
            return -1;
        }
        *R = *J; /* the request, task, record, secrets, deadline, options */
        memset(&R->d, 0, sizeof R->d);
        memset(R->x, 0, sizeof R->x);
        memset(R->rk, 0, sizeof R->rk);
        memset(R->step_ns, 0, sizeof R->step_ns);
        R->dump = NULL;
        R->handlers = 0;
        R->verdict = R->dead = R->setup_failed = R->ref_loaded = R->lc_on = 0;
        R->rank = r;
        R->nranks = 1; /* its own primitives loop over nothing */
        R->d.dev = r;
        cr_rng_seed(&R->place, J->seed, (uint32_t)r, S_SET_PLACEMENT, 0);
        J->rk[r] = R;
        const char *what = NULL;
        cudaError_t e = cr__cuda_setup_device(&R->d, &what);
        if (e != cudaSuccess) {
            R->setup_failed = 1;
            cr__cuda_infra(R, e, what);
            cr__cuda_rank_fail(J, r);
            cudaSetDevice(0);
            return -1;
        }
        /* the interconnect probe and the reference's parts copied to rank r
         * go peer to peer where the GPUs allow it (else through the host:
         * slower, never wrong) */
        cudaDeviceEnablePeerAccess(0, 0);
        cudaSetDevice(0);
        cudaDeviceEnablePeerAccess(r, 0);
        cudaGetLastError();
        cr_info("rank %d: %s (bus %s) ready in %.3f s", r, R->d.name, R->d.bus,
                R->d.setup_s[0] + R->d.setup_s[1] + R->d.setup_s[2]);
    }
    cudaSetDevice(0);
    return 0;
}

void cr__cuda_ranks_release(cr__cuda_judge_t *J)
{
    for (int r = 1; r < CR_TASK_MAX_GPUS; r++) {
        cr__cuda_judge_t *R = J->rk[r];
        if (!R)
            continue;
        for (int who = 0; who < 3; who++) /* ended already, unless setup failed half-way */
            if (R->x[who] && (who == 0 || R->x[who] != R->x[who - 1]))
                cr_exec_destroy(&R->x[who]);
        cudaSetDevice(R->d.dev);
        cr__cuda_release_device(&R->d, J->dead || R->dead);
        free(R);
        J->rk[r] = NULL;
    }
    cudaSetDevice(0);
}

/* ---------------------------------------------------------------- executors */

#ifdef CR_WITH_NCCL
/* Starts rank r's executor of `who` (CR_CUDA_CAND or CR_CUDA_BASE) on its
 * GPU with the role's NCCL id: it makes its communicator before its
 * sandbox. 0, or -1 with the reason in err. */
static int s_start(cr__cuda_judge_t *J, int r, int who, const unsigned char *id, size_t idlen,
                   cr_exec_t **x, char *err, size_t errlen)
{
    const cr__cuda_dev_t *D = &cr__cuda_rank(J, r)->d;
    const int ar = cr__cuda_arena_of(who);
    char prog[PATH_MAX];
    cr_exec_program("crucible-executor-cuda", prog, sizeof prog);
    cr_exec_cuda_t cx;
    memset(&cx, 0, sizeof cx);
    memcpy(cx.arena_handle, &D->ar_handle[ar], sizeof D->ar_handle[ar]);
    cx.arena_bytes = D->ar[ar].bytes;
    cx.device = (uint32_t)D->dev;
    cx.world = (uint32_t)J->nranks;
    cx.rank = (uint32_t)r;
    memcpy(cx.nccl_id, id, idlen < sizeof cx.nccl_id ? idlen : sizeof cx.nccl_id);
    cr_exec_opts_t o;
    memset(&o, 0, sizeof o);
    o.program = prog;
    o.role = s_role[who];
    o.scratch_dir = J->req->scratch_dir;
    o.uid = J->req->sandbox_uid;
    o.threads = 1; /* the runtime's and NCCL's threads: timed by the wall clock */
    o.cpu = -1;
    o.cuda = &cx;
    return cr_exec_start(&o, x, err, errlen) == 0 ? 0 : -1;
}
#endif

/* The executors of every rank for the candidate and the baseline, started
 * together (each role's ranks must all be in ncclCommInitRank at once),
 * then waited for, then loaded: the baseline's ranks before the
 * candidate's, as the one-GPU judge loads the reference first. Rank 0's are
 * J->x[CR_CUDA_CAND] and J->x[CR_CUDA_BASE]. Returns 0, or -1 with the
 * verdict. */
int cr__cuda_ranks_executors(cr__cuda_judge_t *J)
{
    const char *obj[3] = {J->req->candidate_so, NULL, J->req->baseline_so};
    static const int roles[2] = {CR_CUDA_BASE, CR_CUDA_CAND};
    char err[800] = "";
    int64_t t0 = cr_time_mono_ns();
#ifdef CR_WITH_NCCL
    ncclUniqueId id[2];
    for (int i = 0; i < 2; i++) {
        ncclResult_t nr = ncclGetUniqueId(&id[i]);
        if (nr != ncclSuccess) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "NCCL: ncclGetUniqueId: %s",
                          ncclGetErrorString(nr));
            return -1;
        }
    }
#else
    cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                  "this runner was built without NCCL (docs/multigpu.md)");
    return -1;
#endif
    for (int i = 0; i < 2; i++) {
        int who = roles[i];
        if (!obj[who] || !obj[who][0]) {
            cr__cuda_hard(J, who == CR_CUDA_CAND ? CRUCIBLE__STATUS__STATUS_INFRA_ERROR
                                                 : CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                          "a task with \"gpus\" needs its %s object", s_role[who]);
            return -1;
        }
        for (int r = 0; r < J->nranks; r++) {
            cr__cuda_judge_t *R = cr__cuda_rank(J, r);
#ifdef CR_WITH_NCCL
            int rc = s_start(J, r, who, (const unsigned char *)&id[i], sizeof id[i], &R->x[who],
                             err, sizeof err);
#else
            int rc = -1;
#endif
            if (rc != 0) {
                cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                              "rank %d of %d: %s executor: %s", r, J->nranks, s_role[who], err);
                return -1;
            }
            cr_exec_set_deadline(R->x[who], J->deadline_ns);
        }
    }
    for (int i = 0; i < 2; i++)
        for (int r = 0; r < J->nranks; r++) {
            cr__cuda_judge_t *R = cr__cuda_rank(J, r);
            int who = roles[i];
            if (cr_exec_ready(R->x[who], err, sizeof err) != 0) {
                /* a rank that cannot make its communicator: the judge's problem,
                 * not its code's (no client code has run) */
                cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                              "rank %d of %d: %s executor (CUDA context, arena, NCCL "
                              "communicator): %s", r, J->nranks, s_role[who], err);
                return -1;
            }
        }
    for (int i = 0; i < 2; i++)
        for (int r = 0; r < J->nranks; r++) {
            cr__cuda_judge_t *R = cr__cuda_rank(J, r);
            int who = roles[i];
            if (cr_exec_set_object(R->x[who], obj[who], err, sizeof err) != 0) {
                cr__cuda_hard(J, who == CR_CUDA_CAND ? CRUCIBLE__STATUS__STATUS_INFRA_ERROR
                                                     : CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                              "rank %d of %d: %s: %s", r, J->nranks, s_role[who], err);
                return -1;
            }
            if (cr_exec_load(R->x[who], NULL, NULL, 0) != 0) {
                cr_judge_exec_verdict(J->rec, R->x[who], who == CR_CUDA_CAND);
                J->verdict = 1;
                s_name_rank(J, r);
                return -1;
            }
            /* only rank 0's candidate counts its launches (§8): the others'
             * subscriptions end now, before any call, never inside a timed one */
            if (r > 0 && cr_exec_ctl(R->x[who])->cuda.lc_on &&
                cr_exec_command(R->x[who], CR_EXEC_OP_LC_STOP, NULL) != 0) {
                cr_judge_exec_verdict(J->rec, R->x[who], who == CR_CUDA_CAND);
                J->verdict = 1;
                s_name_rank(J, r);
                return -1;
            }
        }
    cr_info("%d ranks' candidate and baseline executors ready with their communicators in "
            "%.3f s", J->nranks, (double)(cr_time_mono_ns() - t0) / 1e9);
    return 0;
}

void cr__cuda_ranks_executors_end(cr__cuda_judge_t *J, void (*end)(cr_exec_t **))
{
    for (int r = 1; r < J->nranks; r++) {
        cr__cuda_judge_t *R = J->rk[r];
        if (!R)
            continue;
        if (R->x[CR_CUDA_BASE] != R->x[CR_CUDA_REF])
            end(&R->x[CR_CUDA_BASE]);
        end(&R->x[CR_CUDA_CAND]);
        R->x[CR_CUDA_BASE] = R->x[CR_CUDA_REF] = NULL;
    }
}

/* ---------------------------------------------------------------- calls */

int cr__cuda_ranks_call(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                        const cr__cuda_bufs_t *B, cr__cuda_time_t *tm)
{
    const int n = J->nranks;
    cr_exec_t *xs[CR_TASK_MAX_GPUS] = {0};
    cr__cuda_layout_t Lr[CR_TASK_MAX_GPUS];
    double us[CR_TASK_MAX_GPUS];
    for (int r = 0; r < n; r++) {
        cr__cuda_judge_t *R = cr__cuda_rank(J, r);
        const cr__cuda_bufs_t *Br = cr__cuda_rank_bufs((cr__cuda_bufs_t *)B, r);
        if (!Br) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                          "case %d: cuda judge: rank %d has no buffers", L->c, r);
            return -1;
        }
        cr__cuda_layout_rank(J, L, r, &Lr[r]);
        R->tail_now = J->tail_now;
        if (cr__cuda_call_args(R, who, &Lr[r], Br) != 0)
            return cr__cuda_rank_fail(J, r);
        xs[r] = R->x[who];
    }
    J->cand_ran |= who == CR_CUDA_CAND;
    int failed = -1;
    int rc = cr_exec_command_all(xs, n, CR_EXEC_OP_CALL, us, &failed);
    if (rc != 0 && failed >= 0) {
        cr__cuda_judge_t *R = cr__cuda_rank(J, failed);
        if (cr_exec_fault(xs[failed])->kind == CR_EXEC_OK) {
            /* it returned, and its report says it failed: that verdict */
            cr__cuda_call_result(R, who, &Lr[failed], 0, 0, NULL);
            if (!R->verdict)
                cr__cuda_hard(R, who == CR_CUDA_CAND ? CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR
                                                     : CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                              "case %d: the %s's call failed", L->c, s_role[who]);
            cr__cuda_rank_fail(J, failed);
        } else {
            cr__cuda_exec_fail(R, who);
            cr__cuda_rank_fail(J, failed);
        }
        s_name_rank(J, failed);
        return -1;
    }
    if (rc != 0)
        return cr__cuda_exec_fail(J, who);
    /* The slowest rank's event time, and as wall time that plus the largest
     * gap (wall - event) any rank showed: a rank whose work escaped its own
     * events (a side stream it left running, a collective issued there)
     * shows its gap here even when another rank's events are the slowest,
     * and the side-stream check of timing.c compares it with the baseline's. */
    cr__cuda_time_t worst = {0, 0};
    double gap = 0;
    for (int r = 0; r < n; r++) {
        cr__cuda_judge_t *R = cr__cuda_rank(J, r);
        cr__cuda_on(R);
        double probe = cr__cuda_probe(R, who, L->c);
        cr__cuda_time_t t1;
        int bad = probe < 0 || cr__cuda_call_result(R, who, &Lr[r], us[r], probe, &t1) != 0;
        cr__cuda_on(J);
        if (bad)
            return cr__cuda_rank_fail(J, r);
        /* the slowest rank's: the barrier to the last completion */
        worst.ev_us = fmax(worst.ev_us, t1.ev_us);
        worst.wall_us = fmax(worst.wall_us, t1.wall_us);
        gap = fmax(gap, t1.wall_us - t1.ev_us);
    }
    worst.wall_us = fmax(worst.wall_us, worst.ev_us + gap);
    if (tm)
        *tm = worst;
    return 0;
}

int cr__cuda_ranks_flush(cr__cuda_judge_t *J)
{
    for (int r = 1; r < J->nranks; r++) {
        cr__cuda_judge_t *R = J->rk[r];
        cr__cuda_on(R);
        cudaError_t e = cudaMemsetAsync(R->d.flush, 0, R->d.flush_bytes, cudaStreamLegacy);
        if (e != cudaSuccess) {
            cr__cuda_infra(R, e, "L2 flush");
            cr__cuda_on(J);
            return cr__cuda_rank_fail(J, r);
        }
    }
    cr__cuda_on(J);
    return 0;
}

int cr__cuda_ranks_ready(cr__cuda_judge_t *J)
{
    for (int r = 0; r < J->nranks; r++) {
        cr__cuda_judge_t *R = cr__cuda_rank(J, r);
        cr__cuda_on(R);
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            cr__cuda_infra(R, e, "preparing inputs");
            cr__cuda_on(J);
            return cr__cuda_rank_fail(J, r);
        }
    }
    cr__cuda_on(J);
    return 0;
}

/* Merges rank r's findings kr into k: the counts add up, the first message
 * (named by its rank) leads. */
static void s_merge(cr_judge_check_t *k, const cr_judge_check_t *kr, int r, int n)
{
    k->all_written &= kr->all_written;
    k->mismatches += kr->mismatches;
    k->max_abs = fmax(k->max_abs, kr->max_abs);
    k->max_rel = fmax(k->max_rel, kr->max_rel);
    if (k->first_bad < 0 && kr->first_bad >= 0)
        k->first_bad = kr->first_bad;
    if (!k->msg[0] && kr->msg[0])
        snprintf(k->msg, sizeof k->msg, "rank %d of %d: %.480s", r, n, kr->msg);
}

int cr__cuda_ranks_compare(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                           const cr__cuda_bufs_t *cand, const cr__cuda_bufs_t *exp,
                           cr_judge_check_t *k)
{
    const cr_task_t *t = J->t;
    k->all_written = 1;
    k->mismatches = 0;
    k->max_abs = k->max_rel = 0;
    k->first_bad = -1;
    k->msg[0] = '\0';
    for (int r = 0; r < J->nranks; r++) {
        cr__cuda_judge_t *R = cr__cuda_rank(J, r);
        const cr__cuda_bufs_t *Cr = cr__cuda_rank_bufs((cr__cuda_bufs_t *)cand, r);
        if (!Cr) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                          "case %d: cuda judge: rank %d's outputs were not kept", L->c, r);
            return -1;
        }
        /* rank r's part of the whole, on rank r's GPU */
        cr__cuda_bufs_t E;
        memset(&E, 0, sizeof E);
        E.arena = CR_CUDA_AR_JUDGE;
        cr__cuda_on(R);
        size_t top[CR_CUDA_AR_N]; /* the part's copy goes back after the comparison */
        for (int a = 0; a < CR_CUDA_AR_N; a++)
            top[a] = R->d.ar[a].top;
        cudaError_t e = cudaSuccess;
        for (int p = 0; p < t->nparams && e == cudaSuccess; p++) {
            if (!cr__cuda_is_out(&t->params[p]) || !exp->p[p])
                continue;
            const char *src = (const char *)exp->p[p] + (size_t)r * L->bytes[p];
            if (r == 0) {
                E.p[p] = (void *)src;
                continue;
            }
            e = cr__cuda_buf_get(R, CR_CUDA_AR_JUDGE, L->bytes[p] ? L->bytes[p] : 1, &E.base[p],
                                 &E.own[p]);
            if (e == cudaSuccess) {
                E.p[p] = E.base[p];
                e = cudaMemcpyPeer(E.p[p], R->d.dev, src, J->d.dev, L->bytes[p]);
            }
        }
        cr_judge_check_t kr;
        memset(&kr, 0, sizeof kr);
        int rc = e == cudaSuccess ? cr__cuda_compare_one(R, L, Cr, &E, &kr)
                                  : cr__cuda_infra(R, e, "the reference's part for a rank");
        if (r > 0) {
            cr__cuda_free(R, &E);
            for (int a = 0; a < CR_CUDA_AR_N; a++)
                R->d.ar[a].top = top[a];
        }
        cr__cuda_on(J);
        if (rc != 0)
            return cr__cuda_rank_fail(J, r);
        s_merge(k, &kr, r, J->nranks);
    }
    return 0;
}

/* ---------------------------------------------------------------- the interconnect */

void cr__cuda_ranks_link_bw(cr__cuda_judge_t *J)
{
    if (J->link_bw > 0 || J->nranks < 2)
        return;
    void *a = NULL, *b = NULL;
    float best = 0;
    cudaSetDevice(1);
    cudaError_t e = cudaMalloc(&b, S_LINK_BYTES);
    cudaSetDevice(0);
    if (e == cudaSuccess && cudaMalloc(&a, S_LINK_BYTES) == cudaSuccess) {
        for (int i = 0; i < 6; i++) {
            float ms = 0;
            cudaEventRecord(J->d.ev0, cudaStreamLegacy);
            cudaMemcpyPeerAsync(b, 1, a, 0, S_LINK_BYTES, cudaStreamLegacy);
            cudaEventRecord(J->d.ev1, cudaStreamLegacy);
            if (cudaEventSynchronize(J->d.ev1) != cudaSuccess ||
                cudaEventElapsedTime(&ms, J->d.ev0, J->d.ev1) != cudaSuccess)
                break;
            if (i > 0 && (best == 0 || ms < best)) /* the first copy warms up */
                best = ms;
        }
    }
    if (a)
        cudaFree(a);
    if (b) {
        cudaSetDevice(1);
        cudaFree(b);
        cudaSetDevice(0);
    }
    cudaGetLastError();
    /* one direction's bytes per second: what one rank sends another */
    J->link_bw = best > 0 ? (double)S_LINK_BYTES / (best * 1e-3) : 0;
    if (!cr__cuda_bw_plausible(J->link_bw, 0))
        J->link_bw = 0;
    cr_info("interconnect: GPU 0 to GPU 1 at %.0f GB/s%s", J->link_bw / 1e9,
            J->link_bw > 0 ? "" : " (not measured: no interconnect floor)");
}
