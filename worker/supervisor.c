/* supervisor.c — see supervisor.h.
 *
 * Design notes.
 *  1. The running runner's pid sits in a slot the supervisor writes (under
 *     the lock) before handing the runner its request, so a Cancel or a
 *     shutdown can kill the group of a runner that is still measuring. The
 *     slot is cleared under the lock once cr_proc_wait has reaped the child.
 *  2. The scratch dir is private (0700, owned by the sandbox uid when we are
 *     root) and removed after every run, whatever the outcome: nothing a
 *     candidate writes survives it.
 *  3. The final record is assembled on the stack from pointers into the job
 *     and packed/unpacked once into job->rec, so it is one owned message that
 *     free_unpacked releases, whoever made its parts.
 *  4. The reference cache is read and written only in s_run, i.e. only by
 *     the supervisor thread, so it takes no lock; destroy frees it after the
 *     join. Its key (s_ref_key) names everything a reference median depends
 *     on: the task (bundle hash and task.json: the bench sizes), the
 *     reference and baseline objects (content-addressed cache paths: source,
 *     compiler identity, flags), the device and the clock policy. The first
 *     OK report that measured the reference fills the entry, whatever the
 *     job's policy; a REF_CACHED job then reuses it instead of timing the
 *     reference, an interleaved one gets it as the anchor its runner
 *     measures its own level against (CUDA judge note 11, which says what
 *     a first candidate that slowed its reference could move). A full cache
 *     overwrites its oldest entry (a ring).
 *  5. On a GPU worker the next runners are started while the current one
 *     measures (`crucible-runner --prestart cuda` makes its CUDA context and
 *     the judge's request-independent setup, then blocks on stdin), so
 *     process start and context creation leave the GPU's critical path.
 *     - How many: config "spares" (default 4, at most CR_SPARES_MAX). On an
 *       H200 a spare is ready 0.21-1.01 s after its start (median 0.49 s,
 *       mostly its CUDA context), and a job takes 0.004 s (a wrong answer)
 *       to 0.9 s. A 64-candidate batch waited 4.2 s in all for spares still
 *       starting with two, 3.2 s with three, 2.5 s with four (session 7),
 *       1.25 s with four once its compiles no longer held it up (session
 *       11). Six or eight were no faster: contexts made side by side took a
 *       median 0.82-1.03 s against 0.56-0.58 s (session 11).
 *     - When: the spares are the supervisor thread's alone. They start when
 *       the thread does, right after the bandwidth measurement (note 7), so
 *       the first job does not wait ~0.7 s for a context after its compile
 *       (session 10; the cost: an idle worker holds their contexts and
 *       arenas from its start). They are topped up as a job's runner is
 *       taken (just before its request is written); the oldest serves the
 *       next job, one that died while waiting is skipped (or a fresh one
 *       started), and destroy kills them.
 *     - Preload: a spare started while a job runs is given that job's
 *       reference and baseline objects (`--preload`) and reads them into
 *       the page cache; it does not load them: their constructors are
 *       client code, which runs only inside the sandbox the request sets up
 *       (docs/security.md). The next job is most often of the same task (a
 *       GRPO group). A runner started for the job at hand preloads nothing.
 *     A spare's pid enters the kill slot only when it gets a job, so Cancel
 *     never hits an idle spare; its run timeout counts from the request,
 *     not the start.
 *  6. After its report a runner started with --park (always, here) closes
 *     the report channel and parks (sleeps in its main thread, then exits 0
 *     by itself: runner.c). A runner seen parked behind a complete report
 *     (token, then one whole frame) has nothing more to say: its group is
 *     killed and the next job starts at once, while the kernel tears the old
 *     process down (tens of ms for a CUDA context, on the GPU's critical
 *     path before); it is reaped after the next job's runner, or at destroy.
 *     Parked means: once its stdout ended, its main thread sleeps
 *     (/proc/<pid>/stat state S) and is not exiting (PF_EXITING clear). A
 *     process that crashed or exited closes its stdout on its way out, with
 *     PF_EXITING set, so a report followed by a crash or a non-zero exit is
 *     waited for and judged by its exit, as before.
 *  7. A GPU worker measures its GPU's copy bandwidth once, when the thread
 *     starts and before any spare exists (`crucible-runner --measure-device`,
 *     S_MEASURE_TIMEOUT_MS), and hands it to every runner in
 *     RunnerRequest.device_copy_bw for the roofline floor (docs/design.md §4): one
 *     figure for the worker's life, measured on an idle GPU, instead of a
 *     256 MiB copy in every runner. A failed measurement is logged and
 *     leaves 0: each runner then measures for itself, as before. A worker
 *     with the CPU or torch backend likewise measures the host's memcpy
 *     bandwidth itself (cr_topo_copy_bw, RunnerRequest.host_copy_bw), the CPU
 *     and torch judges' floor on the host.
 *  8. Serving (the default; config runner-per-job turns it off): the c,
 *     cuda and torch jobs go to one long-lived judge process,
 *     `crucible-runner --serve` (with --prestart cuda on a GPU worker),
 *     instead of a runner each: the judge loads no client code
 *     (docs/judge.md), so it can outlive a job, and each job's candidate
 *     still runs in a fresh executor of its own. A CUDA judge then
 *     makes one context per job where a runner made three (its own, the
 *     candidate's and the reference's executors: the spares of note 5 no
 *     longer kept up), keeps reference executors between jobs (up to
 *     CRUCIBLE_SERVE_KEPT_REFS of them, docs/judge.md §6), and starts the
 *     next candidates' executors while a job verifies (CRUCIBLE_SERVE_SPARES
 *     at a time), never while it times. The exchange is the runner's own
 *     protocol, a fresh token and request in, the token and one record out
 *     (cr_proc_exchange); the judge's pid is in the kill slot (note 1) while
 *     a job runs, so a Cancel, a run timeout or a judge that dies ends it,
 *     and the next job starts another (s_take_judge), after removing what
 *     the old one left in the scratch root (s_judge_gone: the folders of
 *     torch executors it started ahead). A reference executor made anew
 *     costs a task switch 0.3-0.6 s on the H200 beside a batch's compiles
 *     (bench/RESULTS.md, session 15: 18 switches in a 64-candidate batch of
 *     8 tasks), so the judge's next job is one of the last job's reference
 *     when one is waiting among the first few (cr__wqueue_pop_near), never
 *     passing a job over more than CR_WQUEUE_NEAR_PASSES times. */
#define _GNU_SOURCE
#include "supervisor.h"

#include "error.h"
#include "file.h"
#include "hash.h"
#include "log.h"
#include "nvml.h"
#include "proc.h"
#include "record.h"
#include "runner/sandbox.h"
#include "timeutil.h"
#include "topo.h"
#include "wire.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 60 s for the bandwidth measurement at start (note 7): a context and six copies. */
#define S_MEASURE_TIMEOUT_MS 60000
/* 4 MiB of report: a record with per-case results is a few KiB. */
#define S_REPORT_CAP (4u * 1024u * 1024u)
/* 8 KiB of runner stderr: the last lines say why a candidate died. */
#define S_STDERR_CAP (8u * 1024u)
#define S_STDERR_CAP_DEBUG (128u * 1024u) /* at debug level: a torch job's per-pair lines */
#define S_STDERR_LINES 2048 /* of it logged, a line a log line */
/* 300 s: only when neither the job nor the config gives a run timeout. */
#define S_DEFAULT_RUN_TIMEOUT_S 300.0
/* How long a runner may take from closing its report to being asleep (note 6). */
#define S_PARK_WAIT_MS 500
/* Seed length fixed by the protocol (RunnerRequest.seed). */
#define S_SEED_LEN 32
/* Reference cache entries (note 4): far more (task, objects, device) keys
 * than one worker meets in a training run, at ~100 bytes plus 16 per bench
 * case each; the oldest goes first when it is full. */
#define S_REFCACHE_MAX 4096

/* One cached reference measurement: a median and RSE per bench case. */
typedef struct {
    char key[CR_HASH_HEX_LEN + 1]; /* s_ref_key */
    size_t n;                      /* bench cases */
    double *median_us;             /* us, n of them, in the task's bench order; owned */
    double *rse;                   /* n relative standard errors; owned */
} s_refent_t;

struct cr_supervisor {
    const cr_config_t *cfg;   /* not owned; outlives us */
    const cr_ident_t *id;     /* not owned; outlives us */
    cr_sup_deliver_fn deliver;
    void *deliver_arg;
    char runner[PATH_MAX];    /* runner executable */
    char *scratch_root;       /* <work_dir>/scratch; owned */
    pid_t *pid;               /* running runner's pid, 0 = none; MAP_SHARED (note 1) */
    int prestart;             /* 1: a GPU worker: runners prestart cuda (note 5) */
    int serve;                /* 1: c, cuda and torch jobs go to the serving judge (note 8) */
    cr_proc_t judge;          /* the serving judge; pid 0 = none yet; thread only */
    double copy_bw;           /* B/s measured at start (note 7); 0 = runners measure */
    double host_bw;           /* B/s of host memcpy measured at start (note 7); 0 = none */
    double peak_flops;        /* flop/s above the GPU's peak, measured with copy_bw; 0 = none */
    cr_proc_t spare[CR_SPARES_MAX]; /* started, waiting for a request, oldest first;
                                     * thread only */
    int nspares;              /* how many of spare[] are kept: config spares */
    pid_t ending;             /* a runner that reported and was killed, not yet reaped (note 6) */
    char preload[2][PATH_MAX]; /* reference and baseline objects of the last job run,
                                * "" = none: spares load them ahead (note 5); thread only */
    char last_ref[PATH_MAX];  /* reference object of the serving judge's last cuda job
                               * (the one backend that keeps a reference executor), "" =
                               * none: the next job is one of the same when one waits
                               * (cr__wqueue_pop_near, note 8); thread only */
    char *argv[9];            /* runner command line; strings static, s->runner or s->preload */
    /* --- reference cache: supervisor thread only (note 4) --- */
    s_refent_t *refs;         /* S_REFCACHE_MAX slots used as a ring; owned; NULL = none yet */
    size_t nrefs;             /* slots filled */
    size_t ref_next;          /* slot the next new entry takes: the oldest once full */
    /* --- shared, under mu --- */
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* a job was queued, or stop */
    cr__wqueue_t queue;       /* compiled jobs waiting for the runner */
    cr_wjob_t *running;       /* job being judged; owned by the thread */
    int npending;             /* queued + running */
    int stop;
    int started;              /* thread was created */
    pthread_t thread;
};

/* ---- the final record ---- */

/* Last lines of the runner's stderr, joined with " | " into out: the end
 * of stderr is where a crash or an abort explains itself. */
static void s_stderr_tail(const char *err, char *out, size_t len)
{
    out[0] = '\0';
    if (!err)
        return;
    size_t n = strlen(err);
    while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == ' '))
        n--;
    /* start of the third-to-last line, at most 400 bytes back */
    size_t start = n, lines = 0;
    while (start > 0 && n - start < 400) {
        if (err[start - 1] == '\n' && ++lines == 3)
            break;
        start--;
    }
    size_t k = 0;
    for (size_t i = start; i < n && k + 4 < len; i++) {
        if (err[i] == '\n') {
            memcpy(out + k, " | ", 3);
            k += 3;
        } else if ((unsigned char)err[i] >= 0x20) {
            out[k++] = err[i];
        }
    }
    out[k] = '\0';
}

/* Builds job->rec (note 3) and logs the verdict. */
static void s_finish(cr_supervisor_t *s, cr_wjob_t *j)
{
    Crucible__RewardRecord rec = CRUCIBLE__REWARD_RECORD__INIT;
    const Crucible__RewardRecord *rep = j->report;
    if (rep && !j->status)
        rec = *rep; /* shallow: verify, profile, hack flags, device stay the runner's */
    if (!j->status && !rep)
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "no verdict (internal error)");
    if (j->status) {
        rec.status = (Crucible__Status)j->status;
        rec.message = j->message;
    } else if (rep->status == CRUCIBLE__STATUS__STATUS_UNSPECIFIED) {
        rec.status = CRUCIBLE__STATUS__STATUS_INFRA_ERROR;
        rec.message = "runner report carries no status";
    }
    const Crucible__Job *job = j->job;
    rec.batch_id = job->batch_id;
    rec.job_id = job->spec->job_id;
    rec.task = job->task->name;
    rec.group_id = job->spec->group_id;
    rec.sample_index = job->spec->sample_index;
    rec.turn = job->spec->turn;
    rec.attempt = job->attempt;
    rec.seq = 0; /* the coordinator numbers records */

    Crucible__CompileResult comp = CRUCIBLE__COMPILE_RESULT__INIT;
    comp.ok = j->compile_ok;
    comp.log = j->compile_log ? j->compile_log : "";
    comp.seconds = j->compile_s;
    comp.cache_hit = j->cache_hit;
    rec.compile = &comp;

    rec.worker_id = (char *)s->id->worker_id;
    rec.host = (char *)s->id->host;
    rec.backend = j->task ? j->task->language : "";
    rec.device = rep && rep->device && rep->device[0] ? rep->device : (char *)s->id->device;
    rec.t_assigned = j->t_assigned;
    rec.t_compiled = j->t_compiled;
    rec.t_verified = j->t_verified;
    rec.t_finished = j->t_finished ? j->t_finished : cr_time_now_ms();

    uint8_t *buf = NULL;
    size_t len = 0;
    if (cr_wire_record_pack(&rec, &buf, &len) == 0) {
        cr_wire_record_unpack(buf, len, &j->rec);
        free(buf);
    }
    char name[300], speed[32] = "";
    const Crucible__RewardRecord *r = j->rec ? j->rec : &rec;
    if (r->status == CRUCIBLE__STATUS__STATUS_OK && r->profile &&
        r->profile->speedup_geomean > 0)
        snprintf(speed, sizeof speed, " %.2fx", r->profile->speedup_geomean);
    double secs = (double)(r->t_finished - j->t_assigned) / 1000.0;
    if (r->status == CRUCIBLE__STATUS__STATUS_OK)
        cr_info("job %s attempt %u: OK%s in %.1f s", cr_wjob_name(j, name, sizeof name),
                job->attempt, speed, secs);
    else
        cr_info("job %s attempt %u: %s in %.1f s: %s", cr_wjob_name(j, name, sizeof name),
                job->attempt, cr_status_name(r->status), secs, r->message);
}

/* ---- reference cache (note 4) ---- */

/* The clock policy a job runs under: its own, else the worker's. */
static const char *s_clock_policy(const cr_supervisor_t *s, const cr_wjob_t *j)
{
    const Crucible__JobOptions *o = j->job->options;
    return o && o->clock_policy && o->clock_policy[0] ? o->clock_policy : s->cfg->clock_policy;
}

static const char *s_nvml_lib; /* NULL = CR_NVML_LIBRARY; tests name the fake */

void cr__supervisor_set_nvml_library(const char *path)
{
    s_nvml_lib = path;
}

/* A runner under a lock policy puts the clocks back on each of its own exit
 * paths (worker/runner/cuda/clocks.c), but not when it was killed (the deadline, Cancel,
 * shutdown), crashed, or was ended by the candidate's _exit: whenever no
 * report came back, the worker resets the clocks of its GPU itself. */
static void s_reset_clocks_after(const cr_supervisor_t *s, const cr_wjob_t *j)
{
    cr_clock_policy_t cp;
    if (!cr_config_has_backend(s->cfg->backends, "cuda") ||
        cr_clock_policy_parse(s_clock_policy(s, j), &cp) != 0 || !cp.lock)
        return;
    char err[256] = "";
    int rc = cr_nvml_reset_clocks_at(s_nvml_lib, (unsigned)s->cfg->gpu, err, sizeof err);
    if (rc == 0)
        cr_info("clocks of GPU %lld reset: its runner ended without a report",
                (long long)s->cfg->gpu);
    else
        cr_warn("clocks of GPU %lld NOT reset after its runner ended without a report: %s",
                (long long)s->cfg->gpu, err);
}

static void s_ref_key(const cr_supervisor_t *s, const cr_wjob_t *j,
                      char key[CR_HASH_HEX_LEN + 1])
{
    char gpu[32];
    snprintf(gpu, sizeof gpu, "%lld", (long long)s->cfg->gpu);
    cr_hash_t h;
    cr_hash_init(&h);
    cr_hash_update_str(&h, j->job->task->hash ? j->job->task->hash : "");
    cr_hash_update_str(&h, j->job->task->task_json ? j->job->task->task_json : "");
    cr_hash_update_str(&h, j->so[CR_SO_REFERENCE] ? j->so[CR_SO_REFERENCE] : "");
    cr_hash_update_str(&h, j->so[CR_SO_BASELINE] ? j->so[CR_SO_BASELINE] : "");
    cr_hash_update_str(&h, s->id->device);
    cr_hash_update_str(&h, gpu);
    cr_hash_update_str(&h, s_clock_policy(s, j));
    cr_hash_final_hex(&h, key);
}

/* The entry for key, or NULL. */
static s_refent_t *s_ref_find(const cr_supervisor_t *s, const char *key)
{
    for (size_t i = 0; i < s->nrefs; i++)
        if (strcmp(s->refs[i].key, key) == 0)
            return &s->refs[i];
    return NULL;
}

/* Remembers the reference medians of an OK report that measured the
 * reference for every bench case of the job's task; any other report is
 * left out (a partial or failed measurement must not stand in for later
 * candidates). On ENOMEM nothing is stored: the next job measures again. */
static void s_ref_store(cr_supervisor_t *s, const cr_wjob_t *j, const char *key)
{
    const Crucible__RewardRecord *r = j->report;
    const cr_task_t *t = j->task;
    if (!r || !t || t->nbench <= 0 || r->status != CRUCIBLE__STATUS__STATUS_OK || !r->profile ||
        r->profile->n_cases != (size_t)t->nbench)
        return;
    for (int b = 0; b < t->nbench; b++) {
        const Crucible__BenchResult *br = r->profile->cases[b];
        if (br->case_index != (uint32_t)t->bench[b] || br->ref_samples == 0 ||
            !isfinite(br->ref_median_us) || br->ref_median_us <= 0)
            return;
    }
    if (!s->refs && !(s->refs = calloc(S_REFCACHE_MAX, sizeof *s->refs)))
        return;
    double *m = malloc((size_t)t->nbench * sizeof *m);
    double *e = malloc((size_t)t->nbench * sizeof *e);
    if (!m || !e) {
        free(m);
        free(e);
        return;
    }
    for (int b = 0; b < t->nbench; b++) {
        m[b] = r->profile->cases[b]->ref_median_us;
        e[b] = r->profile->cases[b]->ref_rse;
    }
    s_refent_t *slot = s_ref_find(s, key);
    if (!slot) {
        slot = &s->refs[s->ref_next];
        s->ref_next = (s->ref_next + 1) % S_REFCACHE_MAX;
        if (s->nrefs < S_REFCACHE_MAX)
            s->nrefs++;
    }
    free(slot->median_us);
    free(slot->rse);
    snprintf(slot->key, sizeof slot->key, "%s", key);
    slot->n = (size_t)t->nbench;
    slot->median_us = m;
    slot->rse = e;
    char name[300];
    cr_debug("job %s: reference of task %s cached (%zu bench cases, first %.3f us)",
             cr_wjob_name(j, name, sizeof name), t->name, slot->n, m[0]);
}

static void s_ref_free(cr_supervisor_t *s)
{
    for (size_t i = 0; s->refs && i < s->nrefs; i++) {
        free(s->refs[i].median_us);
        free(s->refs[i].rse);
    }
    free(s->refs);
    s->refs = NULL;
    s->nrefs = s->ref_next = 0;
}

/* ---- one run ---- */

/* Packs the request into one frame (4-byte LE length + bytes). ref, when
 * not NULL, is this worker's earlier measurement of the reference: reused
 * when cached, else sent as the anchor of the interleaved policy. */
static int s_request_frame(cr_supervisor_t *s, cr_wjob_t *j, const char *scratch,
                           const uint8_t *seed, const uint8_t *token, const s_refent_t *ref,
                           int cached, uint8_t **out, size_t *outlen)
{
    const cr_config_t *cfg = s->cfg;
    Crucible__JobOptions opt = CRUCIBLE__JOB_OPTIONS__INIT;
    if (j->job->options)
        opt = *j->job->options;
    /* the worker's timeouts are caps: a job may ask for less, never more */
    opt.compile_timeout_s = cr__wjob_cap(j, "compile timeout", opt.compile_timeout_s,
                                         cfg->compile_timeout_s, CR_COMPILE_DEFAULT_TIMEOUT_S);
    opt.run_timeout_s = cr__wjob_cap(j, "run timeout", opt.run_timeout_s, cfg->run_timeout_s,
                                     S_DEFAULT_RUN_TIMEOUT_S);
    /* batch defaults from the worker's config where the job leaves them at 0 */
    if (opt.time_budget_s <= 0)
        opt.time_budget_s = cfg->time_budget_s;
    if (opt.rse_target <= 0)
        opt.rse_target = cfg->rse_target;
    opt.clock_policy = (char *)s_clock_policy(s, j);
    if (!opt.reward || !opt.reward[0])
        opt.reward = (char *)cfg->reward;

    Crucible__RunnerRequest req = CRUCIBLE__RUNNER_REQUEST__INIT;
    req.task_json = j->job->task->task_json;
    req.candidate_so = j->so[CR_SO_CANDIDATE];
    req.reference_so = j->so[CR_SO_REFERENCE];
    req.baseline_so = j->so[CR_SO_BASELINE] ? j->so[CR_SO_BASELINE] : "";
    req.seed.data = (uint8_t *)seed;
    req.seed.len = S_SEED_LEN;
    req.options = &opt;
    req.scratch_dir = (char *)scratch;
    req.cpu = (int32_t)cfg->cpu;
    req.sandbox_uid = (uint32_t)cfg->sandbox_uid;
    req.llc_bytes = 0; /* the runner measures the cache it flushes */
    req.device_copy_bw = s->copy_bw; /* note 7 */
    req.host_copy_bw = s->host_bw;
    req.device_peak_flops = s->peak_flops;
    if (ref && cached) {
        req.n_cached_ref_median_us = ref->n;
        req.cached_ref_median_us = ref->median_us;
        req.n_cached_ref_rse = ref->n;
        req.cached_ref_rse = ref->rse;
    } else if (ref) {
        req.n_ref_anchor_us = ref->n;
        req.ref_anchor_us = ref->median_us;
    }
    size_t n = crucible__runner_request__get_packed_size(&req);
    if (n > 0xffffffffu)
        return CR_E_TOO_BIG;
    uint8_t *b = malloc(CR_RUNNER_TOKEN_LEN + n + 4);
    if (!b)
        return -ENOMEM;
    memcpy(b, token, CR_RUNNER_TOKEN_LEN);
    uint8_t *f = b + CR_RUNNER_TOKEN_LEN;
    f[0] = (uint8_t)(n & 0xff);
    f[1] = (uint8_t)((n >> 8) & 0xff);
    f[2] = (uint8_t)((n >> 16) & 0xff);
    f[3] = (uint8_t)((n >> 24) & 0xff);
    crucible__runner_request__pack(&req, f + 4);
    *out = b;
    *outlen = CR_RUNNER_TOKEN_LEN + n + 4;
    return 0;
}

/* Replaces the job's report with HACK_DETECTED, one flag and msg: a verdict
 * the worker makes itself from how the runner ended. */
static void s_hack_verdict(cr_wjob_t *j, const char *flag, const char *msg)
{
    char *flags[] = {(char *)flag};
    Crucible__RewardRecord h = CRUCIBLE__REWARD_RECORD__INIT;
    h.status = CRUCIBLE__STATUS__STATUS_HACK_DETECTED;
    h.message = (char *)msg;
    h.n_hack_flags = 1;
    h.hack_flags = flags;
    if (j->report)
        crucible__reward_record__free_unpacked(j->report, NULL);
    if (!(j->report = cr_wire_record_dup(&h))) /* no memory for the flag: the verdict holds */
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "%s", msg);
}

/* The runner writes exactly one frame and exits, so extra bytes on the
 * report channel came from other code in its process: the candidate, which
 * can reach the report descriptor and write a forged verdict ahead of (or
 * after) the judge's. The whole report is void; the job is HACK_DETECTED
 * with flag report_forged (docs/hacks.md #20). */
static void s_report_forged(cr_wjob_t *j, size_t extra)
{
    char msg[160];
    snprintf(msg, sizeof msg, "%zu bytes besides the runner's report on its report channel: "
             "the candidate wrote to it", extra);
    s_hack_verdict(j, "report_forged", msg);
}

/* The runner's sandbox trapped a system call (exit CR_RUNNER_EXIT_SANDBOX,
 * or SIGSYS when the candidate blocked the signal): HACK_DETECTED with flag
 * sandbox_violation and, as message, the runner's last line naming it. */
static void s_sandbox_violation(cr_wjob_t *j, const cr_proc_result_t *r)
{
    char msg[256];
    const char *line = NULL;
    for (const char *p = r->err; p && (p = strstr(p, CR_SANDBOX_DENIED_PREFIX)); p++)
        line = p;
    if (line)
        snprintf(msg, sizeof msg, "%.*s", (int)strcspn(line, "\n"), line);
    else if (r->signaled)
        snprintf(msg, sizeof msg, "crucible-runner: sandbox: killed by SIGSYS: a forbidden "
                 "system call while SIGSYS was blocked (glibc blocks it while it creates a "
                 "thread or a process)");
    else
        snprintf(msg, sizeof msg, "crucible-runner: sandbox: exit %d without naming the "
                 "system call", CR_RUNNER_EXIT_SANDBOX);
    s_hack_verdict(j, "sandbox_violation", msg);
}

static int s_cancelled(cr_wjob_t *j)
{
    return __atomic_load_n(&j->cancelled, __ATOMIC_SEQ_CST);
}

/* How every runner is started: argv (its rlimits are the sandbox's, set
 * before it loads a candidate: worker/runner/sandbox.c). A spare also gets
 * the last job's objects to preload (note 5); a runner started for the job
 * at hand does not, since its loads would count in that job. Static
 * storage: the options outlive calls. */
static void s_runner_opts(cr_supervisor_t *s, int spare, cr_proc_opts_t *o)
{
    static char prestart_flag[] = "--prestart", cuda[] = "cuda", park[] = "--park",
                preload_flag[] = "--preload";
    int n = 0;
    s->argv[n++] = s->runner;
    s->argv[n++] = park; /* note 6 */
    if (s->prestart) {
        s->argv[n++] = prestart_flag;
        s->argv[n++] = cuda;
        for (int k = 0; k < 2 && spare; k++)
            if (s->preload[k][0]) {
                s->argv[n++] = preload_flag;
                s->argv[n++] = s->preload[k];
            }
    }
    s->argv[n] = NULL;
    memset(o, 0, sizeof *o);
    o->argv = s->argv;
}

/* Tops the spares up to s->nspares (note 5), newest last; a failure only costs
 * the head start. None while serving (note 8). */
static void s_start_spares(cr_supervisor_t *s)
{
    if (!s->prestart || s->serve)
        return;
    for (int i = 0; i < s->nspares; i++) {
        if (s->spare[i].pid > 0)
            continue;
        cr_proc_opts_t o;
        s_runner_opts(s, 1, &o);
        int rc = cr_proc_spawn(&o, &s->spare[i]);
        if (rc != 0) {
            cr_warn("cannot start a spare runner %s: %s; the next job starts its own",
                    s->runner, cr_strerror(rc));
            return;
        }
    }
}

/* The runner for the next job: the oldest spare still waiting, else one
 * started now. 0 with *p, or -errno. */
static int s_take_runner(cr_supervisor_t *s, cr_proc_t *p)
{
    while (s->spare[0].pid > 0) {
        cr_proc_t c = s->spare[0];
        memmove(&s->spare[0], &s->spare[1], (CR_SPARES_MAX - 1) * sizeof s->spare[0]);
        s->spare[CR_SPARES_MAX - 1] = CR_PROC_NONE;
        if (cr_proc_alive(&c)) {
            *p = c;
            return 0;
        }
        cr_warn("spare runner %d ended while waiting for a job; starting another", (int)c.pid);
        cr_proc_discard(&c);
    }
    cr_proc_opts_t o;
    s_runner_opts(s, 0, &o);
    return cr_proc_spawn(&o, p);
}

/* A serving judge's leftovers once it is gone: the scratch folders of the
 * torch executors it started ahead (torch_judge.c), torch-<pid>-N. */
static void s_judge_gone(cr_supervisor_t *s, pid_t pid)
{
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "torch-%d-", (int)pid);
    DIR *d = opendir(s->scratch_root);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, (size_t)n) != 0)
            continue;
        char *path = cr_file_join(s->scratch_root, e->d_name);
        int rc = path ? cr_file_rmtree(path) : -ENOMEM;
        if (rc != 0)
            cr_warn("cannot remove %s/%s: %s", s->scratch_root, e->d_name, cr_strerror(rc));
        free(path);
    }
    closedir(d);
}

/* The serving judge (note 8): the one running, else one started now.
 * 0 with *p (a copy; s->judge stays its owner), or -errno. */
static int s_take_judge(cr_supervisor_t *s, cr_proc_t *p)
{
    static char serve[] = "--serve", prestart_flag[] = "--prestart", cuda[] = "cuda";
    if (s->judge.pid > 0 && !cr_proc_alive(&s->judge)) {
        cr_warn("the judge process %d ended between jobs; starting another", (int)s->judge.pid);
        pid_t gone = s->judge.pid;
        cr_proc_discard(&s->judge);
        s_judge_gone(s, gone);
    }
    if (s->judge.pid <= 0) {
        char *argv[5];
        int n = 0;
        argv[n++] = s->runner;
        argv[n++] = serve;
        if (s->prestart) {
            argv[n++] = prestart_flag;
            argv[n++] = cuda;
        }
        argv[n] = NULL;
        cr_proc_opts_t o;
        memset(&o, 0, sizeof o);
        o.argv = argv;
        int rc = cr_proc_spawn(&o, &s->judge);
        if (rc != 0)
            return rc;
        cr_info("supervisor: judge process %d serves this worker's %s jobs", (int)s->judge.pid,
                s->prestart ? "c, cuda and torch" : "c and torch");
    }
    *p = s->judge;
    return 0;
}

/* Whether job j goes to the serving judge (note 8). */
static int s_served(const cr_supervisor_t *s, const cr_wjob_t *j)
{
    const char *lang = j->task ? j->task->language : "";
    return s->serve && (!strcmp(lang, "c") || !strcmp(lang, "torch") ||
                        (s->prestart && !strcmp(lang, "cuda")));
}

/* cr_proc_opts_t.out_done of an exchange with the serving judge (note 8):
 * the token and exactly one whole frame. */
static int s_report_whole(pid_t pid, const char *out, size_t len, void *arg)
{
    (void)pid;
    const uint8_t *token = (const uint8_t *)arg, *payload = NULL;
    size_t plen = 0;
    return len > CR_RUNNER_TOKEN_LEN && memcmp(out, token, CR_RUNNER_TOKEN_LEN) == 0 &&
           cr_wire_frame_parse(out + CR_RUNNER_TOKEN_LEN, len - CR_RUNNER_TOKEN_LEN,
                               S_REPORT_CAP, &payload, &plen) == 0 &&
           plen + 4 == len - CR_RUNNER_TOKEN_LEN;
}

/* The state letter of pid's main thread (/proc/<pid>/stat, field 3), or 0;
 * 'X' when it is on its way out (PF_EXITING in field 9, the flags). */
static char s_proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold anything, ')' included */
    char st = 0;
    unsigned long flags = 0;
    if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &st, &flags) != 2)
        return 0;
    return flags & 0x4 ? 'X' : st; /* PF_EXITING, include/linux/sched.h */
}

/* cr_proc_opts_t.out_done (note 6): the report is complete (the token and
 * exactly one frame) and the runner parked behind it. */
static int s_report_complete(pid_t pid, const char *out, size_t len, void *arg)
{
    if (!s_report_whole(pid, out, len, arg))
        return 0;
    /* it closed the channel a moment ago: give it S_PARK_WAIT_MS to fall asleep */
    const int64_t until = cr_time_mono_ns() + (int64_t)S_PARK_WAIT_MS * 1000000;
    do {
        char st = s_proc_state(pid);
        if (st == 'S')
            return 1;
        if (st != 'R' && st != 'D')
            return 0; /* exiting, a zombie, gone or stopped: wait for its status */
        nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
    } while (cr_time_mono_ns() < until);
    return 0;
}

/* Runs the runner on a compiled job and records how it ended (header). */
static void s_run(cr_supervisor_t *s, cr_wjob_t *j)
{
    char rnd[32], how[96], tail[512];
    uint8_t seed[S_SEED_LEN], token[CR_RUNNER_TOKEN_LEN] = {0};
    uint8_t *frame = NULL;
    size_t flen = 0;
    char *scratch = NULL;
    cr_random_id("", rnd, sizeof rnd);
    scratch = cr_file_join(s->scratch_root, rnd);
    int rc = scratch ? cr_file_mkdirs(s->scratch_root, 0755) : -ENOMEM;
    if (rc == 0 && mkdir(scratch, 0700) != 0)
        rc = -errno;
    /* note 2: a root runner works in it as the sandbox uid (its tmpfs on top
     * is owned the same way; this is for when no tmpfs can be mounted) */
    uid_t su = (uid_t)s->cfg->sandbox_uid;
    if (rc == 0 && geteuid() == 0 && su > 0 && chown(scratch, su, (gid_t)su) != 0)
        rc = -errno;
    if (rc != 0) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cannot create scratch dir %s: %s",
                     scratch ? scratch : s->scratch_root, cr_strerror(rc));
        goto out;
    }
    /* REF_CACHED: reuse this worker's measurement of the reference, or
     * measure it now (interleaved) and keep it. An interleaved job gets it
     * as its anchor (note 4), and keeps the first one it measures. */
    char key[CR_HASH_HEX_LEN + 1] = "";
    int cache_ref = j->job->options &&
                    j->job->options->ref_policy == CRUCIBLE__REF_POLICY__REF_CACHED;
    s_ref_key(s, j, key);
    const s_refent_t *ref = s_ref_find(s, key);
    cr_random_bytes(seed, sizeof seed);
    cr_random_bytes(token, sizeof token);
    rc = s_request_frame(s, j, scratch, seed, token, ref, cache_ref, &frame, &flen);
    explicit_bzero(seed, sizeof seed); /* the frame holds it now; nothing else should */
    if (rc != 0) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cannot build runner request: %s",
                     cr_strerror(rc));
        goto out;
    }
    if (flen > CR_RUNNER_TOKEN_LEN + 4 + (size_t)CR_RUNNER_MAX_REQUEST) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                     "the runner request is %zu bytes, over the %u a runner reads (the task "
                     "and its paths)", flen - CR_RUNNER_TOKEN_LEN - 4, CR_RUNNER_MAX_REQUEST);
        goto out;
    }
    const Crucible__JobOptions *jo = j->job->options;
    double tmo = cr__wjob_cap(j, "run timeout", jo ? jo->run_timeout_s : 0, s->cfg->run_timeout_s,
                              S_DEFAULT_RUN_TIMEOUT_S);
    cr_proc_opts_t o;
    s_runner_opts(s, 0, &o);
    o.stdin_data = frame;
    o.stdin_len = flen;
    o.out_cap = S_REPORT_CAP;
    o.err_cap = CR_LEVEL_DEBUG >= cr__log_level ? S_STDERR_CAP_DEBUG : S_STDERR_CAP;
    o.timeout_ms = (int64_t)(tmo * 1000);
    o.out_done = s_report_complete;
    o.out_done_arg = token;
    cr_proc_result_t r;
    int64_t t_start = cr_time_now_ms();
    cr_proc_t p;
    int served = s_served(s, j);
    if (served) { /* note 8 */
        o.out_done = s_report_whole;
        const char *kept = j->task && !strcmp(j->task->language, "cuda")
                               ? j->so[CR_SO_REFERENCE]
                               : NULL;
        snprintf(s->last_ref, sizeof s->last_ref, "%s",
                 kept && strlen(kept) < sizeof s->last_ref ? kept : "");
        rc = s_take_judge(s, &p);
        if (rc == 0) {
            pthread_mutex_lock(&s->mu);
            *s->pid = p.pid; /* killable by Cancel and shutdown (note 1) */
            pthread_mutex_unlock(&s->mu);
            pid_t jp = p.pid;
            rc = cr_proc_exchange(&p, &o, &r);
            s->judge = rc == 0 && r.kept ? p : CR_PROC_NONE; /* else it is gone */
            if (!s->judge.pid)
                s_judge_gone(s, jp);
        }
    } else if ((rc = s_take_runner(s, &p)) == 0) {
        pthread_mutex_lock(&s->mu);
        *s->pid = p.pid; /* killable by Cancel and shutdown from now (note 1) */
        pthread_mutex_unlock(&s->mu);
        /* the spares started now load this job's objects ahead (note 5) */
        for (int k = 0; k < 2; k++) {
            const char *so = j->so[k == 0 ? CR_SO_REFERENCE : CR_SO_BASELINE];
            int fits = so && strlen(so) < sizeof s->preload[k];
            snprintf(s->preload[k], sizeof s->preload[k], "%s", fits ? so : "");
        }
        s_start_spares(s); /* while this one measures (note 5) */
        rc = cr_proc_wait(&p, &o, &r);
        cr_proc_reap(s->ending); /* the one before: it had this whole job to end (note 6) */
        s->ending = rc == 0 && r.detached ? r.pid : 0;
    }
    pthread_mutex_lock(&s->mu);
    *s->pid = 0; /* reaped (note 1) */
    pthread_mutex_unlock(&s->mu);
    j->t_finished = cr_time_now_ms();
    if (rc != 0) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cannot start runner %s: %s",
                     s->runner, cr_strerror(rc));
        goto out;
    }
    if (r.kept)
        cr_debug("judge pid %d: report complete %.3f s after its request", (int)r.pid, r.eof_s);
    else if (r.detached)
        cr_debug("runner pid %d: report complete %.3f s after its request; killed, reaped later",
                 (int)r.pid, r.eof_s);
    else
        cr_debug("runner pid %d: stdout ended %.3f s after its request, reaped %.3f s after that",
                 (int)r.pid, r.eof_s, r.exit_s > r.eof_s ? r.exit_s - r.eof_s : 0.0);
    s_stderr_tail(r.err, tail, sizeof tail);
    if (r.err_len > 0 && CR_LEVEL_DEBUG >= cr__log_level) {
        /* all of it (the last S_STDERR_CAP_DEBUG bytes): debugging wants the lot;
         * candidate bytes, so control characters other than newline and tab
         * are shown as '?' (no forged log lines, no terminal escapes), the C1
         * controls as UTF-8 writes them (C2 80-9F, CSI among them) too */
        for (size_t i = 0; i < r.err_len; i++) {
            unsigned char ch = (unsigned char)r.err[i];
            if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f)
                r.err[i] = '?';
            else if (ch == 0xc2 && i + 1 < r.err_len &&
                     (unsigned char)r.err[i + 1] >= 0x80 && (unsigned char)r.err[i + 1] <= 0x9f)
                r.err[i] = r.err[i + 1] = '?';
        }
        /* a line a log line: one message holds 2 KiB (log.c), and a torch
         * job's per-pair lines are tens of KiB; at most S_STDERR_LINES of
         * them (128 KiB of newlines would be 131,072 log lines) */
        cr_debug("runner stderr (%s), %zu bytes:", cr_proc_describe(&r, how, sizeof how),
                 r.err_len);
        unsigned nlines = 0;
        for (char *line = r.err, *end = r.err + r.err_len; line < end; nlines++) {
            char *nl = memchr(line, '\n', (size_t)(end - line));
            size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
            if (nlines == S_STDERR_LINES) {
                cr_debug("| ... (%zu more bytes not shown)", (size_t)(end - line));
                break;
            }
            cr_debug("| %.*s", (int)n, line);
            line += n + 1;
        }
    }
    const uint8_t *payload = NULL;
    size_t plen = 0;
    if (s_cancelled(j)) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_CANCELLED, "cancelled while running");
    } else if (served && !r.kept) {
        /* the judge loads no client code and keeps its own deadline for the
         * candidate (its TIMEOUT verdicts are in its report): a judge that
         * ended, broke the exchange or did not answer in time is not a
         * verdict (retried) */
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                     "the judge process ended (%s) without a report%s%s",
                     cr_proc_describe(&r, how, sizeof how), tail[0] ? "; stderr: " : "", tail);
    } else if (r.timed_out) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_TIMEOUT, "runner killed after %.1f s (run timeout)",
                     tmo);
    } else if (r.exited && r.exit_code == 127 && r.out_len == 0 && r.err_len == 0) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "runner %s could not be started",
                     s->runner);
    } else if (r.in_written < flen && !r.detached && !r.kept) {
        /* it never took its whole request, so no candidate code ran in it: a
         * spare that died as it was handed the job, or a runner that saw its
         * stdin end early and said so behind a token it never got; not a
         * verdict (retried) */
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                     "runner ended (%s) before reading its request%s%s",
                     cr_proc_describe(&r, how, sizeof how), tail[0] ? "; stderr: " : "", tail);
    } else if ((r.exited && r.exit_code == CR_RUNNER_EXIT_SANDBOX) ||
               (r.signaled && r.signal == SIGSYS)) {
        s_sandbox_violation(j, &r);
    } else if (r.signaled) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR, "candidate crashed: %s%s%s",
                     cr_proc_describe(&r, how, sizeof how), tail[0] ? "; stderr: " : "", tail);
    } else if (r.exited && r.exit_code == 0 && r.out_len > 0 &&
               (r.out_len < CR_RUNNER_TOKEN_LEN ||
                memcmp(r.out, token, CR_RUNNER_TOKEN_LEN) != 0)) {
        /* the runner's own code writes the token first: whatever came first
         * here was written by candidate code (then it ended the process) */
        s_hack_verdict(j, "report_forged",
                       "the report channel does not start with the runner's token: "
                       "the candidate wrote to it");
    } else if ((r.kept || r.detached || (r.exited && r.exit_code == 0)) &&
               r.out_len > CR_RUNNER_TOKEN_LEN) {
        const char *rep = r.out + CR_RUNNER_TOKEN_LEN;
        size_t replen = r.out_len - CR_RUNNER_TOKEN_LEN;
        if (r.out_truncated ||
            cr_wire_frame_parse(rep, replen, S_REPORT_CAP, &payload, &plen) != 0 ||
            cr_wire_record_unpack(payload, plen, &j->report) != 0) {
            j->report = NULL;
            cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                         "runner report unparsable (%zu bytes on stdout)", r.out_len);
        } else if (plen + 4 != replen) {
            s_report_forged(j, replen - plen - 4);
        } else {
            if (j->report->t_verified)
                j->t_verified = j->report->t_verified;
            else if (j->report->verify)
                j->t_verified = t_start + (int64_t)(j->report->verify->seconds * 1000);
            if (!ref)
                s_ref_store(s, j, key);
        }
    } else {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR,
                     "runner exited with code %d without a report: the candidate ended the "
                     "process%s%s",
                     r.exit_code, tail[0] ? "; stderr: " : "", tail);
    }
    if (!j->report)
        s_reset_clocks_after(s, j);
    cr_proc_result_close(&r);
out:
    explicit_bzero(token, sizeof token);
    if (frame) {
        explicit_bzero(frame, flen); /* the seed is inside */
        free(frame);
    }
    if (scratch) {
        int e = cr_file_rmtree(scratch);
        if (e != 0)
            cr_warn("cannot remove scratch dir %s: %s", scratch, cr_strerror(e));
        free(scratch);
    }
}

/* ---- thread and queue ---- */

/* Note 7: `crucible-runner flag` (--measure-device: the GPU's copy
 * bandwidth) into *out; leaves it 0 when the runner cannot say. */
static void s_measure_bw(cr_supervisor_t *s, char *flag, const char *what, double *out,
                         double *peak)
{
    char *argv[] = {s->runner, flag, NULL};
    cr_proc_opts_t o;
    memset(&o, 0, sizeof o);
    o.argv = argv;
    o.out_cap = 256;
    o.err_cap = 1024;
    o.timeout_ms = S_MEASURE_TIMEOUT_MS;
    cr_proc_result_t r;
    cr_proc_t p;
    int rc = cr_proc_spawn(&o, &p);
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        int stop = s->stop;
        if (!stop)
            *s->pid = p.pid; /* shutdown kills it rather than wait (note 1) */
        pthread_mutex_unlock(&s->mu);
        if (stop) {
            cr_proc_discard(&p);
            return;
        }
        rc = cr_proc_wait(&p, &o, &r);
        pthread_mutex_lock(&s->mu);
        *s->pid = 0;
        pthread_mutex_unlock(&s->mu);
    }
    double bw = 0, flops = 0;
    int got = rc == 0 && r.exited && r.exit_code == 0
                  ? sscanf(r.out, "copy_bw %lf peak_flops %lf", &bw, &flops)
                  : 0;
    if (got >= 1 && isfinite(bw) && bw > 0) { /* the runner prints only a plausible figure */
        *out = bw;
        if (peak && got == 2 && isfinite(flops) && flops > 0)
            *peak = flops;
        cr_info("supervisor: %s copy bandwidth %.0f GB/s, measured at start in %.2f s "
                "(roofline floor)", what, bw / 1e9, r.seconds);
    } else {
        char last[512] = "";
        if (rc == 0)
            s_stderr_tail(r.err, last, sizeof last);
        cr_warn("supervisor: %s bandwidth not measured at start (%s%s%s); %s", what,
                rc != 0              ? cr_strerror(rc)
                : r.timed_out        ? "timed out"
                : r.exit_code == 0 ? "no plausible copy_bw line"
                                     : "runner failed",
                last[0] ? ": " : "", last,
                out == &s->copy_bw ? "each runner measures its own" : "no roofline floor");
    }
    if (rc == 0)
        cr_proc_result_close(&r);
}

static void *s_thread(void *arg)
{
    cr_supervisor_t *s = arg;
    static char dev_flag[] = "--measure-device";
    if (s->prestart)
        s_measure_bw(s, dev_flag, "GPU", &s->copy_bw, &s->peak_flops);
    if (cr_config_has_backend(s->cfg->backends, "c") ||
        cr_config_has_backend(s->cfg->backends, "torch")) { /* both judges' host floor */
        int64_t t0 = cr_time_mono_ns();
        if (cr_topo_copy_bw(&s->host_bw) == 0)
            cr_info("supervisor: host copy bandwidth %.1f GB/s, measured at start in %.2f s "
                    "(the CPU judge's roofline floor)", s->host_bw / 1e9,
                    (double)(cr_time_mono_ns() - t0) / 1e9);
    }
    pthread_mutex_lock(&s->mu);
    int stopping = s->stop;
    pthread_mutex_unlock(&s->mu);
    if (!stopping && s->serve) {
        cr_proc_t p;
        int rc = s_take_judge(s, &p); /* its context made before the first compile ends */
        if (rc != 0)
            cr_warn("cannot start the judge process %s: %s; the first job tries again",
                    s->runner, cr_strerror(rc));
    } else if (!stopping) {
        s_start_spares(s); /* ready before the first job's compile ends (note 5) */
    }
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && !s->queue.head)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->stop)
            break;
        cr_wjob_t *j = cr__wqueue_pop_near(&s->queue, s->last_ref[0] ? s->last_ref : NULL);
        s->running = j;
        pthread_mutex_unlock(&s->mu);

        if (s_cancelled(j))
            cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_CANCELLED, "cancelled before running");
        else
            s_run(s, j);

        pthread_mutex_lock(&s->mu);
        s->running = NULL;
        s->npending--;
        if (s->stop) {
            cr_wjob_destroy(&j);
            break;
        }
        pthread_mutex_unlock(&s->mu);
        s_finish(s, j);
        s->deliver(j, s->deliver_arg);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The runner that sits next to our own executable (the install layout). */
static void s_default_runner(char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(out, len, "crucible-runner");
        return;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, len, "%.*s/crucible-runner", (int)(len - 17), self);
}

cr_supervisor_t *cr_supervisor_new(const cr_config_t *cfg, const cr_ident_t *id,
                                   cr_sup_deliver_fn deliver, void *arg)
{
    cr_supervisor_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = cfg;
    s->id = id;
    s->deliver = deliver;
    s->deliver_arg = arg;
    /* a runner that exits before reading its request must not kill us with
     * SIGPIPE while cr_proc_run writes it; children get SIG_DFL back (proc.c) */
    signal(SIGPIPE, SIG_IGN);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (cfg->runner[0])
        snprintf(s->runner, sizeof s->runner, "%s", cfg->runner);
    else
        s_default_runner(s->runner, sizeof s->runner);
    if (access(s->runner, X_OK) != 0)
        cr_warn("runner %s is not executable (%s): every job will end INFRA_ERROR", s->runner,
                strerror(errno));
    s->scratch_root = cr_file_join(cfg->work_dir, "scratch");
    for (int i = 0; i < CR_SPARES_MAX; i++)
        s->spare[i] = CR_PROC_NONE;
    /* -1 (auto) is sized by the worker (worker.c s_autosize); a supervisor made
     * from an unsized config keeps the default of note 5 */
    s->nspares = (int)(cfg->spares < 0                ? 4
                       : cfg->spares < CR_SPARES_MAX ? cfg->spares
                                                     : CR_SPARES_MAX);
    s->prestart = cr_config_has_backend(cfg->backends, "cuda");
    s->serve = cfg->runner_per_job == 0;
    s->judge = CR_PROC_NONE;
    s->pid = mmap(NULL, sizeof(pid_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s->pid == MAP_FAILED)
        s->pid = NULL;
    if (!s->scratch_root || !s->pid || pthread_create(&s->thread, NULL, s_thread, s) != 0) {
        cr_error("supervisor: cannot start (out of memory or threads)");
        cr_supervisor_destroy(&s);
        return NULL;
    }
    s->started = 1;
    return s;
}

void cr_supervisor_submit(cr_supervisor_t *s, cr_wjob_t *job)
{
    if (job->status) {
        if (!job->t_finished)
            job->t_finished = cr_time_now_ms();
        s_finish(s, job);
        s->deliver(job, s->deliver_arg);
        return;
    }
    pthread_mutex_lock(&s->mu);
    cr__wqueue_push(&s->queue, job);
    s->npending++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int cr_supervisor_cancel(cr_supervisor_t *s, const char *batch_id, const char *job_id)
{
    int found = 0;
    pthread_mutex_lock(&s->mu);
    cr_wjob_t *gone = cr__wqueue_take(&s->queue, batch_id, job_id, &found);
    s->npending -= found;
    if (s->running && cr__wjob_matches(s->running, batch_id, job_id)) {
        found++;
        __atomic_store_n(&s->running->cancelled, 1, __ATOMIC_SEQ_CST);
        cr__kill_slot(s->pid);
    }
    pthread_mutex_unlock(&s->mu);
    while (gone) {
        cr_wjob_t *j = gone;
        gone = j->next;
        j->next = NULL;
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_CANCELLED, "cancelled before running");
        cr_supervisor_submit(s, j);
    }
    return found;
}

int cr_supervisor_pending(cr_supervisor_t *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->npending;
    pthread_mutex_unlock(&s->mu);
    return n;
}

const char *cr_supervisor_runner(const cr_supervisor_t *s)
{
    return s->runner;
}

void cr_supervisor_destroy(cr_supervisor_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_supervisor_t *s = *self_p;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    cr__kill_slot(s->pid); /* shutdown does not wait out a measurement */
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->started)
        pthread_join(s->thread, NULL);
    for (cr_wjob_t *j; (j = cr__wqueue_pop(&s->queue));)
        cr_wjob_destroy(&j);
    for (int i = 0; i < CR_SPARES_MAX; i++)
        cr_proc_discard(&s->spare[i]); /* joined: the thread no longer touches them */
    pid_t judge = s->judge.pid;
    cr_proc_discard(&s->judge);
    if (judge > 0)
        s_judge_gone(s, judge);
    cr_proc_reap(s->ending);
    if (s->pid)
        munmap(s->pid, sizeof(pid_t));
    s_ref_free(s);
    free(s->scratch_root);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    *self_p = NULL;
}
