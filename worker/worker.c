/* worker.c — see worker.h.
 *
 * Threads: the main loop (this file) owns the socket and every piece of
 * connection state; the compile pool and the supervisor own jobs while they
 * work on them. Finished jobs cross back through a mutex-protected list and
 * an eventfd that zmq_poll watches beside the socket, so the main loop sleeps
 * until a message, a result or a timer is due.
 *
 * Invariants.
 *  1. Every assigned job yields exactly one Result (protocol step 3), kept
 *     in the unacked list until an Ack names it; it is resent every 5 s and
 *     whenever the connection starts over.
 *  2. in_flight counts jobs assigned and not yet finished: Heartbeat reports
 *     it so the coordinator can check its credit bookkeeping.
 *  3. The task cache holds the bundles received since the last Ready sent
 *     (taskcache.h); a job naming a bundle it does not hold is dropped, and
 *     the worker says Ready again: the coordinator then requeues what it
 *     had assigned here and sends every bundle anew. */
#define _GNU_SOURCE
#include "worker.h"

#include "compile.h"
#include "curve.h"
#include "error.h"
#include "hash.h"
#include "jobmetrics.h"
#include "log.h"
#include "metrics.h"
#include "nvml.h"
#include "placement.h"
#include "supervisor.h"
#include "taskcache.h"
#include "timeutil.h"
#include "topo.h"
#include "wire.h"
#include "workdir.h"

#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

/* 5 s between resends of an unacknowledged result (docs/protocol.md). */
#define S_RESEND_MS 5000
/* Reconnect backoff: the guide's Paranoid Pirate starts near 1 s; we start at
 * 100 ms so a restarted coordinator on the same host is found at once. */
#define S_BACKOFF_MIN_MS 100
#define S_BACKOFF_MAX_MS 5000
/* Fallbacks when the config leaves the heartbeat at 0. */
#define S_DEFAULT_HEARTBEAT_MS 1000
#define S_DEFAULT_LIVENESS 3
/* Credit: two compile pools' worth, plus one job running and one waiting for
 * the core. One pool's worth let the GPU run dry at the start of a batch: the
 * first wave of compiles ends together, and the jobs assigned as its results
 * come back need a compile of their own (a new task's reference with it, ~3 s
 * with the pool busy) while the runner works through the wave in about as
 * long (session 7: 0.8 s of a 20 s, 64-candidate batch waited for a compile).
 * With two, the second wave compiles while the first is measured. */
#define S_CREDIT_POOLS 2
#define S_CREDIT_EXTRA 2
#define S_MAX_BACKENDS 8 /* Ready.backends room: "c", "cuda", "torch" and growth */
/* Auto sizing (s_autosize). A compile of a heavy CUDA candidate (CUTLASS,
 * CUB templates) peaks near 1 GiB resident in nvcc's cicc; a C compile far
 * less: one per GiB of available memory never swaps. */
#define S_COMPILE_MEM (1ull << 30)
/* 4 spares: the default that kept the runner's start off the critical path
 * (worker/supervisor.c note 5). Each spare holds a CUDA context (~0.5 GiB of
 * device memory) and a judge arena of at most 4 GiB and 1/12 of the free GPU
 * memory, plus ~256 MiB of host memory. */
#define S_SPARES_AUTO 4
#define S_SPARE_HOST_MEM (256ull << 20)
#define S_SPARE_GPU_MEM (2ull << 30) /* 0.5 GiB context + an arena on a small GPU */
/* Throughput and GPU-busy windows: one bucket per second over a minute, as
 * the coordinator's jobs-per-minute. */
#define S_WINDOW_S 60

typedef struct s_unacked {
    Crucible__RewardRecord *rec; /* owned (free_unpacked) */
    int64_t sent_ms;             /* monotonic ms of the last send attempt */
    struct s_unacked *next;
} s_unacked_t;

struct cr_worker {
    /* --- set at creation --- */
    cr_config_t cfg;                 /* our copy: the pool and supervisor point into it */
    cr_ident_t id;                   /* worker id, host, device */
    char arch[65];                   /* uname machine, or "sm_90" for a GPU worker */
    char gpu_uuid[96];               /* NVML uuid of the GPU served; "" = none */
    uint32_t gpus;                   /* GPUs it owns (--gpu-group; docs/multigpu.md); 0 = one */
    int nvlink;                      /* every pair of them is joined by NVLink */
    uint64_t gpu_memory;             /* bytes; 0 = unknown */
    int64_t heartbeat_ms;            /* ms */
    int64_t liveness;                /* silent heartbeats before we reconnect */
    void *ctx;                       /* ZeroMQ context; owned */
    int evfd;                        /* eventfd: a job finished, or stop */
    cr_compile_t *pool;              /* owned */
    cr_supervisor_t *sup;            /* owned */
    cr_taskcache_t *tasks;           /* owned: bundles sent since our last Ready (invariant 3) */
    /* --- crossing threads --- */
    pthread_mutex_t mu;              /* guards the done list */
    cr__wqueue_t done;               /* finished jobs for the main loop */
    int stop;                        /* set by cr_worker_stop (atomic) */
    /* --- main loop only --- */
    void *sock;                      /* DEALER; owned; NULL while DOWN */
    s_unacked_t *unacked;            /* results waiting for Ack; owned */
    int nunacked;
    int result_batches;              /* 1: the coordinator of this connection said it reads
                                        Result.records (Assign.result_batches) */
    int in_flight;                   /* invariant 2 */
    int64_t last_heard;              /* mono ms: last message from the coordinator */
    int64_t next_heartbeat;          /* mono ms */
    int64_t reconnect_at;            /* mono ms: when DOWN, when to connect again */
    int64_t backoff_ms;              /* next backoff */
    /* --- metrics (main loop only; NULL when --metrics-addr is empty) --- */
    cr_metrics_t *metrics;           /* owned */
    cr_metrics_http_t *http;         /* owned; GET /metrics */
    char mlabels[300];               /* worker="<id>": in front of every series */
    int64_t started_ms;              /* monotonic ms at creation */
    double busy_s[S_WINDOW_S];       /* s the runner measured, per second % S_WINDOW_S */
    uint32_t evals[S_WINDOW_S];      /* records finished, per second % S_WINDOW_S */
    int64_t win_sec[S_WINDOW_S];     /* which second each bucket holds */
};

static volatile sig_atomic_t s_signalled; /* SIGTERM/SIGINT under cr_worker_main */

/* ---- metrics ---- */

static const struct {
    const char *name;
    cr_metric_type_t type;
    const char *help;
} s_wmetrics[] = {
    {"crucible_worker_info", CR_METRIC_GAUGE, "1, labelled with the worker's identity"},
    {"crucible_worker_connected", CR_METRIC_GAUGE, "1 while connected to the coordinator"},
    {"crucible_worker_in_flight", CR_METRIC_GAUGE, "jobs assigned and not yet finished"},
    {"crucible_worker_credit", CR_METRIC_GAUGE, "jobs the worker offers to hold at once"},
    {"crucible_worker_unacked", CR_METRIC_GAUGE, "results sent and not yet acknowledged"},
    {"crucible_worker_compile_jobs", CR_METRIC_GAUGE, "compile pool size in use"},
    {"crucible_worker_spares", CR_METRIC_GAUGE, "runners kept started ahead"},
    {"crucible_worker_evaluations_per_second", CR_METRIC_GAUGE,
     "records finished per second over the last minute"},
    {"crucible_worker_gpu_busy_fraction", CR_METRIC_GAUGE,
     "share of the last minute the runner spent verifying and timing"},
    {"crucible_worker_gpu_busy_seconds_total", CR_METRIC_COUNTER,
     "seconds the runner spent verifying and timing"},
};

/* Declares the worker's families and opens the listener. Returns 0, or
 * CR_E_USAGE (logged) when the address cannot be listened on. */
static int s_metrics_init(cr_worker_t *w)
{
    w->started_ms = cr_time_mono_ms();
    if (!w->cfg.metrics_addr[0])
        return 0;
    w->metrics = cr_metrics_new();
    if (!w->metrics)
        return -ENOMEM;
    int rc = cr_jobmetrics_declare(w->metrics, "crucible_worker");
    for (size_t i = 0; rc == 0 && i < sizeof s_wmetrics / sizeof s_wmetrics[0]; i++)
        rc = cr_metrics_declare(w->metrics, s_wmetrics[i].name, s_wmetrics[i].type,
                                s_wmetrics[i].help, NULL, 0);
    if (rc != 0)
        return rc;
    char id[240], host[200], dev[300], arch[80], lab[900];
    snprintf(w->mlabels, sizeof w->mlabels, "worker=\"%s\"",
             cr_metrics_label_escape(w->id.worker_id, id, sizeof id));
    snprintf(lab, sizeof lab, "%s,host=\"%s\",device=\"%s\",arch=\"%s\"", w->mlabels,
             cr_metrics_label_escape(w->id.host, host, sizeof host),
             cr_metrics_label_escape(w->id.device, dev, sizeof dev),
             cr_metrics_label_escape(w->arch, arch, sizeof arch));
    cr_metrics_set(w->metrics, "crucible_worker_info", lab, 1);
    cr_metrics_add(w->metrics, "crucible_worker_gpu_busy_seconds_total", w->mlabels, 0);
    char err[512];
    w->http = cr_metrics_http_new(w->cfg.metrics_addr, w->metrics, err, sizeof err);
    if (!w->http) {
        cr_error("worker: %s", err);
        return CR_E_USAGE;
    }
    cr_info("worker: metrics on http://%s/metrics (port %d)", w->cfg.metrics_addr,
            cr_metrics_http_port(w->http));
    return 0;
}

/* The bucket of the current second, emptied when it held an older one. */
static int s_window_slot(cr_worker_t *w, int64_t sec)
{
    int i = (int)(sec % S_WINDOW_S);
    if (w->win_sec[i] != sec) {
        w->win_sec[i] = sec;
        w->busy_s[i] = 0;
        w->evals[i] = 0;
    }
    return i;
}

static void s_metrics_record(cr_worker_t *w, const Crucible__RewardRecord *rec)
{
    if (!w->metrics)
        return;
    cr_jobmetrics_record(w->metrics, "crucible_worker", w->mlabels, rec);
    double busy = (rec->verify ? rec->verify->seconds : 0) +
                  (rec->profile ? rec->profile->seconds : 0);
    if (!(busy >= 0))
        busy = 0;
    int i = s_window_slot(w, cr_time_mono_ms() / 1000);
    w->busy_s[i] += busy;
    w->evals[i]++;
    cr_metrics_add(w->metrics, "crucible_worker_gpu_busy_seconds_total", w->mlabels, busy);
}

/* The gauges, as of now: called just before a scrape is answered. */
static void s_metrics_refresh(cr_worker_t *w)
{
    int64_t now = cr_time_mono_ms(), sec = now / 1000;
    double busy = 0, evals = 0;
    for (int i = 0; i < S_WINDOW_S; i++)
        if (sec - w->win_sec[i] < S_WINDOW_S) {
            busy += w->busy_s[i];
            evals += w->evals[i];
        }
    /* a worker up for less than the window divides by its uptime */
    double span = (double)(now - w->started_ms) / 1000.0;
    span = span < 1 ? 1 : span > S_WINDOW_S ? S_WINDOW_S : span;
    cr_metrics_t *m = w->metrics;
    cr_metrics_set(m, "crucible_worker_connected", w->mlabels, w->sock != NULL);
    cr_metrics_set(m, "crucible_worker_in_flight", w->mlabels, w->in_flight);
    cr_metrics_set(m, "crucible_worker_unacked", w->mlabels, w->nunacked);
    cr_metrics_set(m, "crucible_worker_credit", w->mlabels,
                   (double)(S_CREDIT_POOLS * w->cfg.compile_jobs + S_CREDIT_EXTRA));
    cr_metrics_set(m, "crucible_worker_compile_jobs", w->mlabels, (double)w->cfg.compile_jobs);
    cr_metrics_set(m, "crucible_worker_spares", w->mlabels, (double)w->cfg.spares);
    cr_metrics_set(m, "crucible_worker_evaluations_per_second", w->mlabels, evals / span);
    cr_metrics_set(m, "crucible_worker_gpu_busy_fraction", w->mlabels,
                   busy / span > 1 ? 1 : busy / span);
}

/* ---- sizing from the machine ---- */

/* Bytes of MemAvailable in /proc/meminfo; 0 when unknown. */
static uint64_t s_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

/* Sizes what the config left to us (compile-jobs 0, spares -1) from the
 * machine as the worker finds it after binding: the cores it may use (for a
 * GPU worker those local to its GPU, s_gpu_identity), host memory available
 * and, for a cuda worker, free GPU memory. Every choice is logged with its
 * inputs; an explicit setting is kept and logged as such. */
static void s_autosize(cr_worker_t *w, uint64_t gpu_free)
{
    cpu_set_t set;
    int ncpu = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    uint64_t mem = s_mem_available();
    if (w->cfg.compile_jobs <= 0) {
        /* one core stays free for the runner's timing thread */
        int64_t n = ncpu > 1 ? ncpu - 1 : 1;
        int64_t by_mem = mem ? (int64_t)(mem / S_COMPILE_MEM) : n;
        if (by_mem < 1)
            by_mem = 1;
        w->cfg.compile_jobs = n < by_mem ? n : by_mem;
        if (w->cfg.compile_jobs > 256)
            w->cfg.compile_jobs = 256;
        cr_info("worker: compile-jobs auto = %lld (%d usable core%s less 1 for timing; %.1f GiB "
                "available allows %lld); set --compile-jobs to override",
                (long long)w->cfg.compile_jobs, ncpu, ncpu == 1 ? "" : "s",
                (double)mem / (1 << 30), (long long)by_mem);
    } else {
        cr_info("worker: compile-jobs %lld (set; %d usable cores)", (long long)w->cfg.compile_jobs,
                ncpu);
    }
    if (w->cfg.spares < 0) {
        int64_t n = S_SPARES_AUTO;
        int64_t by_host = mem ? (int64_t)(mem / 4 / S_SPARE_HOST_MEM) : n; /* a quarter of it */
        int64_t by_gpu = gpu_free ? (int64_t)(gpu_free / S_SPARE_GPU_MEM) - 1 : n; /* one runs */
        if (by_host < n)
            n = by_host;
        if (by_gpu < n)
            n = by_gpu;
        if (n < 0)
            n = 0;
        w->cfg.spares = n;
        cr_info("worker: spares auto = %lld (at most %d; %.1f GiB host memory available, "
                "%s%.1f GiB GPU memory free); set --spares to override",
                (long long)n, S_SPARES_AUTO, (double)mem / (1 << 30), gpu_free ? "" : "unknown: ",
                (double)gpu_free / (1 << 30));
    } else {
        cr_info("worker: spares %lld (set)", (long long)w->cfg.spares);
    }
}

/* ---- identity ---- */

/* ---- results from the supervisor thread ---- */

static void s_deliver(cr_wjob_t *job, void *arg)
{
    cr_worker_t *w = arg;
    pthread_mutex_lock(&w->mu);
    cr__wqueue_push(&w->done, job);
    pthread_mutex_unlock(&w->mu);
    uint64_t one = 1;
    ssize_t n = write(w->evfd, &one, sizeof one);
    (void)n; /* a full counter still wakes the loop */
}

/* The pool's hand-off: straight to the supervisor (it runs under the pool's
 * lock, compile.h). */
static void s_compiled(cr_wjob_t *job, void *arg)
{
    cr_worker_t *w = arg;
    cr_supervisor_submit(w->sup, job);
}

/* ---- sending ---- */

static int s_send(cr_worker_t *w, Crucible__Envelope *env)
{
    if (!w->sock)
        return CR_E_ZMQ;
    int rc = cr_wire_send(w->sock, NULL, env);
    if (rc != 0)
        cr_debug("send %s failed: %s", cr_wire_body_name(env), cr_strerror(rc));
    return rc;
}

static void s_send_ready(cr_worker_t *w)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Ready r = CRUCIBLE__READY__INIT;
    r.worker_id = w->id.worker_id;
    r.host = w->id.host;
    char *backends[S_MAX_BACKENDS];
    r.backends = backends;
    r.n_backends = (size_t)cr_compile_backends(w->pool, backends, S_MAX_BACKENDS);
    r.credit = (uint32_t)(S_CREDIT_POOLS * (w->cfg.compile_jobs > 0 ? w->cfg.compile_jobs : 1) +
                          S_CREDIT_EXTRA);
    r.device_name = w->id.device;
    r.device_uuid = w->gpu_uuid;
    r.memory_bytes = w->gpu_memory;
    r.arch = w->arch;
    r.compiler = (char *)cr_compile_compiler(w->pool);
    r.task_cache = 1;
    r.assign_acks = 1;
    r.gpus = w->gpus;
    r.nvlink = w->nvlink;
#ifdef CR_WITH_NCCL /* the runner beside us judges multi-GPU tasks (docs/multigpu.md) */
    r.nccl = cr_config_has_backend(w->cfg.backends, "cuda");
#endif
    /* the coordinator forgets what it sent us when it registers us anew */
    cr_taskcache_clear(w->tasks);
    env.body_case = CRUCIBLE__ENVELOPE__BODY_READY;
    env.ready = &r;
    s_send(w, &env);
}

static int s_send_result(cr_worker_t *w, s_unacked_t *u)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    res.record = u->rec;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    int rc = s_send(w, &env);
    /* a failed send waits for the next resend too: no spinning on a full pipe;
     * a new connection resends everything anyway (s_hello) */
    u->sent_ms = cr_time_mono_ms();
    return rc;
}

/* Sends the results us[0..n) just finished: in Results of up to
 * CR_WIRE_RESULT_BATCH records and half the message cap (--max-msg, the
 * coordinator's as well by default: a batch it would refuse as too big
 * would wait for the resend) to a coordinator that reads them
 * (Assign.result_batches), else, and for a record too big to share a
 * message, one each. A send that fails waits for the resend. */
static void s_send_results(cr_worker_t *w, s_unacked_t **us, size_t n)
{
    size_t cap = (w->cfg.max_msg > 0 ? (size_t)w->cfg.max_msg : CR_WIRE_MAX_MSG) / 2;
    for (size_t i = 0; i < n;) {
        size_t k = 0, bytes = 0;
        while (w->result_batches && i + k < n && k < CR_WIRE_RESULT_BATCH) {
            size_t sz = crucible__reward_record__get_packed_size(us[i + k]->rec) + 8;
            if (bytes + sz > cap)
                break;
            bytes += sz;
            k++;
        }
        if (k <= 1) {
            s_send_result(w, us[i++]);
            continue;
        }
        Crucible__RewardRecord *recs[CR_WIRE_RESULT_BATCH];
        for (size_t j = 0; j < k; j++)
            recs[j] = us[i + j]->rec;
        Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
        Crucible__Result res = CRUCIBLE__RESULT__INIT;
        res.n_records = k;
        res.records = recs;
        env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
        env.result = &res;
        s_send(w, &env);
        int64_t now = cr_time_mono_ms();
        for (size_t j = 0; j < k; j++)
            us[i + j]->sent_ms = now;
        i += k;
    }
}

/* Resends the unacked results last sent before `before` (mono ms). */
static void s_resend(cr_worker_t *w, int64_t before)
{
    int n = 0;
    for (s_unacked_t *u = w->unacked; u; u = u->next)
        if (u->sent_ms <= before && s_send_result(w, u) == 0)
            n++;
    if (n > 0)
        cr_debug("resent %d unacknowledged result%s", n, n == 1 ? "" : "s");
}

/* Entering UP, or the coordinator forgot us: Ready, then every unacked result.
 * A coordinator that does not know us may be another one: results go one
 * a message until its Assign says it reads them together. */
static void s_hello(cr_worker_t *w)
{
    w->result_batches = 0;
    s_send_ready(w);
    s_resend(w, INT64_MAX);
}

/* ---- connection ---- */

/* DOWN -> UP. On failure stays DOWN with the backoff doubled. */
static int s_connect(cr_worker_t *w)
{
    int64_t now = cr_time_mono_ms();
    void *s = zmq_socket(w->ctx, ZMQ_DEALER);
    if (!s)
        goto fail;
    size_t idlen = strlen(w->id.worker_id);
    if (idlen > CR_WIRE_MAX_ID)
        idlen = CR_WIRE_MAX_ID;
    size_t max = w->cfg.max_msg > 0 ? (size_t)w->cfg.max_msg : CR_WIRE_MAX_MSG;
    /* keys are read on every connect: a replaced key file takes effect on reconnect */
    const char *ep = w->cfg.workers_endpoint;
    cr_curve_t cv;
    char err[512];
    if (cr_curve_setup(&w->cfg, 0, &ep, 1, &cv, err, sizeof err) != 0) {
        cr_error("worker: %s", err);
        zmq_close(s);
        goto fail;
    }
    int crc = cr_curve_apply(s, &cv);
    explicit_bzero(&cv, sizeof cv);
    if (crc != 0 || zmq_setsockopt(s, ZMQ_ROUTING_ID, w->id.worker_id, idlen) != 0 ||
        cr_wire_socket_caps(s, max) != 0 || zmq_connect(s, w->cfg.workers_endpoint) != 0) {
        cr_error("cannot connect to %s: %s", w->cfg.workers_endpoint, zmq_strerror(zmq_errno()));
        zmq_close(s);
        goto fail;
    }
    w->sock = s;
    w->result_batches = 0; /* a coordinator says so anew on each connection */
    w->last_heard = now;
    w->next_heartbeat = now + w->heartbeat_ms;
    w->reconnect_at = 0;
    cr_info("connected to %s as %s (%d unacknowledged result%s)", w->cfg.workers_endpoint,
            w->id.worker_id, w->nunacked, w->nunacked == 1 ? "" : "s");
    s_hello(w);
    return 0;
fail:
    w->reconnect_at = now + w->backoff_ms;
    w->backoff_ms = w->backoff_ms * 2 > S_BACKOFF_MAX_MS ? S_BACKOFF_MAX_MS : w->backoff_ms * 2;
    return CR_E_ZMQ;
}

/* UP -> DOWN: close the socket, schedule the next connect after the backoff. */
static void s_disconnect(cr_worker_t *w, const char *why)
{
    cr_warn("coordinator at %s %s; reconnecting in %lld ms", w->cfg.workers_endpoint, why,
            (long long)w->backoff_ms);
    zmq_close(w->sock);
    w->sock = NULL;
    w->reconnect_at = cr_time_mono_ms() + w->backoff_ms;
    w->backoff_ms = w->backoff_ms * 2 > S_BACKOFF_MAX_MS ? S_BACKOFF_MAX_MS : w->backoff_ms * 2;
}

/* ---- coordinator messages: one handler per body ---- */

static void s_on_ack(cr_worker_t *w, const Crucible__Ack *a);

static void s_on_assign(cr_worker_t *w, const Crucible__Assign *a)
{
    if (a->result_batches)
        w->result_batches = 1;
    for (size_t i = 0; i < a->n_acks; i++)
        s_on_ack(w, a->acks[i]);
    int unknown = 0;
    for (size_t i = 0; i < a->n_jobs; i++) {
        /* a job may name its bundle by hash (invariant 3) */
        Crucible__Job job = *a->jobs[i];
        Crucible__TaskBundle tb;
        if (job.task && cr_taskcache_resolve(w->tasks, a->tasks, a->n_tasks, job.task, &tb) != 0) {
            cr_warn("assign: job %s/%s names task bundle %s, which was never sent here: dropped",
                    job.batch_id, job.spec ? job.spec->job_id : "?", job.task->hash);
            unknown++;
            continue;
        }
        if (job.task)
            job.task = &tb;
        cr_wjob_t *j = cr_wjob_new(&job);
        if (!j) {
            cr_warn("assign: job %zu has no spec or task bundle (or no memory): dropped", i);
            continue;
        }
        char name[300];
        cr_debug("job %s attempt %u: assigned", cr_wjob_name(j, name, sizeof name),
                 j->job->attempt);
        w->in_flight++;
        cr_compile_submit(w->pool, j);
    }
    for (size_t i = 0; i < a->n_tasks; i++)
        if (cr_taskcache_put(w->tasks, a->tasks[i]) != 0)
            unknown++; /* not kept: the coordinator must send it again */
    if (unknown) {
        cr_warn("assign: %d task bundle%s missing or not kept: registering again", unknown,
                unknown == 1 ? "" : "s");
        s_hello(w);
    }
}

static void s_on_ack(cr_worker_t *w, const Crucible__Ack *a)
{
    for (s_unacked_t **pp = &w->unacked; *pp; pp = &(*pp)->next) {
        Crucible__RewardRecord *r = (*pp)->rec;
        if (r->attempt != a->attempt || strcmp(r->batch_id, a->batch_id) != 0 ||
            strcmp(r->job_id, a->job_id) != 0)
            continue;
        s_unacked_t *u = *pp;
        *pp = u->next;
        crucible__reward_record__free_unpacked(u->rec, NULL);
        free(u);
        w->nunacked--;
        return;
    }
    cr_debug("ack for %s/%s attempt %u matches no pending result", a->batch_id, a->job_id,
             a->attempt);
}

static void s_on_cancel(cr_worker_t *w, const Crucible__Cancel *c)
{
    int n = cr_compile_cancel(w->pool, c->batch_id, c->job_id);
    n += cr_supervisor_cancel(w->sup, c->batch_id, c->job_id);
    cr_info("cancel %s/%s: %d job%s stopped", c->batch_id, c->job_id[0] ? c->job_id : "*", n,
            n == 1 ? "" : "s");
}

static void s_handle_coordinator(cr_worker_t *w)
{
    for (;;) {
        if (!w->sock)
            return;
        Crucible__Envelope *env = NULL;
        int rc = cr_wire_recv(w->sock, NULL, &env);
        if (rc == -EAGAIN)
            return;
        if (rc == CR_E_ZMQ) {
            s_disconnect(w, "socket error");
            return;
        }
        w->last_heard = cr_time_mono_ms(); /* any message is a sign of life */
        w->backoff_ms = S_BACKOFF_MIN_MS;
        if (rc != 0) {
            cr_warn("undecodable message from the coordinator: %s", cr_strerror(rc));
            continue;
        }
        switch (env->body_case) {
        case CRUCIBLE__ENVELOPE__BODY_ASSIGN:
            s_on_assign(w, env->assign);
            break;
        case CRUCIBLE__ENVELOPE__BODY_ACK:
            s_on_ack(w, env->ack);
            break;
        case CRUCIBLE__ENVELOPE__BODY_CANCEL:
            s_on_cancel(w, env->cancel);
            break;
        case CRUCIBLE__ENVELOPE__BODY_DISCONNECT:
            cr_info("coordinator does not know us (%s): sending Ready and %d result%s",
                    env->disconnect->reason, w->nunacked, w->nunacked == 1 ? "" : "s");
            s_hello(w);
            break;
        case CRUCIBLE__ENVELOPE__BODY_HEARTBEAT:
            break;
        case CRUCIBLE__ENVELOPE__BODY_ERROR:
            cr_warn("coordinator error %s: %s", env->error->code, env->error->message);
            break;
        default:
            cr_warn("unexpected %s message from the coordinator: ignored",
                    cr_wire_body_name(env));
            break;
        }
        cr_wire_free(&env);
    }
}

/* ---- finished jobs ---- */

static void s_handle_results(cr_worker_t *w)
{
    uint64_t cnt;
    ssize_t n = read(w->evfd, &cnt, sizeof cnt);
    (void)n;
    pthread_mutex_lock(&w->mu);
    cr__wqueue_t list = w->done;
    w->done = (cr__wqueue_t){NULL, NULL};
    pthread_mutex_unlock(&w->mu);
    s_unacked_t *fresh[CR_WIRE_RESULT_BATCH];
    size_t nfresh = 0;
    for (cr_wjob_t *j; (j = cr__wqueue_pop(&list));) {
        w->in_flight--;
        s_unacked_t *u = calloc(1, sizeof *u);
        if (!u || !j->rec) {
            char name[300];
            cr_error("job %s: result lost (out of memory); the coordinator will retry it",
                     cr_wjob_name(j, name, sizeof name));
            free(u);
        } else {
            u->rec = j->rec;
            j->rec = NULL;
            s_metrics_record(w, u->rec);
            u->next = w->unacked; /* order does not matter: Acks name the result */
            w->unacked = u;
            w->nunacked++;
            fresh[nfresh++] = u;
            if (nfresh == CR_WIRE_RESULT_BATCH) {
                s_send_results(w, fresh, nfresh);
                nfresh = 0;
            }
        }
        cr_wjob_destroy(&j);
    }
    s_send_results(w, fresh, nfresh);
}

/* ---- timers ---- */

static void s_cron(cr_worker_t *w)
{
    int64_t now = cr_time_mono_ms();
    if (!w->sock)
        return;
    if (now - w->last_heard >= w->liveness * w->heartbeat_ms) {
        char why[96];
        snprintf(why, sizeof why, "silent for %lld ms (%lld heartbeats)",
                 (long long)(now - w->last_heard), (long long)w->liveness);
        s_disconnect(w, why);
        return;
    }
    if (now >= w->next_heartbeat) {
        Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
        Crucible__Heartbeat hb = CRUCIBLE__HEARTBEAT__INIT;
        hb.sent_ms = (uint64_t)cr_time_now_ms();
        hb.in_flight = (uint32_t)w->in_flight;
        env.body_case = CRUCIBLE__ENVELOPE__BODY_HEARTBEAT;
        env.heartbeat = &hb;
        s_send(w, &env);
        w->next_heartbeat = now + w->heartbeat_ms;
    }
    s_resend(w, now - S_RESEND_MS);
}

/* Milliseconds until the next timer is due. */
static long s_poll_timeout(cr_worker_t *w)
{
    int64_t now = cr_time_mono_ms(), next;
    if (!w->sock) {
        next = w->reconnect_at;
    } else {
        next = w->next_heartbeat;
        int64_t dead = w->last_heard + w->liveness * w->heartbeat_ms;
        if (dead < next)
            next = dead;
        for (s_unacked_t *u = w->unacked; u; u = u->next)
            if (u->sent_ms + S_RESEND_MS < next)
                next = u->sent_ms + S_RESEND_MS;
    }
    return next <= now ? 0 : (long)(next - now);
}

static int s_stopping(cr_worker_t *w)
{
    return s_signalled || __atomic_load_n(&w->stop, __ATOMIC_SEQ_CST);
}

int cr_worker_run(cr_worker_t *w)
{
    w->backoff_ms = S_BACKOFF_MIN_MS;
    if (s_connect(w) != 0)
        return CR_E_ZMQ; /* a first connect only fails on a malformed endpoint */
    while (!s_stopping(w)) {
        /* reconnect */
        if (!w->sock && cr_time_mono_ms() >= w->reconnect_at)
            s_connect(w);
        /* poll */
        zmq_pollitem_t items[2 + 1 + CR_METRICS_HTTP_CONNS] = {
            {.fd = w->evfd, .events = ZMQ_POLLIN}, {.socket = w->sock, .events = ZMQ_POLLIN}};
        int n = w->sock ? 2 : 1;
        int nhttp =
            w->http ? cr_metrics_http_pollitems(w->http, items + n, 1 + CR_METRICS_HTTP_CONNS) : 0;
        int rc = zmq_poll(items, n + nhttp, s_poll_timeout(w));
        if (rc < 0 && zmq_errno() != EINTR) {
            cr_error("poll failed: %s", zmq_strerror(zmq_errno()));
            return CR_E_ZMQ;
        }
        if (s_stopping(w))
            break;
        /* coordinator, results, metrics scrapes, timers */
        s_handle_coordinator(w);
        s_handle_results(w);
        for (int k = n; k < n + nhttp; k++)
            if (items[k].revents) {
                s_metrics_refresh(w);
                cr_metrics_http_handle(w->http);
                break;
            }
        s_cron(w);
    }
    cr_info("stopping: %d job%s in flight, %d result%s unacknowledged", w->in_flight,
            w->in_flight == 1 ? "" : "s", w->nunacked, w->nunacked == 1 ? "" : "s");
    return 0;
}

void cr_worker_stop(cr_worker_t *w)
{
    __atomic_store_n(&w->stop, 1, __ATOMIC_SEQ_CST);
    uint64_t one = 1;
    ssize_t n = write(w->evfd, &one, sizeof one);
    (void)n;
}

const char *cr_worker_id(const cr_worker_t *w)
{
    return w->id.worker_id;
}

/* A cuda worker serves one GPU, found by its NVML index (--gpu). The worker
 * never initialises CUDA itself: NVML names the device, its architecture
 * (when --cuda-arch is empty) and its uuid, which goes into the runners'
 * CUDA_VISIBLE_DEVICES so each runner sees exactly this GPU as device 0.
 * Without NVML the backend is kept only when --cuda-arch was given. Clocks
 * are reset at start only under a lock policy: a locking worker that died
 * may have left them locked, and an observing one must not touch them. */
/* The GPU indices of a comma list checked by the config table (--gpu-group,
 * --gpus) into idx (at most max). Returns how many. */
static int s_index_list(const char *list, unsigned *idx, int max)
{
    int n = 0;
    for (const char *p = list; *p && n < max;) {
        idx[n++] = (unsigned)strtoul(p, NULL, 10);
        p += strspn(p, "0123456789");
        p += *p == ',';
    }
    return n;
}

/* --gpu-group (docs/multigpu.md): the worker owns every GPU of the group;
 * its runners see them as devices 0..N-1 in the group's order (the first,
 * --gpu, is the one-GPU jobs' device 0), and it says in its Ready how many
 * it owns and whether NVLink joins them all. A GPU NVML does not know
 * leaves the worker with its first GPU only (logged): a group it cannot
 * name is one its runners could not use. */
static void s_gpu_group(cr_worker_t *w)
{
    unsigned idx[8];
    int n = s_index_list(w->cfg.gpu_group, idx, 8);
    if (n < 2 || !w->gpu_uuid[0])
        return;
    char vis[8 * 100] = "", err[256];
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cr_nvml_t *h = NULL;
        cr_nvml_info_t info;
        if (cr_nvml_open_index(NULL, idx[i], &h, err, sizeof err) != 0 ||
            cr_nvml_info(h, &info) != 0 || !info.uuid[0]) {
            cr_warn("worker: --gpu-group %s: GPU %u has no NVML uuid (%s): serving GPU %u "
                    "alone", w->cfg.gpu_group, idx[i], h ? cr_nvml_last_error(h) : err, idx[0]);
            cr_nvml_close(&h);
            return;
        }
        cr_nvml_close(&h);
        off += (size_t)snprintf(vis + off, sizeof vis - off, "%s%s", i ? "," : "", info.uuid);
    }
    unsigned char joined[64];
    int rc = cr_nvml_nvlink_matrix(NULL, idx, n, joined, err, sizeof err);
    int all = rc == 0;
    for (int i = 0; i < n * n; i++)
        all &= joined[i] != 0;
    w->gpus = (uint32_t)n;
    w->nvlink = all;
    setenv("CUDA_VISIBLE_DEVICES", vis, 1);
    cr_info("worker: owns GPUs %s (%d, %s) for multi-GPU tasks", w->cfg.gpu_group, n,
            all ? "all joined by NVLink"
                : rc ? err : "not all joined by NVLink: collectives go over PCIe");
}

static void s_gpu_identity(cr_worker_t *w, uint64_t *gpu_free)
{
    *gpu_free = 0;
    if (!cr_config_has_backend(w->cfg.backends, "cuda"))
        return;
    if (w->cfg.gpu_group[0]) { /* its first GPU is the worker's own */
        unsigned first;
        s_index_list(w->cfg.gpu_group, &first, 1);
        w->cfg.gpu = first;
    }
    cr_nvml_t *n = NULL;
    char err[256];
    int rc = cr_nvml_open_index(NULL, (unsigned)w->cfg.gpu, &n, err, sizeof err);
    if (rc != 0) {
        cr_warn("worker: GPU %lld not found through NVML (%s)%s", (long long)w->cfg.gpu, err,
                w->cfg.cuda_arch[0] ? "; compiling for --cuda-arch" : "");
        return;
    }
    cr_nvml_info_t info;
    char bus[64] = "";
    if (cr_nvml_info(n, &info) == 0) {
        snprintf(w->id.device, sizeof w->id.device, "%s", info.name);
        snprintf(w->gpu_uuid, sizeof w->gpu_uuid, "%s", info.uuid);
        if (!w->cfg.cuda_arch[0] && info.cc_major > 0)
            snprintf(w->cfg.cuda_arch, sizeof w->cfg.cuda_arch, "sm_%d%d", info.cc_major,
                     info.cc_minor);
        snprintf(w->arch, sizeof w->arch, "%.64s", w->cfg.cuda_arch);
        w->gpu_memory = info.mem_total;
        *gpu_free = info.mem_free;
    }
    cr_nvml_pci_bus_id(n, bus, sizeof bus);
    if (strncmp(w->cfg.clock_policy, "lock:", 5) == 0 && bus[0]) {
        rc = cr_nvml_reset(n);
        cr_info("worker: clocks of GPU %s reset at start (lock policy): %s", bus,
                rc == 0 ? "done" : cr_nvml_last_error(n));
    }
    cr_nvml_close(&n);
    /* Before any thread or runner exists, so the pool, the supervisor and
     * every runner inherit the GPU's local cores. An explicit --cpu may lie
     * outside them: then the worker stays where it was put. */
    if (bus[0] && w->cfg.cpu < 0) {
        char where[384];
        rc = cr_topo_bind_to_pci(bus, where, sizeof where);
        if (rc == 0)
            cr_info("worker: bound to %s, local to GPU %s", where, bus);
        else
            cr_warn("worker: GPU %s not placed by hwloc (%s): the worker stays unbound", bus,
                    cr_strerror(rc));
    }
    if (w->gpu_uuid[0])
        setenv("CUDA_VISIBLE_DEVICES", w->gpu_uuid, 1); /* inherited by every runner */
    cr_info("worker: serving GPU %lld %s (%s, bus %s)", (long long)w->cfg.gpu, w->id.device,
            w->arch, bus[0] ? bus : "?");
    s_gpu_group(w);
}

cr_worker_t *cr_worker_new(const cr_config_t *cfg)
{
    int rc = cr_hash_global_init();
    if (rc != 0) {
        cr_error("worker: libsodium did not initialise");
        return NULL;
    }
    cr_worker_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->cfg = *cfg;
    w->evfd = -1;
    pthread_mutex_init(&w->mu, NULL);
    w->heartbeat_ms = cfg->heartbeat_ms > 0 ? cfg->heartbeat_ms : S_DEFAULT_HEARTBEAT_MS;
    w->liveness = cfg->liveness > 0 ? cfg->liveness : S_DEFAULT_LIVENESS;
    w->backoff_ms = S_BACKOFF_MIN_MS;
    if (gethostname(w->id.host, sizeof w->id.host - 1) != 0)
        snprintf(w->id.host, sizeof w->id.host, "localhost");
    if (cfg->worker_id[0])
        snprintf(w->id.worker_id, sizeof w->id.worker_id, "%s", cfg->worker_id);
    else
        snprintf(w->id.worker_id, sizeof w->id.worker_id, "%.200s-%d", w->id.host,
                 (int)getpid());
    char model[256];
    cr_topo_cpu_model(model, sizeof model);
    snprintf(w->id.device, sizeof w->id.device, "cpu:%s", model); /* as the runner names it */
    struct utsname u;
    snprintf(w->arch, sizeof w->arch, "%s", uname(&u) == 0 ? u.machine : "unknown");
    uint64_t gpu_free = 0;
    s_gpu_identity(w, &gpu_free);
    s_autosize(w, gpu_free);
    if (s_metrics_init(w) != 0)
        goto fail;
    {
        /* the work dir is checked before anything is built or run in it */
        char err[1024];
        rc = w->cfg.work_dir[0] ? 0
                                : cr_workdir_default(w->cfg.work_dir, sizeof w->cfg.work_dir,
                                                     err, sizeof err);
        if (rc == 0)
            rc = cr_workdir_open(w->cfg.work_dir, err, sizeof err);
        if (rc != 0) {
            cr_error("worker: %s", err);
            goto fail;
        }
    }
    {
        /* a wrong key or policy is a usage error: say so now, not on every reconnect */
        const char *ep = w->cfg.workers_endpoint;
        cr_curve_t cv;
        char err[512];
        rc = cr_curve_setup(&w->cfg, 0, &ep, 1, &cv, err, sizeof err);
        explicit_bzero(&cv, sizeof cv);
        if (rc != 0) {
            cr_error("worker: %s", err);
            goto fail;
        }
    }
    w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->evfd < 0) {
        cr_error("worker: eventfd: %s", strerror(errno));
        goto fail;
    }
    w->ctx = zmq_ctx_new();
    if (!w->ctx)
        goto fail;
    /* supervisor before pool: the pool hands its jobs to the supervisor */
    w->sup = cr_supervisor_new(&w->cfg, &w->id, s_deliver, w);
    if (!w->sup)
        goto fail;
    w->pool = cr_compile_new(&w->cfg, s_compiled, w);
    if (!w->pool)
        goto fail;
    w->tasks = cr_taskcache_new();
    if (!w->tasks)
        goto fail;
    cr_info("worker %s on %s (%s, %s): %lld compile thread%s with %s, runner %s",
            w->id.worker_id, w->id.host, w->id.device, w->arch,
            (long long)w->cfg.compile_jobs, w->cfg.compile_jobs > 1 ? "s" : "", cr_compile_compiler(w->pool),
            cr_supervisor_runner(w->sup));
    return w;
fail:
    cr_worker_destroy(&w);
    return NULL;
}

void cr_worker_destroy(cr_worker_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_worker_t *w = *self_p;
    cr_compile_destroy(&w->pool); /* first: its threads hand jobs to the supervisor */
    cr_supervisor_destroy(&w->sup);
    cr_taskcache_destroy(&w->tasks);
    for (cr_wjob_t *j; (j = cr__wqueue_pop(&w->done));)
        cr_wjob_destroy(&j);
    while (w->unacked) {
        s_unacked_t *u = w->unacked;
        w->unacked = u->next;
        crucible__reward_record__free_unpacked(u->rec, NULL);
        free(u);
    }
    if (w->sock)
        zmq_close(w->sock);
    if (w->ctx)
        zmq_ctx_term(w->ctx);
    if (w->evfd >= 0)
        close(w->evfd);
    cr_metrics_http_destroy(&w->http);
    cr_metrics_destroy(&w->metrics);
    pthread_mutex_destroy(&w->mu);
    free(w);
    *self_p = NULL;
}

static void s_on_signal(int sig)
{
    (void)sig;
    s_signalled = 1;
}

int cr_worker_main(const cr_config_t *cfg)
{
    /* Not dumpable: a runner under our uid (a worker that is not root)
     * cannot read our /proc/<pid>/environ, mem or fds (docs/sandbox.md). */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct sigaction sa = {.sa_handler = s_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    cr_worker_t *w = cr_worker_new(cfg);
    if (!w)
        return 1;
    char role[64];
    snprintf(role, sizeof role, "worker %.48s", cr_worker_id(w));
    cr_log_set_role(role);
    int rc = cr_worker_run(w);
    cr_worker_destroy(&w);
    return rc == 0 ? 0 : 1;
}

/* ---- --gpus: one worker process per GPU ---- */

#define S_MAX_GPUS 1024 /* --gpu's range */

static volatile sig_atomic_t s_forward; /* the parent's pending SIGTERM/SIGINT, to pass on */

static void s_on_forward(int sig)
{
    s_forward = sig;
}

static void s_on_child(int sig)
{
    (void)sig; /* only to end sigsuspend */
}

/* The GPU indices of cfg->gpus into idx. Returns how many, or -1 (logged). */
static int s_gpu_list(const cr_config_t *cfg, unsigned *idx)
{
    unsigned count = 0;
    char err[256];
    int have = cr_nvml_count(NULL, &count, err, sizeof err) == 0;
    if (strcmp(cfg->gpus, "all") == 0) {
        if (!have || count == 0) {
            cr_error("worker: --gpus all: %s", have ? "NVML sees no GPU" : err);
            return -1;
        }
        if (count > S_MAX_GPUS)
            count = S_MAX_GPUS;
        for (unsigned i = 0; i < count; i++)
            idx[i] = i;
        return (int)count;
    }
    int n = 0;
    for (const char *p = cfg->gpus; *p && n < S_MAX_GPUS;) { /* checked by the config table */
        unsigned v = (unsigned)strtoul(p, NULL, 10);
        for (int k = 0; k < n; k++)
            if (idx[k] == v) {
                cr_error("worker: --gpus %s names GPU %u twice", cfg->gpus, v);
                return -1;
            }
        if (have && v >= count) {
            cr_error("worker: --gpus %s: NVML sees %u GPU%s, no GPU %u", cfg->gpus, count,
                     count == 1 ? "" : "s", v);
            return -1;
        }
        idx[n++] = v;
        p += strspn(p, "0123456789");
        p += *p == ',';
    }
    if (!have)
        cr_warn("worker: no NVML (%s): starting the workers of --gpus %s anyway", err,
                cfg->gpus);
    return n;
}

/* HOST:PORT with PORT + i into buf (port 0 stays 0: each picks its own). */
static const char *s_metrics_addr_plus(const char *addr, unsigned i, char *buf, size_t len)
{
    const char *colon = strrchr(addr, ':');
    long port = colon ? strtol(colon + 1, NULL, 10) : 0;
    if (!colon || port <= 0)
        return addr;
    snprintf(buf, len, "%.*s:%ld", (int)(colon - addr), addr, port + (long)i);
    return buf;
}

/* argv for the child of GPUs g[0..per): every worker setting as --name=value,
 * so the child reads exactly this config whatever its environment says. A
 * group of more than one is its --gpu-group, named <base>-g<i>+<j>. */
static char **s_child_argv(const cr_config_t *cfg, const char *exe, const char *base,
                           const unsigned *g, int per)
{
    unsigned i = g[0];
    char group[64] = "", label[64] = "";
    for (int k = 0; k < per && per > 1; k++) {
        snprintf(group + strlen(group), sizeof group - strlen(group), "%s%u", k ? "," : "", g[k]);
        snprintf(label + strlen(label), sizeof label - strlen(label), "%s%u", k ? "+" : "", g[k]);
    }
    char **argv = calloc(cr_config_nrows + 8, sizeof *argv);
    if (!argv)
        return NULL;
    int n = 0, ok = 1;
    char val[CR_CONFIG_STR + 32];
    ok &= (argv[n++] = strdup(exe)) != NULL;
    ok &= (argv[n++] = strdup("worker")) != NULL;
    for (size_t r = 0; r < cr_config_nrows; r++) {
        const cr_conf_row_t *row = &cr_config_rows[r];
        if (!(row->cmds & CR_CMD_WORKER))
            continue;
        const char *v = cr_config_format(cfg, row, val, sizeof val);
        char gv[CR_CONFIG_STR + 16];
        if (strcmp(row->name, "gpus") == 0)
            v = "";
        else if (strcmp(row->name, "gpu") == 0)
            v = (snprintf(gv, sizeof gv, "%u", i), gv);
        else if (strcmp(row->name, "gpu-group") == 0)
            v = group;
        else if (strcmp(row->name, "gpus-per-worker") == 0)
            v = "1"; /* the child owns its group: it groups nothing */
        else if (strcmp(row->name, "worker-id") == 0 && per > 1)
            v = (snprintf(gv, sizeof gv, "%.200s-g%s", base, label), gv);
        else if (strcmp(row->name, "worker-id") == 0)
            v = (snprintf(gv, sizeof gv, "%.200s-g%u", base, i), gv);
        else if (strcmp(row->name, "metrics-addr") == 0 && v[0])
            v = s_metrics_addr_plus(v, i, gv, sizeof gv);
        else if (strcmp(row->name, "backends") == 0 && !cr_config_has_backend(cfg->backends, "cuda"))
            v = (snprintf(gv, sizeof gv, "%.200s,cuda", cfg->backends), gv);
        ok &= asprintf(&argv[n++], "--%s=%s", row->name, v) > 0;
    }
    if (!ok) {
        for (int k = 0; k < n; k++)
            free(argv[k]);
        free(argv);
        return NULL;
    }
    return argv;
}

int cr_worker_main_gpus(const cr_config_t *cfg, const char *exe)
{
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* as cr_worker_main */
    unsigned *idx = calloc(S_MAX_GPUS, sizeof *idx);
    pid_t *pids = calloc(S_MAX_GPUS, sizeof *pids);
    int n = idx && pids ? s_gpu_list(cfg, idx) : -1;
    if (n <= 0) {
        free(idx);
        free(pids);
        return n < 0 && idx && pids ? 2 : 1;
    }
    /* --gpus-per-worker: groups, NVLink-joined where NVML says so (placement.h) */
    int per = (int)(cfg->gpus_per_worker > 1 ? cfg->gpus_per_worker : 1);
    unsigned *grp = calloc((size_t)n, sizeof *grp);
    int ng = n;
    if (!grp) {
        free(idx);
        free(pids);
        return 1;
    }
    for (int k = 0; k < n; k++)
        grp[k] = idx[k];
    if (per > 1) {
        unsigned char *joined = n <= 64 ? calloc((size_t)n * (size_t)n, 1) : NULL;
        int *pos = calloc((size_t)n, sizeof *pos), *nvl = calloc((size_t)n, sizeof *nvl);
        char err[300];
        ng = joined && pos && nvl ? 0 : -ENOMEM;
        if (ng == 0 && cr_nvml_nvlink_matrix(NULL, idx, n, joined, err, sizeof err) != 0)
            cr_warn("worker: no NVLink topology (%s): grouping GPUs in index order", err);
        if (ng == 0)
            ng = cr_placement_groups(n, per, joined, pos, nvl, err, sizeof err);
        for (int k = 0; ng > 0 && k < n; k++)
            grp[k] = idx[pos[k]];
        for (int gi = 0; ng > 0 && gi < ng; gi++)
            if (!nvl[gi])
                cr_warn("worker: GPUs %u..%u of group %d are not all joined by NVLink: its "
                        "collectives go over PCIe", grp[gi * per], grp[gi * per + per - 1], gi);
        if (ng < 0)
            cr_error("worker: --gpus %s --gpus-per-worker %d: %s", cfg->gpus, per,
                     ng == -ENOMEM ? "out of memory" : err);
        free(joined);
        free(pos);
        free(nvl);
        if (ng < 0) {
            free(grp);
            free(idx);
            free(pids);
            return 2;
        }
    }
    char base[CR_CONFIG_STR];
    if (cfg->worker_id[0]) {
        snprintf(base, sizeof base, "%s", cfg->worker_id);
    } else {
        char host[200] = "localhost";
        gethostname(host, sizeof host - 1);
        snprintf(base, sizeof base, "%.200s-%d", host, (int)getpid());
    }
    /* TERM/INT/CHLD stay blocked except inside sigsuspend: no signal can
     * slip between a check and the wait */
    sigset_t block, old, wait_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &old);
    wait_mask = old;
    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGINT);
    sigdelset(&wait_mask, SIGCHLD);
    struct sigaction fw = {.sa_handler = s_on_forward}, ch = {.sa_handler = s_on_child}, o_term,
                     o_int, o_chld;
    sigemptyset(&fw.sa_mask);
    sigemptyset(&ch.sa_mask);
    sigaction(SIGTERM, &fw, &o_term);
    sigaction(SIGINT, &fw, &o_int);
    sigaction(SIGCHLD, &ch, &o_chld);
    s_forward = 0;

    int alive = 0, failed = 0, sent = 0;
    cr_info("worker: starting %d GPU worker%s as %s-g<i>%s", ng, ng == 1 ? "" : "s", base,
            per > 1 ? "+<j>..." : "");
    for (int k = 0; k < ng; k++) {
        idx[k] = grp[k * per]; /* a worker is named by its first GPU in the messages below */
        char **argv = s_child_argv(cfg, exe, base, grp + k * per, per);
        fflush(NULL); /* nothing buffered is written twice */
        pid_t pid = argv ? fork() : -1;
        if (pid == 0) {
            /* exec keeps the mask but resets the handlers: the child starts
             * as a plain `crucible worker` */
            sigprocmask(SIG_SETMASK, &old, NULL);
            execv(exe, argv);
            _exit(127);
        }
        if (argv)
            for (char **a = argv; *a; a++)
                free(*a);
        free(argv);
        if (pid < 0) {
            cr_error("worker: cannot start the worker of GPU %u: %s", idx[k], strerror(errno));
            failed = 1;
            s_forward = SIGTERM; /* a partial set is no set: stop the others */
            break;
        }
        pids[k] = pid;
        alive++;
    }
    while (alive > 0) {
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            int k = 0;
            while (k < ng && pids[k] != p)
                k++;
            if (k == ng)
                continue;
            pids[k] = 0;
            alive--;
            int clean = (WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
                        (WIFSIGNALED(st) && sent && WTERMSIG(st) == sent);
            if (!clean) {
                failed = 1;
                cr_error("worker: the worker of GPU %u %s %d", idx[k],
                         WIFEXITED(st) ? "exited with" : "was killed by signal",
                         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            } else {
                cr_info("worker: the worker of GPU %u stopped", idx[k]);
            }
        }
        if (s_forward) {
            sent = s_forward;
            s_forward = 0;
            for (int k = 0; k < ng; k++)
                if (pids[k] > 0)
                    kill(pids[k], sent);
        }
        if (alive > 0)
            sigsuspend(&wait_mask);
    }
    sigaction(SIGTERM, &o_term, NULL);
    sigaction(SIGINT, &o_int, NULL);
    sigaction(SIGCHLD, &o_chld, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(grp);
    free(idx);
    free(pids);
    return failed ? 1 : 0;
}
