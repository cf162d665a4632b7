/* judge.c — the entry points of cuda_judge.h (see cuda_int.h): one judge's
 * run from request to record, the prestart, the bandwidth measurement. */
#include "cuda_int.h"

#include "kept.h"

/* Set indices (cr_rng_seed) of the secret streams that no input uses;
 * judge_const.h has the verification, timing and sampling ones. */
#define S_SET_HASHKEY 0xfffffffeu
#define S_SET_PLACEMENT 0xfffffffdu
#define S_SET_TAIL 0xfffffffcu /* the stream that picks the check samples (§12) */

#define S_RUN_TIMEOUT_S 60.0       /* JobOptions.run_timeout_s default (config.c) */
#define S_DEADLINE_FRAC 0.9        /* own deadline before the supervisor's kill ... */
#define S_DEADLINE_MARGIN_S 0.5    /* ... minus this, to write the report */
#define S_RESERVE_FRAC 0.15        /* of the run timeout, kept free for post-timing checks */
#define S_TAIL_LAUNCHES 32         /* empty kernels queued behind a timed call (§12) */

static const char *const s_step_name[CR_CUDA_ST_N] = {
    "alloc",           "free",    "input sync",   "candidate calls",
    "reference calls", "compare", "hash compare", "keep outputs"};

/* What cr_cuda_judge_prestart made (cr__cuda_setup_device) for the judge to come;
 * NULL when it made nothing or it failed. */
static cr__cuda_dev_t *s_pre;

/* cr_cuda_judge_leave_device: the process ends after its report, so the
 * judge leaves its device state to process exit (cr__cuda_release_device skipped). */
static int s_leave_device;

/* The reference executor started ahead of the next judge (the prestart's),
 * not loaded; NULL when none. */
static cr_exec_t *s_ref_ahead;

/* The candidate executors started ahead, oldest first: the prestart's, and
 * when serving the spares started in bursts (s_spare_start); none loaded. */
static cr_exec_t *s_spare[CR_KEPT_SPARES_MAX];
static int s_nspare;

/* cr_cuda_judge_serve: this process judges one request after another. */
static int s_serve;

/* Serving settings (docs/judge.md §6), read once by cr_cuda_judge_serve:
 * reference executors kept at most (CRUCIBLE_SERVE_KEPT_REFS) and spare
 * candidate executors started in one burst (CRUCIBLE_SERVE_SPARES); 1 and
 * 1 are session 14's design. */
static int s_set_kept = 1;
static int s_set_spares = 1;

/* Serving: the reference executors kept for later jobs (docs/judge.md §6),
 * each under the object it loaded and that file's identity then; at most
 * s_set_kept, the least recently used one ended first. (With four kept and
 * a spare reference executor started at each job's end, beside a spare
 * candidate executor started at each job's end, the H200's timings went
 * wrong in session 14; which of the three did it is not known. What this
 * keeps differs from that try in what s_kept_put and s_ref_resume say.) */
static cr_kept_t s_kept;

/* Serving: the judge's own context broke (§3): no more jobs here. */
static int s_broken;

static const char *const s_role[] = {"candidate", "reference", "baseline"};

/* Starts the executor of `who` on arena ar of D (docs/judge.md §5): its own
 * CUDA context, the arena by IPC handle, its sandbox; no object yet. With
 * wait, returns once it is ready (cr_exec_new); else at once (cr_exec_start:
 * cr_exec_ready before its first command). 0, or -1 with the reason in err. */
static int s_exec_start(const cr__cuda_dev_t *D, int who, int ar, const char *scratch,
                        uint32_t uid, int wait, cr_exec_t **x, char *err, size_t errlen)
{
    char prog[PATH_MAX];
    cr_exec_program("crucible-executor-cuda", prog, sizeof prog);
    cr_exec_cuda_t cx;
    memset(&cx, 0, sizeof cx);
    _Static_assert(sizeof cx.arena_handle >= sizeof D->ar_handle[0], "IPC handle size");
    memcpy(cx.arena_handle, &D->ar_handle[ar], sizeof D->ar_handle[ar]);
    cx.arena_bytes = D->ar[ar].bytes;
    cr_exec_opts_t o;
    memset(&o, 0, sizeof o);
    o.program = prog;
    o.role = s_role[who];
    o.object = NULL;
    o.scratch_dir = scratch;
    o.uid = uid;
    o.threads = 1; /* the runtime's threads: timed by the wall clock (exec.c note 3) */
    o.cpu = -1;
    o.cuda = &cx;
    return (wait ? cr_exec_new : cr_exec_start)(&o, x, err, errlen) == 0 ? 0 : -1;
}

/* Serving: the kept reference executor that holds the object at path (the
 * same path, and the same file: the worker's object cache names a build by
 * its inputs, and a file replaced there is another), taken out of s_kept,
 * its file's identity in *st; else NULL. One kept for path whose file
 * changed is ended (abandoned: its teardown overlaps this job's load and
 * verification, and s_quiet reaps it before any timing); the ones kept for
 * other objects stay for later jobs. */
static cr_exec_t *s_kept_take(const char *path, struct stat *st)
{
    struct stat now;
    int have = path && stat(path, &now) == 0;
    void *stale = NULL;
    cr_exec_t *x = cr_kept_take(&s_kept, path, have ? &now : NULL, st, &stale);
    if (stale) {
        cr_info("serve: %s changed; its reference executor starts afresh", path);
        cr_exec_t *old = stale;
        cr_exec_abandon(&old);
    }
    return x;
}

/* Serving: keeps the reference executor x, which loaded path when that file
 * was st, for later jobs; when s_kept is full, the least recently used one
 * is ended (abandoned: this job's timing is over, the next job's s_quiet
 * reaps it). Called after the job's timing only. Each kept executor is left
 * in the same state whatever its job did:
 *  - launch checks off (CR_EXEC_OP_LC_STOP): a job that ended at
 *    verification left its CUPTI subscription on; frozen, it could call
 *    back nothing, but no kept process holds a subscription while another
 *    job times, and s_ref_resume subscribes it again;
 *  - no deadline (the next job that takes it sets its own);
 *  - frozen, as every executor between commands (exec.c note 2), so it
 *    touches neither the GPU nor the reference arena while another
 *    executor runs.
 * All kept executors map the same reference arena (one IPC handle): only
 * the job's own reference executor is ever called, one command at a time,
 * and the judge draws and poisons every buffer a call reads, in fresh
 * arena space of this job (the arena's top is reset between jobs), before
 * the call; no executor reads arena memory across commands (docs/judge.md
 * §6). An executor that faulted, or that does not stop its launch checks,
 * is not kept. */
static void s_kept_put(cr_exec_t *x, const char *path, const struct stat *st)
{
    cr_exec_ctl_t *ctl = cr_exec_ctl(x);
    if (ctl->cuda.lc_on &&
        (cr_exec_command(x, CR_EXEC_OP_LC_STOP, NULL) != 0 || ctl->cuda.lc_on)) {
        cr_info("serve: the reference executor did not stop its launch checks; not kept");
        cr_exec_abandon(&x);
        return;
    }
    cr_exec_set_deadline(x, 0);
    void *evicted = NULL;
    if (cr_kept_put(&s_kept, x, path, st, &evicted) != 0) {
        cr_exec_abandon(&x);
        return;
    }
    if (evicted) {
        cr_exec_t *old = evicted;
        cr_debug("serve: %d reference executors kept; the least recently used one ended",
                 s_kept.cap);
        cr_exec_abandon(&old);
    }
}

/* Ends every kept reference executor (the arenas they map go). */
static void s_kept_drop_all(void)
{
    for (cr_exec_t *x; (x = cr_kept_pop(&s_kept));)
        cr_exec_destroy(&x);
}

/* Serving: the kept reference executor, checked for this job: its launch
 * checks subscribed again (its last job ended them before timing, §8).
 * 0 when it is usable as it is; -1 when it was dropped (a new one starts). */
static int s_ref_resume(cr__cuda_judge_t *J)
{
    cr_exec_t *x = J->x[CR_CUDA_REF];
    cr_exec_ctl_t *ctl = cr_exec_ctl(x);
    if (cr_exec_command(x, CR_EXEC_OP_LC_START, NULL) == 0 && ctl->result == 0 &&
        ctl->cuda.lc_on)
        return 0;
    cr_info("serve: the kept reference executor did not resume its launch checks (%s); "
            "starting another", cr_exec_fault(x)->msg[0] ? cr_exec_fault(x)->msg : "no CUPTI");
    cr_exec_abandon(&J->x[CR_CUDA_REF]);
    return -1;
}

/* Serving: when no spare candidate executor is left for the next job,
 * starts s_set_spares of them at once, as this job's executors are ready:
 * their contexts are made side by side while this job loads and verifies,
 * and s_quiet waits for all of them before any timing, so that the wait is
 * paid once a burst instead of once a job and no context is ever made
 * while a job times. With one (s_set_spares 1) this is session 14's design.
 * (Started at the end of the job instead, after its timing, the next jobs'
 * calls read milliseconds of wall time and event time too many, on the
 * H200 in session 14, beside four kept references: not explained. Two
 * spares topped up at each job's start and end, made while jobs timed, in
 * session 15: no faster batch, and the precision spreads doubled;
 * bench/RESULTS.md.) The spares share the one candidate arena: each maps
 * it by the same IPC handle, as the spare of session 14's design already
 * did beside the running candidate; a spare has loaded nothing and is
 * frozen once ready, and the judge draws and poisons everything a call
 * reads before each call. A failure only costs a later job the wait. */
static void s_spare_start(const cr__cuda_judge_t *J)
{
    if (!s_serve || s_nspare > 0)
        return;
    int n = 0;
    for (; n < s_set_spares && s_nspare < CR_KEPT_SPARES_MAX; n++) {
        char err[800] = "";
        if (s_exec_start(&J->d, CR_CUDA_CAND, CR_CUDA_AR_CAND, NULL, J->req->sandbox_uid, 0,
                         &s_spare[s_nspare], err, sizeof err) != 0) {
            cr_info("serve: the next candidate executor not started (%s)", err);
            break;
        }
        s_nspare++;
    }
    cr_debug("serve: %d spare candidate executors started", n);
}

/* The oldest candidate executor started ahead, taken; NULL when none. */
static cr_exec_t *s_spare_take(void)
{
    if (s_nspare == 0)
        return NULL;
    cr_exec_t *x = s_spare[0];
    memmove(s_spare, s_spare + 1, (size_t)(s_nspare - 1) * sizeof *s_spare);
    s_spare[--s_nspare] = NULL;
    return x;
}

/* Ends every executor started ahead (the arenas they map go). */
static void s_ahead_drop_all(void)
{
    while (s_nspare > 0) {
        cr_exec_t *x = s_spare_take();
        cr_exec_destroy(&x);
    }
    cr_exec_destroy(&s_ref_ahead);
}

/* Serving: nothing but this job on the GPU from here (timing): every
 * executor started ahead is ready (its context made), the ones ended
 * before are reaped (their contexts torn down). */
static void s_quiet(void)
{
    if (!s_serve)
        return;
    int64_t t0 = cr_time_mono_ns();
    char err[800] = "";
    for (int i = 0; i < s_nspare;)
        if (cr_exec_ready(s_spare[i], err, sizeof err) != 0) {
            cr_info("serve: a spare candidate executor failed to start (%s)", err);
            cr_exec_destroy(&s_spare[i]);
            memmove(s_spare + i, s_spare + i + 1, (size_t)(s_nspare - i - 1) * sizeof *s_spare);
            s_spare[--s_nspare] = NULL;
        } else {
            i++;
        }
    if (s_ref_ahead && cr_exec_ready(s_ref_ahead, err, sizeof err) != 0) {
        cr_info("serve: the next reference executor failed to start (%s)", err);
        cr_exec_destroy(&s_ref_ahead);
    }
    int n = cr_exec_reap_abandoned();
    cr_info("serve: quiet for timing after %.3f s (%d executors reaped, %d spares, %d "
            "references kept)", (double)(cr_time_mono_ns() - t0) / 1e9, n, s_nspare,
            cr_kept_count(&s_kept));
}

/* The executors of this run, each with its object loaded: the prestart's
 * (or, serving, the spare and the kept reference) where there are some,
 * else started now; the baseline's (rare) always now, on the reference's
 * arena. The reference and baseline load first. Returns 0, or -1 with the
 * verdict. */
static int s_executors(cr__cuda_judge_t *J)
{
    const Crucible__RunnerRequest *req = J->req;
    const char *obj[3] = {req->candidate_so, req->reference_so,
                          req->baseline_so && req->baseline_so[0] ? req->baseline_so : NULL};
    char err[800] = "";
    int64_t t0 = cr_time_mono_ns();
    int ref_loaded = 0; /* serving: the kept reference executor holds obj[REF] */
    if (s_serve && (J->x[CR_CUDA_REF] = s_kept_take(obj[CR_CUDA_REF], &J->ref_st))) {
        cr_exec_set_deadline(J->x[CR_CUDA_REF], J->deadline_ns);
        ref_loaded = s_ref_resume(J) == 0;
    }
    const char *scratch = s_serve ? NULL : req->scratch_dir; /* outlives no job (serve) */
    /* a task with "gpus": the candidate and the baseline run on every rank with
     * a communicator, always in new executors (ranks.c); the reference as here */
    const int ranked = J->t->gpus > 0;
    for (int who = 0; who < 3; who++) {
        if (ranked && who != CR_CUDA_REF)
            continue;
        if (!obj[who]) {
            J->x[who] = J->x[CR_CUDA_REF];
            continue;
        }
        if (who < 2 && !J->x[who] &&
            (J->x[who] = who == CR_CUDA_CAND ? s_spare_take() : s_ref_ahead)) {
            if (who == CR_CUDA_REF)
                s_ref_ahead = NULL;
            cr_exec_set_deadline(J->x[who], J->deadline_ns);
            if (cr_exec_ready(J->x[who], err, sizeof err) != 0) { /* started ahead */
                cr_info("serve: the %s executor started ahead failed (%s)", s_role[who], err);
                cr_exec_destroy(&J->x[who]);
            }
        }
        if (J->x[who])
            continue;
        if (s_exec_start(&J->d, who, cr__cuda_arena_of(who), scratch, req->sandbox_uid, 1,
                         &J->x[who], err, sizeof err) != 0) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s executor: %s",
                          s_role[who], err);
            return -1;
        }
        cr_exec_set_deadline(J->x[who], J->deadline_ns);
    }
    s_spare_start(J); /* the next job's candidate, while this one loads and verifies */
    static const int order[3] = {CR_CUDA_REF, CR_CUDA_BASE, CR_CUDA_CAND};
    for (int i = 0; i < 3; i++) {
        int who = order[i];
        if (ranked && who != CR_CUDA_REF)
            continue;
        if (!obj[who] || (who == CR_CUDA_REF && ref_loaded))
            continue;
        if (who == CR_CUDA_REF && stat(obj[who], &J->ref_st) != 0)
            memset(&J->ref_st, 0, sizeof J->ref_st); /* never matches: not kept */
        if (cr_exec_set_object(J->x[who], obj[who], err, sizeof err) != 0) {
            cr__cuda_hard(J, who == CR_CUDA_CAND ? CRUCIBLE__STATUS__STATUS_INFRA_ERROR
                                                 : CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                          "%s: %s", s_role[who], err);
            return -1;
        }
        if (cr_exec_load(J->x[who], NULL, NULL, 0) != 0) {
            cr_judge_exec_verdict(J->rec, J->x[who], who == CR_CUDA_CAND);
            J->verdict = 1;
            return -1;
        }
        J->ref_loaded |= who == CR_CUDA_REF;
    }
    J->ref_loaded |= ref_loaded;
    if (ranked && cr__cuda_ranks_executors(J) != 0)
        return -1;
    J->rec->sandboxed_net = cr_exec_sandbox_net(J->x[CR_CUDA_CAND]);
    cr_info("cuda executors ready %.3f s after the judge began (empty command: reference "
            "%.2f us, candidate %.2f us%s)", (double)(cr_time_mono_ns() - t0) / 1e9,
            cr_exec_overhead_us(J->x[CR_CUDA_REF]), cr_exec_overhead_us(J->x[CR_CUDA_CAND]),
            ref_loaded ? "; the reference's kept from an earlier job" : "");
    return 0;
}

/* Kills the executors; with s_leave_device (the process ends after its
 * report) or serving, without waiting for their contexts' teardown.
 * Serving, a reference executor that did nothing wrong is kept for the
 * next job (docs/judge.md §6): it never ran candidate code. */
static void s_executors_end(cr__cuda_judge_t *J)
{
    void (*end)(cr_exec_t **) = s_leave_device || s_serve ? cr_exec_abandon : cr_exec_destroy;
    cr__cuda_ranks_executors_end(J, end);
    if (J->x[CR_CUDA_BASE] != J->x[CR_CUDA_REF])
        end(&J->x[CR_CUDA_BASE]);
    end(&J->x[CR_CUDA_CAND]);
    cr_exec_t *ref = J->x[CR_CUDA_REF];
    const char *path = J->req->reference_so;
    if (s_serve && ref && !J->dead && J->ref_loaded && cr_exec_fault(ref)->kind == CR_EXEC_OK &&
        path) {
        s_kept_put(ref, path, &J->ref_st);
        J->x[CR_CUDA_REF] = NULL;
    } else {
        end(&J->x[CR_CUDA_REF]);
    }
    J->x[CR_CUDA_BASE] = NULL;
}


/* The device state: the prestart's (or the last job's) when there is one,
 * else made now; *have is set once J->d holds it (whatever comes after, it
 * is released or kept from there: the executors started ahead map its
 * arenas). Returns 0, or -1 with an INFRA_ERROR (or OOM) verdict. */
static int s_setup(cr__cuda_judge_t *J, int *have)
{
    if (s_pre) { /* made while the previous runner measured: taken over */
        J->d = *s_pre;
        free(s_pre);
        s_pre = NULL;
        *have = 1;
    } else {
        const char *what = NULL;
        cudaError_t e = cr__cuda_setup_device(&J->d, &what);
        *have = 1; /* what it made so far is released with the rest */
        if (e != cudaSuccess) {
            cr__cuda_infra(J, e, what);
            J->setup_failed = 1;
            return -1;
        }
    }
    if (!J->d.nvml) {
        if (J->policy.lock) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                          "clock policy lock needs NVML: %s", J->d.nvml_err);
            return -1;
        }
        cr_warn("NVML unavailable (%s): SM clock and throttling not observed", J->d.nvml_err);
    }
    return 0;
}

void cr_cuda_judge_leave_device(int on)
{
    s_leave_device = on;
}

void cr_cuda_judge_serve(int on)
{
    s_serve = on;
    if (!on)
        return;
    s_set_kept = cr_kept_setting("CRUCIBLE_SERVE_KEPT_REFS", 1, 1, CR_KEPT_MAX);
    s_set_spares = cr_kept_setting("CRUCIBLE_SERVE_SPARES", 1, 1, CR_KEPT_SPARES_MAX);
    if (cr_kept_count(&s_kept) == 0)
        cr_kept_init(&s_kept, s_set_kept);
    cr_info("serve: up to %d reference executors kept, spare candidate executors started "
            "%d at a time", s_set_kept, s_set_spares);
}

int cr_cuda_judge_broken(void)
{
    return s_broken;
}

int cr_cuda_judge_run(const Crucible__RunnerRequest *req, const cr_task_t *task,
                      Crucible__RewardRecord *rec)
{
    cr__cuda_judge_t *J = (cr__cuda_judge_t *)calloc(1, sizeof *J);
    if (!J)
        return -ENOMEM;
    int rc = 0, have_dev = 0;
    int64_t ph[4] = {0, 0, 0, 0}; /* setup, its end, verify starts, verify ends */
    J->req = req;
    J->t = task;
    J->rec = rec;
    cr_judge_set_str(&rec->backend, "cuda");
    const Crucible__JobOptions *o = req->options;
    double run_s = o && o->run_timeout_s > 0 ? o->run_timeout_s : S_RUN_TIMEOUT_S;
    J->deadline_ns = cr_time_mono_ns() +
                     (int64_t)(fmax(0.2, run_s * S_DEADLINE_FRAC - S_DEADLINE_MARGIN_S) * 1e9);
    J->reserve_ns = (int64_t)(run_s * S_RESERVE_FRAC * 1e9);
    J->budget_s = o && o->time_budget_s > 0 ? o->time_budget_s : CR_JUDGE_DEFAULT_BUDGET_S;
    J->rse_target = o && o->rse_target > 0 ? o->rse_target : CR_JUDGE_DEFAULT_RSE;
    J->cached_ref_us = cr_judge_cached_ref(req, task, &J->cached_ref_rse);
    J->ref_anchor_us = J->cached_ref_us ? NULL
                                        : cr_judge_per_bench(req->ref_anchor_us,
                                                             req->n_ref_anchor_us, task,
                                                             "reference anchors",
                                                             "no level taken off");

    if (!req->reference_so || !req->reference_so[0] || !req->candidate_so ||
        !req->candidate_so[0] || req->seed.len != sizeof J->seed) {
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                      "cuda judge: missing object or seed (%zu bytes, need 32)",
                      req->seed.len);
        goto done;
    }
    memcpy(J->seed, req->seed.data, sizeof J->seed);
    {
        cr_rng_t hk;
        cr_rng_seed(&hk, J->seed, 0, S_SET_HASHKEY, 0);
        J->hash_key = hk.s[0];
        cr_rng_seed(&J->place, J->seed, 0, S_SET_PLACEMENT, 0);
    }
    /* Diagnostics: every timed sample as CSV (case,side,i,slot,event_us,
     * wall_us,sm_mhz,throttled,us since the case's first candidate sample,
     * GPU us of its ev0 in the case, adjustment us: stall and level, notes 10
     * and 11, 1 when its event time counts: §12), appended to the file
     * this names. */
    if (getenv("CR_CUDA_JUDGE_SAMPLES"))
        J->dump = fopen(getenv("CR_CUDA_JUDGE_SAMPLES"), "ae");
    /* Diagnostics: GPU time of every sample's fill and flush in the case
     * log line (events around them, which cost the timed kernel a little). */
    J->gpu_steps = getenv("CR_CUDA_JUDGE_GPU_STEPS") != NULL;
    /* Diagnostics: CR_CUDA_JUDGE_TAIL=N queues N launches behind a timed
     * call instead of S_TAIL_LAUNCHES (0: none, every sample's times count;
     * §12). */
    J->tail = S_TAIL_LAUNCHES;
    const char *v = getenv("CR_CUDA_JUDGE_TAIL");
    if (v && v[0]) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 0 || n > 1024)
            cr_warn("CR_CUDA_JUDGE_TAIL='%s' is not a count of 0-1024; queueing %d", v,
                    S_TAIL_LAUNCHES);
        else
            J->tail = (int)n;
    }
    cr_rng_seed(&J->tail_pick, J->seed, 0, S_SET_TAIL, 0);
    if (cr_clock_policy_parse(o ? o->clock_policy : NULL, &J->policy) != 0) {
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                      "clock policy '%s': expected observe, lock:base or lock:<MHz>",
                      o->clock_policy);
        goto done;
    }
    ph[0] = cr_time_mono_ns();
    if (s_setup(J, &have_dev) != 0)
        goto done;
    if (J->d.name[0])
        cr_judge_set_str(&rec->device, J->d.name);
    if (cr__cuda_ranks_setup(J) != 0) /* a task with "gpus": every rank's GPU */
        goto done;
    if (J->nranks > 1 && J->d.name[0]) {
        char dev[300];
        snprintf(dev, sizeof dev, "%dx %s", J->nranks, J->d.name);
        cr_judge_set_str(&rec->device, dev);
    }
    if (s_executors(J) != 0)
        goto done;
    if (cr__cuda_lock(J) != 0)
        goto done;
    ph[1] = cr_time_mono_ns();

    rec->status = CRUCIBLE__STATUS__STATUS_OK;
    cr__cuda_lc_on(J);
    ph[2] = cr_time_mono_ns();
    rc = cr__cuda_verify(J);
    if (!J->verdict && J->lc_on)
        cr__cuda_lc_off(J); /* before timing: no callback in a timed window (§8) */
    ph[3] = cr_time_mono_ns();
    if (rc != 0 || J->verdict)
        goto done;
    if (rec->status != CRUCIBLE__STATUS__STATUS_OK || req->verify_only)
        goto done;
    s_quiet();
    rc = cr__cuda_time(J);

done:
    if (rc == -ENOMEM) {
        J->verdict = 0;
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cuda judge: out of host memory");
        rc = 0;
    }
    cr__cuda_unlock(J);
    s_executors_end(J);
    cr__cuda_ranks_release(J); /* the further ranks' GPUs: made again by the next such job */
    if (s_serve && have_dev && !J->dead && !J->setup_failed && !s_pre &&
        (s_pre = malloc(sizeof *s_pre))) {
        /* serving: the device state is the next job's (its arenas emptied;
         * the spare executor has the candidate arena's handle already) */
        *s_pre = J->d;
        for (int a = 0; a < CR_CUDA_AR_N; a++)
            s_pre->ar[a].top = 0;
    } else if (have_dev && (!s_leave_device || s_serve)) {
        /* the executors started ahead mapped these arenas: they go too */
        s_ahead_drop_all();
        s_kept_drop_all();
        cr__cuda_release_device(&J->d, J->dead);
    }

    if (s_serve && J->dead) {
        s_broken = 1;
        cr_warn("serve: the judge's CUDA context is unusable; this judge takes no more jobs");
    }
    if (ph[0]) {
        char steps[400];
        size_t len = 0;
        for (int i = 0; i < CR_CUDA_ST_N && len < sizeof steps; i++)
            len += (size_t)snprintf(steps + len, sizeof steps - len, "%s%s %.3f", i ? ", " : "",
                                    s_step_name[i], (double)J->step_ns[i] / 1e9);
        cr_info("cuda judge seconds: setup %.3f, launch checks on %.3f, verify %.3f (checks "
                "off included), timing and clean-up %.3f; by step: %s; persisting-L2 resets %llu",
                (double)(ph[1] - ph[0]) / 1e9, ph[2] ? (double)(ph[2] - ph[1]) / 1e9 : 0.0,
                ph[3] ? (double)(ph[3] - ph[2]) / 1e9 : 0.0,
                ph[3] ? (double)(cr_time_mono_ns() - ph[3]) / 1e9 : 0.0, steps,
                (unsigned long long)J->l2_resets);
    }
    if (J->dump)
        fclose(J->dump);
    if (J->handlers) {
        sigaction(SIGTERM, &J->old_term, NULL);
        sigaction(SIGINT, &J->old_int, NULL);
    }
    free(J);
    return rc;
}

int cr_cuda_judge_measure(double *copy_bw, double *peak_flops)
{
    *copy_bw = *peak_flops = 0;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaFree(0);
    if (e == cudaSuccess)
        e = cudaEventCreate(&e0);
    if (e == cudaSuccess)
        e = cudaEventCreate(&e1);
    if (e == cudaSuccess)
        *copy_bw = cr__cuda_copy_bw(e0, e1);
    int sms = 0, khz = 0;
    if (e == cudaSuccess && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) ==
                                cudaSuccess) {
        if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) != cudaSuccess || khz <= 0)
            khz = 3000000; /* above every GPU's SM clock (device.c): a floor stays a floor */
        *peak_flops = cr_judge_gpu_peak_flops(sms, khz / 1e3);
    }
    cudaGetLastError();
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (e != cudaSuccess || !cr__cuda_bw_plausible(*copy_bw, 0)) {
        fprintf(stderr, "crucible-runner: device bandwidth not measured: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e)
                : *copy_bw <= 0  ? "the copies failed"
                                 : "an implausible figure");
        *copy_bw = 0;
        return -1;
    }
    return 0;
}

int cr_cuda_judge_prestart(void)
{
    if (s_pre)
        return 0;
    cr__cuda_dev_t *P = (cr__cuda_dev_t *)calloc(1, sizeof *P);
    if (!P)
        return -1;
    /* the context (the slow part of a runner's start), the limits to restore
     * taken before any candidate code, and the rest of the setup */
    const char *what = NULL;
    cudaError_t e = cr__cuda_setup_device(P, &what);
    if (e != cudaSuccess) {
        cr_info("prestart: %s: %s", what, cudaGetErrorString(e));
        cudaGetLastError();
        cr__cuda_release_device(P, 0);
        free(P);
        return -1;
    }
    s_pre = P;
    /* The candidate's and the reference's executors, each making its own
     * context now (and subscribing CUPTI, §8), off the critical path; no
     * request, so no scratch folder and the sandbox's default uid. */
    int64_t t0 = cr_time_mono_ns();
    char err[800];
    for (int who = 0; who < 2; who++) {
        if (who == CR_CUDA_CAND ? s_nspare > 0 : s_ref_ahead != NULL)
            continue;
        cr_exec_t **x = who == CR_CUDA_CAND ? &s_spare[0] : &s_ref_ahead;
        if (s_exec_start(P, who, cr__cuda_arena_of(who), NULL, 0, 1, x, err, sizeof err) != 0)
            cr_info("prestart: %s executor not started (%s); the judge tries again",
                    s_role[who], err);
        else if (who == CR_CUDA_CAND)
            s_nspare++;
    }
    cr_info("prestart seconds: context %.3f, NVML %.3f, buffers %.3f, executors %.3f",
            P->setup_s[0], P->setup_s[1], P->setup_s[2],
            (double)(cr_time_mono_ns() - t0) / 1e9);
    return 0;
}
