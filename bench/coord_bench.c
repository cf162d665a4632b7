/* coord_bench.c — the coordinator at farm scale, measured as a load tester
 * would, beside raw ZeroMQ echo of the same shape in the same run.
 *
 * Echo phase: a child process runs a bare ROUTER that sends every message
 * back; W DEALERs each keep `credit` messages of the size of a Result in
 * flight until N have come back. That is the ceiling: what ZeroMQ alone
 * does on this machine with this many peers and this much in flight.
 *
 * Coordinator phase: a real `crucible coordinator` (fork + exec, its own
 * database, ipc endpoints), W simulated workers in this process that send
 * Ready with `credit` (the real worker's default is 2 x compile-jobs + 2 = 6)
 * and the real worker's features (task bundles kept by hash in the real
 * worker's cache, worker/taskcache.h; Acks read from Assigns), and answer
 * every Assign at once with a well-formed Result, one idle probe
 * worker (no backends: it only hears heartbeats, so the longest gap between
 * them shows the longest stall of the loop), and a client thread that
 * submits N jobs in Submits of at most S jobs, each after the last one's
 * SubmitAck (--window keeps more unanswered), and streams every record.
 *
 * It checks that the client got exactly one record per job with seqs 1..N,
 * and that the database holds exactly N DONE jobs with seqs 1..N; it prints
 * jobs/s, Result→Ack round trip p50/p99 (a worker's view of one job through
 * the coordinator, the same round trip as an echo), CPU per job and peak RSS
 * of the coordinator, the client's wait for a SubmitAck, workers declared
 * lost, and the ratios to echo.
 *
 * Both phases wait on an epoll set over the sockets (s_epoll_new), so the
 * load generator's own cost per wait is in the sockets that are ready. A
 * client whose batch is done between two of its Submits (BatchDone ends the
 * subscription) subscribes again after its last seq, as a real one does.
 *
 *   build/coord_bench -n 200000 -w 1000          # by hand
 *   build/coord_bench -n 2000 -w 20 --check      # the ctest: exits 1 on a wrong count
 *   build/coord_bench -n 4000 -w 1000 --source-bytes 33000 --no-echo
 *                                  # 63 MiB Submits: the longest turn is the stall
 */
#define _GNU_SOURCE
#include "taskcache.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#ifndef CR_BENCH_CRUCIBLE
#define CR_BENCH_CRUCIBLE "crucible"
#endif

typedef struct {
    long n;               /* jobs */
    int w;                /* simulated workers */
    int credit;           /* each worker's credit */
    long chunk;           /* jobs per Submit */
    int window;           /* Submits sent before their SubmitAcks (1: one at a time) */
    int hb_ms;            /* heartbeat interval of the coordinator and workers */
    int echo;             /* 1: run the echo phase */
    int coord;            /* 1: run the coordinator phase */
    int check;            /* 1: exit 1 unless every count is right */
    const char *crucible; /* the binary */
    const char *sync;     /* --durability for the coordinator, "" = its default */
    const char *extra;    /* more coordinator flags, space separated */
    long source_bytes;    /* each candidate's source padded to this many bytes; 0 = as is */
    int batches;          /* 1: the client asks for record_batches (as the C client does) */
    int result_batches;   /* 1: workers send an Assign's results in one Result when the
                             coordinator reads them so (as the real worker does) */
} s_opts_t;

static s_opts_t O = {.n = 20000, .w = 100, .credit = 6, .chunk = 5000, .window = 1, .hb_ms = 1000,
                     .echo = 1, .coord = 1, .crucible = CR_BENCH_CRUCIBLE, .sync = "",
                     .extra = "", .batches = 1, .result_batches = 1};

static int64_t s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int s_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Percentile p (0..100) of n samples, sorted in place. */
static double s_pct(int64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, s_cmp_i64);
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return (double)v[i];
}

/* CPU seconds (user + system) of pid, from /proc; -1 when unreadable. */
static double s_cpu_s(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long ut = 0, st = 0;
    /* fields after the command: state(3) ... utime(14) stime(15) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Peak resident set of pid in MiB (VmHWM), -1 when unreadable. */
static double s_peak_rss_mib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    double kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf", &kib) == 1)
            break;
    fclose(f);
    return kib < 0 ? -1 : kib / 1024.0;
}

/* ---- waiting on many sockets ---- */

/* An epoll set over the sockets' ZMQ_FDs, so that a wait costs in the
 * sockets that are ready, not in all of them (zmq_poll walks and polls
 * every one: with a thousand peers that was most of the load generator's
 * CPU). The rule that makes ZMQ_FD safe: after any operation on a socket,
 * read it until EAGAIN, since a send may take the notice of a message
 * that arrived meanwhile. Both phases wait this way. */
static int s_epoll_new(void **socks, int n)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; ep >= 0 && i < n; i++) {
        int fd = -1;
        size_t len = sizeof fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (zmq_getsockopt(socks[i], ZMQ_FD, &fd, &len) != 0 ||
            epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(ep);
            return -1;
        }
    }
    return ep;
}

/* ---- the record a simulated worker sends back ---- */

/* A Result a little like a real one: verdict, compile, a profile. */
static void s_fill_record(Crucible__RewardRecord *r, Crucible__CompileResult *cres,
                          char *batch, char *job, uint32_t attempt)
{
    crucible__reward_record__init(r);
    crucible__compile_result__init(cres);
    r->batch_id = batch;
    r->job_id = job;
    r->attempt = attempt;
    r->status = CRUCIBLE__STATUS__STATUS_OK;
    r->message = "";
    cres->ok = 1;
    cres->seconds = 0.25;
    cres->log = "bench: compiled in 0.25 s (simulated worker)";
    r->compile = cres;
}

/* ---- echo phase ---- */

static void s_echo_server(const char *ep)
{
    void *ctx = zmq_ctx_new();
    void *r = zmq_socket(ctx, ZMQ_ROUTER);
    int hwm = 100000;
    zmq_setsockopt(r, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(r, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (zmq_bind(r, ep) != 0)
        _exit(2);
    for (;;) {
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&id, r, 0) < 0 || zmq_msg_recv(&body, r, 0) < 0)
            _exit(0);
        zmq_msg_send(&id, r, ZMQ_SNDMORE);
        zmq_msg_send(&body, r, 0);
        zmq_msg_close(&id);
        zmq_msg_close(&body);
    }
}

typedef struct {
    double rate;      /* round trips per second */
    double p50, p99;  /* µs */
    double cpu_us;    /* server CPU per round trip */
} s_echo_t;

static int s_echo(const char *dir, s_echo_t *out)
{
    char ep[256];
    snprintf(ep, sizeof ep, "ipc://%s/echo.sock", dir);
    pid_t pid = fork();
    if (pid == 0)
        s_echo_server(ep);
    usleep(100000);
    /* payload: a packed Result envelope of the coordinator phase's size */
    Crucible__RewardRecord rec;
    Crucible__CompileResult cres;
    s_fill_record(&rec, &cres, "bench", "j0000000", 1);
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    res.record = &rec;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    uint8_t *payload = NULL;
    size_t plen = 0;
    cr_wire_pack(&env, &payload, &plen);

    void *ctx = zmq_ctx_new();
    int W = O.w, C = O.credit;
    void **s = calloc((size_t)W, sizeof *s);
    int64_t *sent_at = calloc((size_t)W * (size_t)C, sizeof *sent_at); /* ring per worker */
    int *head = calloc((size_t)W, sizeof *head), *tail = calloc((size_t)W, sizeof *tail);
    int64_t *lat = calloc((size_t)O.n, sizeof *lat);
    for (int i = 0; i < W; i++) {
        s[i] = zmq_socket(ctx, ZMQ_DEALER);
        int hwm = 100000;
        zmq_setsockopt(s[i], ZMQ_SNDHWM, &hwm, sizeof hwm);
        zmq_connect(s[i], ep);
    }
    int epfd = s_epoll_new(s, W);
    if (epfd < 0)
        _exit(2);
    struct epoll_event *evs = calloc((size_t)W, sizeof *evs);
    usleep(200000);
    double cpu0 = s_cpu_s(pid);
    long sent = 0, got = 0;
    int64_t t0 = s_now_us();
    for (int i = 0; i < W; i++)
        for (int k = 0; k < C && sent < O.n; k++, sent++) {
            sent_at[i * C + head[i]] = s_now_us();
            head[i] = (head[i] + 1) % C;
            zmq_send(s[i], payload, plen, ZMQ_DONTWAIT);
        }
    int nready = W; /* the first pass reads every socket (the rule above) */
    for (int i = 0; i < W; i++)
        evs[i].data.u32 = (uint32_t)i;
    while (got < O.n) {
        if (nready == 0 && (nready = epoll_wait(epfd, evs, W, 5000)) <= 0)
            break;
        for (int r = 0; r < nready; r++) {
            int i = (int)evs[r].data.u32;
            char buf[4096];
            while (zmq_recv(s[i], buf, sizeof buf, ZMQ_DONTWAIT) >= 0) {
                int64_t now = s_now_us();
                lat[got++] = now - sent_at[i * C + tail[i]];
                tail[i] = (tail[i] + 1) % C;
                if (sent < O.n) {
                    sent_at[i * C + head[i]] = now;
                    head[i] = (head[i] + 1) % C;
                    zmq_send(s[i], payload, plen, ZMQ_DONTWAIT);
                    sent++;
                }
            }
        }
        nready = 0;
    }
    int64_t t1 = s_now_us();
    double cpu1 = s_cpu_s(pid);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    out->rate = (double)got / ((double)(t1 - t0) / 1e6);
    out->p50 = s_pct(lat, (size_t)got, 50);
    out->p99 = s_pct(lat, (size_t)got, 99);
    out->cpu_us = got ? (cpu1 - cpu0) * 1e6 / (double)got : 0;
    for (int i = 0; i < W; i++)
        zmq_close(s[i]);
    zmq_ctx_term(ctx);
    close(epfd);
    free(s), free(evs), free(sent_at), free(head), free(tail), free(lat), free(payload);
    return got == O.n ? 0 : -1;
}

/* ---- coordinator phase: the client thread ---- */

static const char s_task_json[] =
    "{\"name\": \"bench\", \"language\": \"c\",\n"
    " \"signature\": \"void solve(const float *x, float *y, int n)\",\n"
    " \"params\": {\"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"y\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"n\": {\"role\": \"size\"}},\n"
    " \"cases\": [{\"n\": 7}], \"bench_cases\": [0],\n"
    " \"tolerance\": {\"atol\": 0, \"rtol\": 0}, \"reference\": \"reference.c\"}\n";
static const char s_source[] =
    "void solve(const float *x, float *y, int n) { for (int i = 0; i < n; i++) y[i] = 2 * x[i]; }";

typedef struct {
    const char *ep;             /* clients endpoint */
    void *ctx;                  /* shared ZeroMQ context */
    uint8_t *seen;              /* records per job index */
    uint8_t *seq_seen;          /* records per seq */
    long records, dups, bad;    /* counts */
    long acked, refused;        /* jobs accepted by SubmitAcks / Submits refused */
    int64_t t_submit0, t_submit1, t_first, t_last; /* µs */
    int batch_done;             /* BatchDone seen */
    uint64_t last_seq;          /* the last seq streamed */
    long resubscribed;          /* BatchDones before the batch's last Submit: resubscribed */
    long messages;              /* Result messages (several records each with batches) */
    int failed;                 /* 1 on a timeout */
    char err[256];              /* first Error message */
    int64_t *ack_wait;          /* owned, per Submit: µs it was sent, then µs from that to
                                   its SubmitAck */
    long nsent, nacked;         /* Submits sent / answered with a SubmitAck */
} s_client_t;

static atomic_int s_done;

static void s_client_record(s_client_t *cl, const Crucible__RewardRecord *r)
{
    long idx = -1;
    if (r && r->job_id && r->job_id[0] == 'j')
        idx = strtol(r->job_id + 1, NULL, 10);
    if (idx < 0 || idx >= O.n || r->seq < 1 || r->seq > (uint64_t)O.n) {
        cl->bad++;
        return;
    }
    if (cl->seen[idx]++ || cl->seq_seen[r->seq - 1]++)
        cl->dups++;
    cl->records++;
    cl->last_seq = r->seq;
    if (!cl->t_first)
        cl->t_first = s_now_us();
    cl->t_last = s_now_us();
}

static void s_client_handle(s_client_t *cl, Crucible__Envelope *e)
{
    switch (e->body_case) {
    case CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK:
        cl->acked += e->submit_ack->accepted + e->submit_ack->duplicate;
        cl->t_submit1 = s_now_us();
        if (cl->ack_wait && cl->nacked < cl->nsent) /* answered in the order sent */
            cl->ack_wait[cl->nacked] = cl->t_submit1 - cl->ack_wait[cl->nacked];
        cl->nacked++;
        break;
    case CRUCIBLE__ENVELOPE__BODY_RESULT:
        /* one record, or (record_batches) several */
        if (e->result->record)
            s_client_record(cl, e->result->record);
        else if (!e->result->n_records)
            cl->bad++;
        for (size_t i = 0; i < e->result->n_records; i++)
            s_client_record(cl, e->result->records[i]);
        cl->messages++;
        break;
    case CRUCIBLE__ENVELOPE__BODY_BATCH_DONE:
        cl->batch_done = 1;
        break;
    case CRUCIBLE__ENVELOPE__BODY_ERROR:
        if (!cl->err[0])
            snprintf(cl->err, sizeof cl->err, "%s: %s", e->error->code, e->error->message);
        cl->refused++;
        break;
    default:
        break;
    }
}

/* A batch whose every job so far has a record is done, and its BatchDone
 * ends the subscription, even when more Submits of it are to come (a fast
 * coordinator finishes a chunk before the next arrives). The client then
 * does what a real one does: Subscribe again after the last seq it has. */
static void s_client_resubscribe(s_client_t *cl, void *s)
{
    Crucible__Subscribe sub = CRUCIBLE__SUBSCRIBE__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    sub.batch_id = "bench";
    sub.after_seq = cl->last_seq;
    sub.follow = 1;
    sub.record_batches = O.batches;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBSCRIBE;
    env.subscribe = &sub;
    cl->batch_done = 0;
    cl->resubscribed++;
    cr_wire_send(s, NULL, &env);
}

static void s_client_drain(s_client_t *cl, void *s, int wait_ms)
{
    zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, wait_ms) <= 0)
        return;
    Crucible__Envelope *e = NULL;
    while (cr_wire_recv(s, NULL, &e) != -EAGAIN) {
        if (e)
            s_client_handle(cl, e);
        cr_wire_free(&e);
        if (cl->batch_done && cl->records < O.n)
            s_client_resubscribe(cl, s);
    }
}

static void *s_client_main(void *arg)
{
    s_client_t *cl = arg;
    void *s = zmq_socket(cl->ctx, ZMQ_DEALER);
    cr_wire_socket_caps(s, CR_WIRE_MAX_MSG);
    int hwm = 0; /* the client reads everything: never drop */
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_connect(s, cl->ep);
    Crucible__TaskBundle tb = CRUCIBLE__TASK_BUNDLE__INIT;
    tb.name = "bench";
    tb.task_json = (char *)s_task_json;
    tb.reference_source = (char *)s_source;
    Crucible__TaskBundle *tbs[1] = {&tb};
    long chunk = O.chunk < O.n ? O.chunk : O.n;
    Crucible__JobSpec *specs = calloc((size_t)chunk, sizeof *specs);
    Crucible__JobSpec **sp = calloc((size_t)chunk, sizeof *sp);
    char (*ids)[16] = calloc((size_t)chunk, sizeof *ids);
    char *source = (char *)s_source;
    if (O.source_bytes > (long)sizeof s_source) {
        /* the same candidate behind a comment: a large Submit of valid jobs */
        source = malloc((size_t)O.source_bytes + 1);
        size_t pad = (size_t)O.source_bytes - (sizeof s_source - 1);
        memcpy(source, "/*", 2);
        memset(source + 2, 'x', pad - 4);
        memcpy(source + pad - 2, "*/", 2);
        memcpy(source + pad, s_source, sizeof s_source);
    }
    cl->ack_wait = calloc((size_t)(O.n / chunk + 1), sizeof *cl->ack_wait);
    cl->t_submit0 = s_now_us();
    for (long off = 0; off < O.n; off += chunk) {
        long k = O.n - off < chunk ? O.n - off : chunk;
        for (long i = 0; i < k; i++) {
            crucible__job_spec__init(&specs[i]);
            snprintf(ids[i], sizeof ids[i], "j%07ld", off + i);
            specs[i].job_id = ids[i];
            specs[i].task = "bench";
            specs[i].source = source;
            sp[i] = &specs[i];
        }
        Crucible__Submit sub = CRUCIBLE__SUBMIT__INIT;
        Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
        sub.batch_id = "bench";
        sub.n_tasks = 1;
        sub.tasks = tbs;
        sub.n_jobs = (size_t)k;
        sub.jobs = sp;
        sub.subscribe = off == 0;
        sub.record_batches = O.batches;
        env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
        env.submit = &sub;
        while (cr_wire_send(s, NULL, &env) != 0)
            s_client_drain(cl, s, 10);
        if (cl->ack_wait)
            cl->ack_wait[cl->nsent] = s_now_us();
        cl->nsent++;
        /* at most --window Submits unanswered (1: one at a time, as a client
         * that wants each SubmitAck before the next would) */
        int64_t t = s_now_us();
        while (cl->nsent - cl->nacked >= O.window && !cl->refused &&
               s_now_us() - t < 60000000)
            s_client_drain(cl, s, 100);
        if (cl->refused)
            break;
    }
    for (int64_t t = s_now_us(); cl->nacked < cl->nsent && !cl->refused &&
                                 s_now_us() - t < 60000000;)
        s_client_drain(cl, s, 100);
    free(specs), free(sp), free(ids);
    if (source != s_source)
        free(source);
    int64_t last = s_now_us();
    long seen = cl->records;
    while (!cl->refused && (cl->records < O.n || !cl->batch_done)) {
        s_client_drain(cl, s, 200);
        if (cl->records != seen) {
            seen = cl->records;
            last = s_now_us();
        } else if (s_now_us() - last > 30000000) {
            cl->failed = 1; /* 30 s without a record */
            break;
        }
    }
    zmq_close(s);
    atomic_store(&s_done, 1);
    return NULL;
}

/* ---- coordinator phase: workers ---- */

typedef struct {
    double rate, p50, p99, cpu_us, rss_mib, submit_s, submit_rate, wall_s;
    double ack_p50_ms, max_hb_gap_ms;
    double sack_p50_ms, sack_p99_ms; /* the client's wait for a SubmitAck */
    long records, dups, bad, lost, disconnects, db_done, db_seqs, resent, resub;
    long bundles, unknown; /* task bundles received; jobs naming one never received */
    long assigns, acks, folded; /* Assigns; Acks alone; Acks inside Assigns */
    long ack_assigns;           /* of the Assigns, those with Acks and no job */
    long results;               /* Result messages the workers sent */
    long messages;              /* Result messages to the client */
    int batch_done, failed;
    char longest[256];
} s_coord_t;

static void s_send_ready(void *s, cr_taskcache_t *tc, const char *id, int credit, int backends)
{
    Crucible__Ready r = CRUCIBLE__READY__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    char *b[1] = {"c"};
    r.worker_id = (char *)id;
    r.host = "bench";
    r.backends = b;
    r.n_backends = backends ? 1 : 0;
    r.credit = (uint32_t)credit;
    r.device_name = "simulated";
    r.task_cache = 1;
    r.assign_acks = 1;
    cr_taskcache_clear(tc); /* as the real worker does (worker.c, invariant 3) */
    env.body_case = CRUCIBLE__ENVELOPE__BODY_READY;
    env.ready = &r;
    cr_wire_send(s, NULL, &env);
}

static void s_send_hb(void *s)
{
    Crucible__Heartbeat hb = CRUCIBLE__HEARTBEAT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    cr_wire_send(s, NULL, &env);
}

static long s_count_log(const char *path, const char *needle, char *last, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[2048];
    long n = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) {
            n++;
            if (last) {
                line[strcspn(line, "\n")] = '\0';
                snprintf(last, cap, "%.200s", strstr(line, needle));
            }
        }
    fclose(f);
    return n;
}

/* Answers jobs [at, at + CR_WIRE_RESULT_BATCH) of Assign a on worker
 * socket s the real worker's way (worker.c, s_send_results): in one Result
 * when the coordinator reads them so, else one a message. res_at[job] gets
 * the µs it was sent. */
static void s_answer(void *s, cr_taskcache_t *tc, const Crucible__Assign *a, size_t at,
                     int64_t *res_at, s_coord_t *out)
{
    int together = a->result_batches && O.result_batches;
    size_t nj = a->n_jobs - at < CR_WIRE_RESULT_BATCH ? a->n_jobs - at : CR_WIRE_RESULT_BATCH;
    Crucible__RewardRecord recs[CR_WIRE_RESULT_BATCH];
    Crucible__CompileResult cress[CR_WIRE_RESULT_BATCH];
    Crucible__RewardRecord *recp[CR_WIRE_RESULT_BATCH];
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    for (size_t k = 0; k < nj; k++) {
        Crucible__Job *j = a->jobs[at + k];
        Crucible__TaskBundle tb;
        if (!j->task || cr_taskcache_resolve(tc, a->tasks, a->n_tasks, j->task, &tb) != 0)
            out->unknown++;
        s_fill_record(&recs[k], &cress[k], j->batch_id, j->spec->job_id, j->attempt);
        recp[k] = &recs[k];
        long idx = strtol(j->spec->job_id + 1, NULL, 10);
        if (idx >= 0 && idx < O.n) {
            if (res_at[idx])
                out->resent++;
            res_at[idx] = s_now_us();
        }
        if (!together || nj == 1) {
            res.record = &recs[k];
            cr_wire_send(s, NULL, &env);
            out->results++;
        }
    }
    if (together && nj > 1) {
        res.record = NULL;
        res.n_records = nj;
        res.records = recp;
        cr_wire_send(s, NULL, &env);
        out->results++;
    }
}

static int s_coord(const char *dir, s_coord_t *out)
{
    char cep[256], wep[256], db[256], logp[256];
    snprintf(cep, sizeof cep, "ipc://%s/clients.sock", dir);
    snprintf(wep, sizeof wep, "ipc://%s/workers.sock", dir);
    snprintf(db, sizeof db, "%s/bench.db", dir);
    snprintf(logp, sizeof logp, "%s/coordinator.log", dir);
    char a_c[300], a_w[300], a_db[300], a_hb[64], a_cr[64], a_ql[64], a_sync[64];
    snprintf(a_c, sizeof a_c, "--clients-endpoint=%s", cep);
    snprintf(a_w, sizeof a_w, "--workers-endpoint=%s", wep);
    snprintf(a_db, sizeof a_db, "--db=%s", db);
    snprintf(a_hb, sizeof a_hb, "--heartbeat-ms=%d", O.hb_ms);
    snprintf(a_cr, sizeof a_cr, "--max-credit=%d", O.credit);
    snprintf(a_ql, sizeof a_ql, "--queue-limit=%ld", O.n + 1);
    snprintf(a_sync, sizeof a_sync, "--durability=%s", O.sync);
    char *argv[32];
    int ac = 0;
    argv[ac++] = (char *)O.crucible;
    argv[ac++] = "coordinator";
    argv[ac++] = a_c, argv[ac++] = a_w, argv[ac++] = a_db, argv[ac++] = a_hb;
    argv[ac++] = a_cr, argv[ac++] = a_ql, argv[ac++] = "--insecure";
    argv[ac++] = "--drain-after=0";
    if (O.sync[0])
        argv[ac++] = a_sync;
    char *extra = strdup(O.extra);
    for (char *t = strtok(extra, " "); t && ac < 30; t = strtok(NULL, " "))
        argv[ac++] = t;
    argv[ac] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    free(extra);
    char sock[300];
    snprintf(sock, sizeof sock, "%s/workers.sock", dir);
    for (int i = 0; i < 200 && access(sock, F_OK) != 0; i++)
        usleep(20000);

    void *ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, O.w + 64);
    int W = O.w + 1; /* the last one is the probe */
    void **s = calloc((size_t)W, sizeof *s);
    int64_t *next_hb = calloc((size_t)W, sizeof *next_hb);
    cr_taskcache_t **tcs = calloc((size_t)W, sizeof *tcs);
    int *ready_idx = calloc(2 * (size_t)W, sizeof *ready_idx); /* sockets to read this pass */
    struct epoll_event *evs = calloc((size_t)W, sizeof *evs);
    int64_t *res_at = calloc((size_t)O.n, sizeof *res_at); /* µs the last Result was sent */
    int64_t *lat = calloc((size_t)O.n, sizeof *lat);
    long nlat = 0;
    char id[64];
    for (int i = 0; i < W; i++) {
        s[i] = zmq_socket(ctx, ZMQ_DEALER);
        cr_wire_socket_caps(s[i], CR_WIRE_MAX_MSG);
        snprintf(id, sizeof id, i < O.w ? "bw%05d" : "probe", i);
        zmq_setsockopt(s[i], ZMQ_ROUTING_ID, id, strlen(id));
        zmq_connect(s[i], wep);
        tcs[i] = cr_taskcache_new();
        s_send_ready(s[i], tcs[i], id, O.credit, i < O.w);
        next_hb[i] = s_now_us() + (int64_t)O.hb_ms * 1000 * i / W;
    }
    int epfd = s_epoll_new(s, W);
    if (epfd < 0) {
        fprintf(stderr, "coord_bench: epoll: %s\n", strerror(errno));
        exit(2);
    }
    s_client_t cl = {.ep = cep, .ctx = ctx};
    cl.seen = calloc((size_t)O.n, 1);
    cl.seq_seen = calloc((size_t)O.n, 1);
    usleep(300000);
    double cpu0 = s_cpu_s(pid);
    atomic_store(&s_done, 0);
    pthread_t th;
    pthread_create(&th, NULL, s_client_main, &cl);
    int64_t last_probe = 0, max_gap = 0;
    int first = 1;
    while (!atomic_load(&s_done)) {
        int nt = 0;
        if (first) { /* the Readies were sent before the set existed: read all */
            for (int i = 0; i < W; i++)
                ready_idx[nt++] = i;
            first = 0;
        }
        int nr = epoll_wait(epfd, evs, W, nt ? 0 : 50);
        for (int r = 0; r < nr; r++)
            ready_idx[nt++] = (int)evs[r].data.u32;
        int64_t now = s_now_us();
        for (int i = 0; i < W; i++)
            if (now >= next_hb[i]) {
                s_send_hb(s[i]);
                next_hb[i] = now + (int64_t)O.hb_ms * 1000;
                ready_idx[nt++] = i; /* a send: read it (the rule above) */
            }
        for (int q = 0; q < nt; q++) {
            int i = ready_idx[q];
            Crucible__Envelope *e = NULL;
            while (cr_wire_recv(s[i], NULL, &e) != -EAGAIN) {
                if (!e)
                    continue;
                int64_t t = s_now_us();
                if (e->body_case == CRUCIBLE__ENVELOPE__BODY_ASSIGN) {
                    Crucible__Assign *a = e->assign;
                    out->assigns++;
                    if (!a->n_jobs)
                        out->ack_assigns++;
                    for (size_t k = 0; k < a->n_acks; k++) {
                        long idx = strtol(a->acks[k]->job_id + 1, NULL, 10);
                        if (idx >= 0 && idx < O.n && res_at[idx] && nlat < O.n)
                            lat[nlat++] = t - res_at[idx];
                        out->folded++;
                    }
                    for (size_t at = 0; at < a->n_jobs; at += CR_WIRE_RESULT_BATCH)
                        s_answer(s[i], tcs[i], a, at, res_at, out);
                    for (size_t k = 0; k < a->n_tasks; k++, out->bundles++)
                        cr_taskcache_put(tcs[i], a->tasks[k]);
                } else if (e->body_case == CRUCIBLE__ENVELOPE__BODY_ACK) {
                    out->acks++;
                    long idx = strtol(e->ack->job_id + 1, NULL, 10);
                    if (idx >= 0 && idx < O.n && res_at[idx] && nlat < O.n)
                        lat[nlat++] = t - res_at[idx];
                } else if (e->body_case == CRUCIBLE__ENVELOPE__BODY_HEARTBEAT && i == W - 1) {
                    if (last_probe && t - last_probe > max_gap)
                        max_gap = t - last_probe;
                    last_probe = t;
                } else if (e->body_case == CRUCIBLE__ENVELOPE__BODY_DISCONNECT) {
                    out->disconnects++;
                    snprintf(id, sizeof id, i < O.w ? "bw%05d" : "probe", i);
                    s_send_ready(s[i], tcs[i], id, O.credit, i < O.w);
                }
                cr_wire_free(&e);
            }
        }
    }
    pthread_join(th, NULL);
    double cpu1 = s_cpu_s(pid);
    out->rss_mib = s_peak_rss_mib(pid);
    int wst = 0;
    if (waitpid(pid, &wst, WNOHANG) == pid) {
        /* it ended before the run did: say how */
        if (WIFSIGNALED(wst))
            fprintf(stderr, "coord_bench: the coordinator died on signal %d (%s)%s\n",
                    WTERMSIG(wst), strsignal(WTERMSIG(wst)), WCOREDUMP(wst) ? ", core dumped" : "");
        else
            fprintf(stderr, "coord_bench: the coordinator exited with status %d\n",
                    WEXITSTATUS(wst));
        out->failed = 1;
    } else {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    for (int i = 0; i < W; i++) {
        zmq_close(s[i]);
        cr_taskcache_destroy(&tcs[i]);
    }
    free(tcs);
    zmq_ctx_term(ctx);

    double run_s = (double)(cl.t_last - cl.t_submit0) / 1e6;
    out->wall_s = run_s;
    out->rate = run_s > 0 ? (double)cl.records / run_s : 0;
    out->p50 = s_pct(lat, (size_t)nlat, 50);
    out->p99 = s_pct(lat, (size_t)nlat, 99);
    out->cpu_us = cl.records ? (cpu1 - cpu0) * 1e6 / (double)cl.records : 0;
    out->submit_s = (double)(cl.t_submit1 - cl.t_submit0) / 1e6;
    out->submit_rate = out->submit_s > 0 ? (double)cl.acked / out->submit_s : 0;
    out->max_hb_gap_ms = (double)max_gap / 1000.0;
    out->sack_p50_ms = s_pct(cl.ack_wait, (size_t)cl.nacked, 50) / 1000.0;
    out->sack_p99_ms = s_pct(cl.ack_wait, (size_t)cl.nacked, 99) / 1000.0;
    free(cl.ack_wait);
    out->records = cl.records;
    out->dups = cl.dups;
    out->bad = cl.bad;
    out->batch_done = cl.batch_done;
    out->resub = cl.resubscribed;
    out->messages = cl.messages;
    out->failed = cl.failed || cl.refused;
    if (cl.err[0])
        fprintf(stderr, "coord_bench: the coordinator answered %s\n", cl.err);
    out->lost = s_count_log(logp, " lost: ", NULL, 0);
    s_count_log(logp, "longest turn", out->longest, sizeof out->longest);

    sqlite3 *d = NULL;
    if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        /* a DONE job's record is a row of records (coordinator/store.c) */
        if (sqlite3_prepare_v2(d, "SELECT count(*), count(DISTINCT r.seq) FROM records r JOIN"
                                  " jobs j ON j.rowid = r.job WHERE r.batch_id = 'bench' AND"
                                  " r.seq BETWEEN 1 AND (SELECT count(*) FROM jobs)",
                               -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            out->db_done = sqlite3_column_int64(st, 0);
            out->db_seqs = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        sqlite3_close(d);
    }
    close(epfd);
    free(cl.seen), free(cl.seq_seen), free(s), free(ready_idx), free(evs), free(next_hb), free(res_at);
    free(lat);
    return 0;
}

static void s_usage(void)
{
    fprintf(stderr,
            "usage: coord_bench [-n jobs] [-w workers] [-c credit] [-s jobs-per-submit]\n"
            "                   [--hb-ms N] [--durability full|normal|off] [--no-echo]\n"
            "                   [--echo-only] [--check] [--crucible PATH] [--extra 'FLAGS']\n"
            "                   [--source-bytes N] [--no-batches] [--no-result-batches]\n"
            "                   [--window SUBMITS]\n");
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"no-echo", no_argument, 0, 'E'},   {"echo-only", no_argument, 0, 'e'},
        {"check", no_argument, 0, 'k'},     {"crucible", required_argument, 0, 'b'},
        {"durability", required_argument, 0, 'd'}, {"hb-ms", required_argument, 0, 'h'},
        {"extra", required_argument, 0, 'x'}, {"source-bytes", required_argument, 0, 'S'},
        {"no-batches", no_argument, 0, 'B'}, {"no-result-batches", no_argument, 0, 'R'},
        {"window", required_argument, 0, 'W'},
        {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "n:w:c:s:", lo, NULL)) != -1) {
        switch (ch) {
        case 'n': O.n = atol(optarg); break;
        case 'w': O.w = atoi(optarg); break;
        case 'c': O.credit = atoi(optarg); break;
        case 's': O.chunk = atol(optarg); break;
        case 'E': O.echo = 0; break;
        case 'e': O.coord = 0; break;
        case 'k': O.check = 1; break;
        case 'b': O.crucible = optarg; break;
        case 'd': O.sync = optarg; break;
        case 'h': O.hb_ms = atoi(optarg); break;
        case 'x': O.extra = optarg; break;
        case 'S': O.source_bytes = atol(optarg); break;
        case 'B': O.batches = 0; break;
        case 'R': O.result_batches = 0; break;
        case 'W': O.window = atoi(optarg); break;
        default: s_usage(); return 2;
        }
    }
    if (O.n < 1 || O.w < 1 || O.credit < 1 || O.chunk < 1 || O.window < 1) {
        s_usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char dir[] = "/tmp/cr-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    printf("coord_bench: %ld jobs, %d workers x credit %d (%d in flight), %ld jobs per Submit, "
           "ipc\n", O.n, O.w, O.credit, O.w * O.credit, O.chunk);
    fflush(stdout);
    s_echo_t e = {0};
    int ok = 1;
    if (O.echo) {
        if (s_echo(dir, &e) != 0)
            ok = 0;
        printf("echo:        %.0f round trips/s, p50 %.0f us, p99 %.0f us, server CPU %.1f us/msg\n",
               e.rate, e.p50, e.p99, e.cpu_us);
        fflush(stdout);
    }
    if (O.coord) {
        s_coord_t c = {0};
        s_coord(dir, &c);
        printf("coordinator: %.0f jobs/s over %.2f s (submit to last record), Result->Ack p50 "
               "%.0f us, p99 %.0f us\n", c.rate, c.wall_s, c.p50, c.p99);
        printf("             CPU %.1f us/job, peak RSS %.1f MiB, submit %.2f s (%.0f jobs/s), "
               "SubmitAck wait p50 %.1f ms, p99 %.1f ms\n", c.cpu_us, c.rss_mib, c.submit_s,
               c.submit_rate, c.sack_p50_ms, c.sack_p99_ms);
        printf("             longest probe heartbeat gap %.0f ms (interval %d ms), workers lost "
               "%ld, told to re-register %ld, results resent %ld\n", c.max_hb_gap_ms, O.hb_ms,
               c.lost, c.disconnects, c.resent);
        printf("             Assigns %ld (%ld of Acks only), Acks alone %ld, Acks inside Assigns "
               "%ld, task bundles sent %ld, jobs naming an unsent bundle %ld\n", c.assigns,
               c.ack_assigns, c.acks, c.folded, c.bundles, c.unknown);
        printf("             results sent in %ld messages (%.1f a message), records streamed "
               "in %ld (%.1f a message)\n", c.results,
               c.results ? (double)c.records / (double)c.results : 0, c.messages,
               c.messages ? (double)c.records / (double)c.messages : 0);
        if (c.longest[0])
            printf("             %s\n", strstr(c.longest, "longest") ? strstr(c.longest, "longest")
                                                                     : c.longest);
        printf("records:     client %ld (duplicates %ld, invalid %ld, BatchDone %s, resubscribed "
               "%ld), database %ld DONE with %ld distinct seqs\n", c.records, c.dups, c.bad,
               c.batch_done ? "yes" : "no", c.resub, c.db_done, c.db_seqs);
        if (O.echo)
            printf("ratio:       %.1f%% of echo rate; p99 %.2fx echo's\n", 100.0 * c.rate / e.rate,
                   e.p99 > 0 ? c.p99 / e.p99 : 0);
        if (c.records != O.n || c.dups || c.bad || !c.batch_done || c.db_done != O.n ||
            c.db_seqs != O.n || c.failed)
            ok = 0;
        if (c.lost > 0 || c.unknown > 0)
            ok = 0;
    }
    printf("coord_bench: %s\n", ok ? "PASS" : "FAIL");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (!getenv("CR_BENCH_KEEP") && system(cmd) != 0)
        fprintf(stderr, "coord_bench: could not remove %s\n", dir);
    return ok || !O.check ? 0 : 1;
}
