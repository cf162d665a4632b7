/* http.c — the gateway's HTTP side (libmicrohttpd); routes in docs/gateway.md.
 *
 * One thread per connection: a handler may block on g->cond until its
 * deadline (gw.h note 5). Bad input of any kind is answered with a 4xx and a
 * JSON body {"error": {"code", "message"}}; the daemon keeps serving. */
#define _GNU_SOURCE
#include "gw.h"

#include "client.h"
#include "error.h"
#include "hash.h"
#include "log.h"
#include "record.h"
#include "reward.h"
#include "timeutil.h"

#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#define S_MAX_JOBS 100000  /* jobs in one native submit: the coordinator's queue-limit default */
#define S_DRAIN_MAX 4     /* an oversized body is read up to 4 x --max-body, then cut */
#define S_KEEPALIVE_MS 15000 /* a stream's sign of life: under common proxies' 60 s idle cut */

/* ------------------------------------------------------------ text buffer */

typedef struct {
    char *p;    /* owned, NUL-terminated */
    size_t n;   /* bytes used */
    size_t cap; /* bytes allocated */
    int oom;    /* an append failed */
} s_buf_t;

static void s_put(s_buf_t *b, const char *s, size_t len)
{
    if (b->oom)
        return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static void s_puts(s_buf_t *b, const char *s)
{
    s_put(b, s, strlen(s));
}

static void s_printf(s_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_printf(s_buf_t *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0)
        s_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* Appends a JSON value, compact. */
static void s_put_json(s_buf_t *b, const json_t *v)
{
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!t) {
        b->oom = 1;
        return;
    }
    s_puts(b, t);
    free(t);
}

static void s_put_num(s_buf_t *b, double v)
{
    if (!isfinite(v))
        s_puts(b, "null");
    else
        s_printf(b, "%.17g", v);
}

/* ---------------------------------------------------------------- replies */

static enum MHD_Result s_send(struct MHD_Connection *conn, unsigned status, const char *type,
                              char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, body, body ? MHD_RESPMEM_MUST_FREE
                                                        : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"crucible\"");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result s_json(struct MHD_Connection *conn, unsigned status, s_buf_t *b)
{
    if (b->oom) {
        free(b->p);
        return MHD_NO;
    }
    s_put(b, "\n", 1);
    return s_send(conn, status, "application/json", b->p, b->n);
}

static enum MHD_Result s_error(struct MHD_Connection *conn, unsigned status, const char *code,
                               const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result s_error(struct MHD_Connection *conn, unsigned status, const char *code,
                               const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
    s_buf_t b = {0};
    if (o)
        s_put_json(&b, o);
    json_decref(o);
    return s_json(conn, status, &b);
}

/* ---------------------------------------------------------------- helpers */

/* Absolute monotonic deadline in ms from a request's timeout: ?timeout_s=,
 * X-Crucible-Timeout-S, else body_timeout (< 0 = none), else the config's. */
static int s_deadline(cr__gw_t *g, struct MHD_Connection *conn, double body_timeout,
                      int64_t *out)
{
    const char *t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "timeout_s");
    if (!t)
        t = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Crucible-Timeout-S");
    double s = body_timeout >= 0 ? body_timeout : g->cfg->request_timeout_s;
    if (t) {
        char *end = NULL;
        s = strtod(t, &end);
        if (!*t || *end || !isfinite(s) || s < 0 || s > 86400)
            return -1;
    }
    *out = cr_time_mono_ms() + (int64_t)(s * 1000);
    return 0;
}

/* Waits on g->cond until woken or the deadline; mu held. Adds the time
 * waited to *waited_us. Returns 0 when woken, ETIMEDOUT at the deadline. */
static int s_wait(cr__gw_t *g, int64_t deadline_ms, double *waited_us)
{
    int64_t now = cr_time_mono_ms();
    if (now >= deadline_ms)
        return ETIMEDOUT;
    int64_t t0 = cr_time_mono_ns();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ms = deadline_ms - now;
    if (ms > 1000)
        ms = 1000; /* wake now and then: a handler re-checks its own conditions */
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&g->cond, &g->mu, &ts);
    if (waited_us)
        *waited_us += (double)(cr_time_mono_ns() - t0) / 1000.0;
    return 0;
}

static int s_finished(const cr__gw_batch_t *b)
{
    return b->state == CR__GW_FAILED || b->done;
}

/* Holds the entry of id (refs++), adopting a batch the gateway does not
 * know (subscribed, gw.h note 1). mu held. NULL on ENOMEM. */
static cr__gw_batch_t *s_hold(cr__gw_t *g, const char *id)
{
    cr__gw_batch_t *b = cr__gw_find(g, id);
    if (!b) {
        b = cr__gw_add(g, id);
        if (!b)
            return NULL;
        b->adopted = 1;
        b->state = CR__GW_ACKED;
        b->need_subscribe = 1;
        cr__gw_wake(g);
    }
    b->refs++;
    return b;
}

/* A batch id as the coordinator accepts one: printable ASCII, no spaces. */
static int s_id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= CR_GW_ID_MAX - 1)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '/')
            return 0;
    return 1;
}

static const char *s_state_name(const cr__gw_batch_t *b)
{
    return b->state == CR__GW_FAILED ? "failed" : b->done ? "done" : b->state == CR__GW_ACKED ? "running" : "submitting";
}

/* The by-status counts of b as a JSON object text. mu held. */
static void s_put_counts(s_buf_t *o, const cr__gw_batch_t *b)
{
    uint32_t by[32] = {0};
    for (size_t i = 0; i < b->n; i++)
        if (b->rec[i] && b->status[i] >= 0 && b->status[i] < 32)
            by[b->status[i]]++;
    s_puts(o, "{");
    const char *sep = "";
    for (int s = 0; s < 32; s++) {
        if (by[s]) {
            s_printf(o, "%s\"%s\":%u", sep, cr_status_name(s), by[s]);
            sep = ",";
        }
    }
    s_puts(o, "}");
}

/* The head of a batch view: id, state, counts, the acknowledgement. mu held. */
static void s_put_head(s_buf_t *o, const cr__gw_batch_t *b)
{
    json_t *id = json_string(b->id);
    s_puts(o, "{\"batch_id\":");
    s_put_json(o, id);
    json_decref(id);
    s_printf(o, ",\"state\":\"%s\",\"complete\":%s,\"total\":%zu,\"done\":%zu,\"last_seq\":%llu",
             s_state_name(b), b->done ? "true" : "false", b->done && b->total ? (size_t)b->total : b->n,
             b->ndone, (unsigned long long)b->last_seq);
    s_printf(o, ",\"accepted\":%u,\"duplicate\":%u,\"rejected\":%u,\"errors\":", b->accepted,
             b->duplicate, b->rejected);
    s_put_json(o, b->errors);
    s_puts(o, ",\"by_status\":");
    s_put_counts(o, b);
    s_printf(o, ",\"groups_done\":%zu", json_array_size(b->groups));
    if (b->state == CR__GW_FAILED) {
        json_t *e = json_string(b->error);
        s_puts(o, ",\"error\":");
        s_put_json(o, e);
        json_decref(e);
    }
}

/* The result view: head + records and rewards in job order + groups. mu held. */
static void s_put_result(s_buf_t *o, const cr__gw_batch_t *b)
{
    s_put_head(o, b);
    s_puts(o, ",\"job_ids\":[");
    for (size_t i = 0; i < b->n; i++) {
        json_t *s = json_string(b->job_ids[i]);
        s_puts(o, i ? "," : "");
        s_put_json(o, s);
        json_decref(s);
    }
    s_puts(o, "],\"rewards\":[");
    for (size_t i = 0; i < b->n; i++) {
        s_puts(o, i ? "," : "");
        if (b->rec[i] && b->has_reward[i])
            s_put_num(o, b->reward_v[i]);
        else
            s_puts(o, "null"); /* not yet, or no reward (an infrastructure failure) */
    }
    s_puts(o, "],\"records\":[");
    for (size_t i = 0; i < b->n; i++) {
        s_puts(o, i ? "," : "");
        s_puts(o, b->rec[i] ? b->rec[i] : "null");
    }
    s_puts(o, "],\"groups\":");
    s_put_json(o, b->groups);
    s_puts(o, "}");
}

/* ------------------------------------------------------------ job options */

/* Overrides o from a JSON "options" object. Returns NULL, or what is wrong. */
static const char *s_options(const json_t *opt, Crucible__JobOptions *o, char *reward,
                             char *clock, char *why, size_t len)
{
    if (!opt || json_is_null(opt))
        return NULL;
    if (!json_is_object(opt))
        return "options: an object is expected";
    static const struct {
        const char *name;
        size_t off;
        double lo, hi;
    } nums[] = {
        {"time_budget_s", offsetof(Crucible__JobOptions, time_budget_s), 0.001, 3600},
        {"rse_target", offsetof(Crucible__JobOptions, rse_target), 1e-5, 1},
        {"compile_timeout_s", offsetof(Crucible__JobOptions, compile_timeout_s), 0.1, 3600},
        {"run_timeout_s", offsetof(Crucible__JobOptions, run_timeout_s), 0.1, 3600},
        {"queue_timeout_s", offsetof(Crucible__JobOptions, queue_timeout_s), 0, 1e7},
    };
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)opt, key, v) {
        size_t i = 0;
        while (i < sizeof nums / sizeof nums[0] && strcmp(nums[i].name, key) != 0)
            i++;
        if (i < sizeof nums / sizeof nums[0]) {
            double d = json_number_value(v);
            if (!json_is_number(v) || !isfinite(d) || d < nums[i].lo || d > nums[i].hi) {
                snprintf(why, len, "options.%s: a number in [%g, %g] is expected", key,
                         nums[i].lo, nums[i].hi);
                return why;
            }
            *(double *)((char *)o + nums[i].off) = d;
        } else if (strcmp(key, "max_attempts") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100)
                return "options.max_attempts: an integer in [1, 100] is expected";
            o->max_attempts = (uint32_t)json_integer_value(v);
        } else if (strcmp(key, "reward") == 0) {
            const char *s = json_string_value(v);
            if (!s || strlen(s) >= CR_CONFIG_STR || !cr_reward_known(s))
                return "options.reward: a known formula is expected (default, kevin, drkernel)";
            snprintf(reward, CR_CONFIG_STR, "%s", s);
            o->reward = reward;
        } else if (strcmp(key, "ref_policy") == 0) {
            const char *s = json_string_value(v);
            if (!s || (strcmp(s, "interleaved") != 0 && strcmp(s, "cached") != 0))
                return "options.ref_policy: interleaved or cached is expected";
            o->ref_policy = strcmp(s, "cached") == 0 ? CRUCIBLE__REF_POLICY__REF_CACHED
                                                     : CRUCIBLE__REF_POLICY__REF_INTERLEAVED;
        } else if (strcmp(key, "clock_policy") == 0) {
            const char *s = json_string_value(v);
            if (!s || strlen(s) >= CR_CONFIG_STR)
                return "options.clock_policy: a string is expected";
            snprintf(clock, CR_CONFIG_STR, "%s", s);
            o->clock_policy = clock;
        } else {
            snprintf(why, len, "options.%s: unknown option", key);
            return why;
        }
    }
    return NULL;
}

/* 1 when a task.json text says "language": "c". */
static int s_is_c(const char *task_json)
{
    json_t *j = json_loads(task_json, 0, NULL);
    const char *l = j ? json_string_value(json_object_get(j, "language")) : NULL;
    int c = l && strcmp(l, "c") == 0;
    json_decref(j);
    return c;
}

static Crucible__JobSpec *s_spec(const char *job_id, const char *task, char *source,
                                 const char *group, uint32_t sample, uint32_t turn)
{
    Crucible__JobSpec *s = malloc(sizeof *s);
    if (!s) {
        free(source);
        return NULL;
    }
    crucible__job_spec__init(s);
    s->job_id = strdup(job_id);
    s->task = strdup(task);
    s->source = source;
    s->group_id = strdup(group ? group : "");
    s->sample_index = sample;
    s->turn = turn;
    if (!s->job_id || !s->task || !s->source || !s->group_id) {
        crucible__job_spec__free_unpacked(s, NULL);
        return NULL;
    }
    return s;
}

/* Adds task t to b's submit (once). */
static int s_add_task(cr__gw_batch_t *b, Crucible__TaskBundle *t, int owned)
{
    for (size_t i = 0; i < b->ntasks; i++)
        if (b->tasks[i] == t || strcmp(b->tasks[i]->name, t->name) == 0)
            return 0;
    void *p = realloc(b->tasks, (b->ntasks + 1) * sizeof *b->tasks);
    if (!p)
        return -ENOMEM;
    b->tasks = p;
    p = realloc(b->task_owned, (b->ntasks + 1) * sizeof *b->task_owned);
    if (!p)
        return -ENOMEM;
    b->task_owned = p;
    b->tasks[b->ntasks] = t;
    b->task_owned[b->ntasks++] = owned;
    return 0;
}

/* An inline task {name, task_json (text or object), reference_source,
 * baseline_source?} as a bundle. NULL with why set. */
static Crucible__TaskBundle *s_inline_task(const json_t *t, char *why, size_t len)
{
    const char *name = json_string_value(json_object_get(t, "name"));
    json_t *tj = json_object_get(t, "task_json");
    const char *ref = json_string_value(json_object_get(t, "reference_source"));
    json_t *base = json_object_get(t, "baseline_source");
    if (!name || !*name || !tj || !ref || (base && !json_is_string(base))) {
        snprintf(why, len, "tasks: each inline task needs name, task_json (text or object) and "
                           "reference_source (baseline_source optional)");
        return NULL;
    }
    char *tjs = json_is_string(tj) ? strdup(json_string_value(tj)) : json_dumps(tj, JSON_COMPACT);
    Crucible__TaskBundle *b = malloc(sizeof *b);
    if (!b || !tjs) {
        free(b);
        free(tjs);
        snprintf(why, len, "out of memory");
        return NULL;
    }
    crucible__task_bundle__init(b);
    b->name = strdup(name);
    b->task_json = tjs;
    b->reference_source = strdup(ref);
    b->baseline_source = strdup(base ? json_string_value(base) : "");
    b->hash = malloc(CR_HASH_HEX_LEN + 1);
    if (!b->name || !b->reference_source || !b->baseline_source || !b->hash) {
        crucible__task_bundle__free_unpacked(b, NULL);
        snprintf(why, len, "out of memory");
        return NULL;
    }
    cr_client_bundle_hash(b);
    return b;
}

/* ------------------------------------------------------------ native API */

/* POST /v1/batches */
static enum MHD_Result s_submit(cr__gw_t *g, struct MHD_Connection *conn, json_t *body)
{
    char why[512];
    if (!json_is_object(body))
        return s_error(conn, 400, "bad_request", "the body must be a JSON object");
    json_t *jobs = json_object_get(body, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) == 0 ||
        json_array_size(jobs) > S_MAX_JOBS)
        return s_error(conn, 400, "bad_request", "jobs: an array of 1 to %d jobs is expected",
                       S_MAX_JOBS);
    const char *bid = json_string_value(json_object_get(body, "batch_id"));
    char gen[64];
    if (!bid) {
        cr_random_id("gw-", gen, sizeof gen);
        bid = gen;
    } else if (!s_id_ok(bid)) {
        return s_error(conn, 400, "bad_request",
                       "batch_id: printable ASCII without spaces or '/', under %d bytes",
                       CR_GW_ID_MAX - 1);
    }
    json_t *tw = json_object_get(body, "timeout_s");
    double tbody = -1;
    if (tw && (!json_is_number(tw) || json_number_value(tw) < 0 || json_number_value(tw) > 86400))
        return s_error(conn, 400, "bad_request", "timeout_s: a number in [0, 86400] is expected");
    if (tw)
        tbody = json_number_value(tw);
    int64_t deadline;
    if (s_deadline(g, conn, tbody, &deadline) != 0)
        return s_error(conn, 400, "bad_request", "timeout_s: a number in [0, 86400] is expected");
    int wait = json_is_true(json_object_get(body, "wait"));

    /* the batch's tasks: inline ones first, then the loaded ones jobs name */
    cr__gw_batch_t tmp = {0};
    Crucible__JobOptions opts;
    cr_client_job_options(g->cfg, &opts);
    snprintf(tmp.reward, sizeof tmp.reward, "%s", g->cfg->reward);
    snprintf(tmp.clock, sizeof tmp.clock, "%s", g->cfg->clock_policy);
    const char *bad = s_options(json_object_get(body, "options"), &opts, tmp.reward, tmp.clock,
                                why, sizeof why);
    if (bad)
        return s_error(conn, 400, "bad_request", "%s", bad);
    json_t *tasks = json_object_get(body, "tasks");
    if (tasks && !json_is_array(tasks))
        return s_error(conn, 400, "bad_request", "tasks: an array is expected");
    enum MHD_Result ret;
    size_t k;
    json_t *v;
    json_array_foreach(tasks, k, v) {
        if (json_is_string(v))
            continue; /* a loaded task's name: jobs bring it in */
        Crucible__TaskBundle *t = json_is_object(v) ? s_inline_task(v, why, sizeof why) : NULL;
        if (!t) {
            ret = s_error(conn, 400, "bad_request", "tasks[%zu]: %s", k,
                          json_is_object(v) ? why : "a task name or an inline task object");
            goto fail;
        }
        if (s_add_task(&tmp, t, 1) != 0) {
            crucible__task_bundle__free_unpacked(t, NULL);
            ret = s_error(conn, 503, "no_memory", "out of memory");
            goto fail;
        }
    }
    tmp.jobs = calloc(json_array_size(jobs), sizeof *tmp.jobs);
    if (!tmp.jobs) {
        ret = s_error(conn, 503, "no_memory", "out of memory");
        goto fail;
    }
    json_array_foreach(jobs, k, v) {
        const char *task = json_string_value(json_object_get(v, "task"));
        const char *src = json_string_value(json_object_get(v, "source"));
        const char *comp = json_string_value(json_object_get(v, "completion"));
        const char *jid = json_string_value(json_object_get(v, "job_id"));
        json_t *grp = json_object_get(v, "group_id"), *si = json_object_get(v, "sample_index");
        json_t *turn = json_object_get(v, "turn");
        if (!json_is_object(v) || !task || (!src == !comp) ||
            (json_object_get(v, "job_id") && !jid) || (grp && !json_is_string(grp)) ||
            (si && (!json_is_integer(si) || json_integer_value(si) < 0)) ||
            (turn && (!json_is_integer(turn) || json_integer_value(turn) < 0))) {
            ret = s_error(conn, 400, "bad_request",
                          "jobs[%zu]: {\"task\", \"source\" | \"completion\", \"job_id\"?, "
                          "\"group_id\"?, \"sample_index\"?, \"turn\"?} is expected",
                          k);
            goto fail;
        }
        Crucible__TaskBundle *t = NULL;
        for (size_t i = 0; i < tmp.ntasks && !t; i++)
            if (strcmp(tmp.tasks[i]->name, task) == 0)
                t = tmp.tasks[i];
        if (!t && (t = cr__gw_loaded(g, task)) && s_add_task(&tmp, t, 0) != 0) {
            ret = s_error(conn, 503, "no_memory", "out of memory");
            goto fail;
        }
        if (!t) {
            ret = s_error(conn, 400, "unknown_task",
                          "jobs[%zu]: task '%s' is neither inline nor in --tasks", k, task);
            goto fail;
        }
        char idbuf[32];
        if (!jid) {
            snprintf(idbuf, sizeof idbuf, "j%06zu", k);
            jid = idbuf;
        }
        char *source = src ? strdup(src) : cr__gw_extract(comp, s_is_c(t->task_json));
        uint32_t sample = si ? (uint32_t)json_integer_value(si) : (uint32_t)k;
        tmp.jobs[k] = s_spec(jid, task, source, grp ? json_string_value(grp) : "", sample,
                             turn ? (uint32_t)json_integer_value(turn) : 0);
        if (!tmp.jobs[k]) {
            ret = s_error(conn, 503, "no_memory", "out of memory");
            goto fail;
        }
        tmp.njobs_spec = k + 1;
    }

    pthread_mutex_lock(&g->mu);
    cr__gw_batch_t *b = cr__gw_find(g, bid);
    int fresh = !b;
    if (!b && !(b = cr__gw_add(g, bid))) {
        pthread_mutex_unlock(&g->mu);
        ret = s_error(conn, 503, "no_memory", "out of memory");
        goto fail;
    }
    if (fresh) {
        /* hand the submit over to the entry */
        b->tasks = tmp.tasks;
        b->task_owned = tmp.task_owned;
        b->ntasks = tmp.ntasks;
        b->jobs = tmp.jobs;
        b->njobs_spec = tmp.njobs_spec;
        memcpy(b->reward, tmp.reward, sizeof b->reward);
        memcpy(b->clock, tmp.clock, sizeof b->clock);
        b->opts = opts;
        b->opts.reward = b->reward;
        b->opts.clock_policy = b->clock;
        memset(&tmp, 0, sizeof tmp);
        int dup = 0;
        for (size_t i = 0; i < b->njobs_spec; i++) {
            if (cr__gw_job(b, b->jobs[i]->job_id, 0) >= 0)
                dup = 1;
            cr__gw_job(b, b->jobs[i]->job_id, 1);
        }
        if (dup) {
            b->state = CR__GW_FAILED;
            b->http_status = 400;
            snprintf(b->error, sizeof b->error, "E_DUPLICATE: a job id appears twice");
            b->t_finished_ms = cr_time_mono_ms();
            cr__gw_free_submit(b);
        } else {
            b->need_submit = b->need_subscribe = 1;
            cr__gw_wake(g);
        }
    }
    /* else: a retried submit of a batch already here (idempotent): its state */
    b->refs++;
    double waited = 0;
    while (b->state != CR__GW_ACKED && b->state != CR__GW_FAILED)
        if (s_wait(g, deadline, &waited) == ETIMEDOUT)
            break;
    while (wait && !s_finished(b))
        if (s_wait(g, deadline, &waited) == ETIMEDOUT)
            break;
    s_buf_t o = {0};
    unsigned status = 200;
    if (b->state == CR__GW_FAILED) {
        status = b->http_status ? (unsigned)b->http_status : 502;
        s_puts(&o, "{\"error\":{\"code\":\"coordinator\",\"message\":");
        json_t *e = json_string(b->error);
        s_put_json(&o, e);
        json_decref(e);
        s_puts(&o, "},\"batch\":");
        s_put_head(&o, b);
        s_puts(&o, "}}");
    } else if (b->state != CR__GW_ACKED) {
        status = 504;
        s_printf(&o, "{\"error\":{\"code\":\"timeout\",\"message\":\"no SubmitAck from the "
                     "coordinator in time; resubmitting the same batch_id is safe\"},\"batch\":");
        s_put_head(&o, b);
        s_puts(&o, "}}");
    } else if (wait) {
        s_put_result(&o, b);
    } else {
        s_put_head(&o, b);
        s_puts(&o, "}");
    }
    b->refs--;
    pthread_mutex_unlock(&g->mu);
    return s_json(conn, status, &o);
fail:
    cr__gw_free_submit(&tmp);
    return ret;
}

/* GET /v1/batches/{id}, /result, /groups/{gid}; POST /cancel */
static enum MHD_Result s_batch_get(cr__gw_t *g, struct MHD_Connection *conn, const char *id,
                                   const char *what, const char *gid)
{
    int64_t deadline;
    if (s_deadline(g, conn, -1, &deadline) != 0)
        return s_error(conn, 400, "bad_request", "timeout_s: a number in [0, 86400] is expected");
    pthread_mutex_lock(&g->mu);
    cr__gw_batch_t *b = s_hold(g, id);
    if (!b) {
        pthread_mutex_unlock(&g->mu);
        return s_error(conn, 503, "no_memory", "out of memory");
    }
    /* an adopted batch: give the coordinator a moment to say it has none */
    int64_t first = cr_time_mono_ms() + 1000;
    while (b->adopted && !b->last_seq && b->state != CR__GW_FAILED && !b->done)
        if (s_wait(g, first < deadline ? first : deadline, NULL) == ETIMEDOUT)
            break;
    s_buf_t o = {0};
    unsigned status = 200;
    if (strcmp(what, "cancel") == 0 && b->state != CR__GW_FAILED) {
        const char *job = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "job_id");
        uint64_t gen = b->cancel_gen;
        free(b->need_cancel);
        b->need_cancel = strdup(job ? job : "");
        cr__gw_wake(g);
        while (b->cancel_gen == gen && b->state != CR__GW_FAILED)
            if (s_wait(g, deadline, NULL) == ETIMEDOUT)
                break;
        if (b->cancel_gen == gen) {
            status = 504;
            s_puts(&o, "{\"error\":{\"code\":\"timeout\",\"message\":\"no CancelAck in time\"}}");
        } else {
            json_t *jid = json_string(b->id);
            s_puts(&o, "{\"batch_id\":");
            s_put_json(&o, jid);
            json_decref(jid);
            s_printf(&o, ",\"cancelled\":%u}", b->cancelled);
        }
    } else if (b->state == CR__GW_FAILED) {
        status = b->http_status ? (unsigned)b->http_status : 502;
        s_puts(&o, "{\"error\":{\"code\":\"batch\",\"message\":");
        json_t *e = json_string(b->error);
        s_put_json(&o, e);
        json_decref(e);
        s_puts(&o, "}}");
    } else if (strcmp(what, "result") == 0) {
        while (!s_finished(b))
            if (s_wait(g, deadline, NULL) == ETIMEDOUT)
                break;
        s_put_result(&o, b);
    } else if (strcmp(what, "groups") == 0) {
        json_t *found = NULL;
        for (;;) {
            size_t k;
            json_t *v;
            json_array_foreach(b->groups, k, v)
                if (strcmp(json_string_value(json_object_get(v, "group_id")), gid) == 0)
                    found = v;
            if (found || s_finished(b) || s_wait(g, deadline, NULL) == ETIMEDOUT)
                break;
        }
        if (found) {
            s_put_json(&o, found);
        } else {
            status = s_finished(b) ? 404 : 504;
            s_printf(&o, "{\"error\":{\"code\":\"%s\",\"message\":\"group not %s\"}}",
                     status == 404 ? "not_found" : "timeout",
                     status == 404 ? "in the batch" : "done in time");
        }
    } else {
        s_put_head(&o, b);
        s_puts(&o, "}");
    }
    b->refs--;
    pthread_mutex_unlock(&g->mu);
    return s_json(conn, status, &o);
}

/* ---- the record stream: NDJSON or server-sent events, resumable by seq ---- */

typedef struct {
    cr__gw_t *g;       /* borrowed */
    cr__gw_batch_t *b; /* held (refs) until the stream is freed */
    int sse;           /* text/event-stream, else NDJSON */
    uint64_t after;    /* seq already delivered */
    size_t k;          /* next index into b->order */
    size_t gk;         /* next index into b->groups */
    int64_t deadline;  /* monotonic ms; the stream ends there */
    int64_t last_out;  /* monotonic ms of the last bytes out */
    int ended;         /* the closing line is queued */
    int started;       /* the first fill skipped the groups already delivered */
    s_buf_t pend;      /* bytes formatted, not yet handed to MHD */
    size_t off;        /* of pend handed over */
} s_stream_t;

static void s_emit(s_stream_t *s, const char *event, uint64_t id, const char *data)
{
    if (s->sse) {
        s_printf(&s->pend, "id: %llu\nevent: %s\ndata: ", (unsigned long long)id, event);
        s_puts(&s->pend, data);
        s_puts(&s->pend, "\n\n");
    } else {
        s_printf(&s->pend, "{\"%s\":", event);
        s_puts(&s->pend, data);
        s_puts(&s->pend, "}\n");
    }
}

/* The seq of group k of b: the last seq when its GroupDone came, which is
 * the seq of the record that completed it. */
static uint64_t s_group_seq(const cr__gw_batch_t *b, size_t k)
{
    return (uint64_t)json_integer_value(json_object_get(json_array_get(b->groups, k), "seq"));
}

/* Formats what is new since the last call: records by seq, each group right
 * after the record that completed it. mu held. */
static void s_stream_fill(s_stream_t *s)
{
    cr__gw_batch_t *b = s->b;
    if (!s->started) {
        /* resuming after seq N: the groups up to N went out with record N */
        s->started = 1;
        while (s->gk < json_array_size(b->groups) && s_group_seq(b, s->gk) <= s->after)
            s->gk++;
    }
    for (;;) {
        while (s->gk < json_array_size(b->groups) && s_group_seq(b, s->gk) <= s->after) {
            char *t = json_dumps(json_array_get(b->groups, s->gk), JSON_COMPACT);
            if (t)
                s_emit(s, "group", s_group_seq(b, s->gk), t);
            free(t);
            s->gk++;
        }
        if (s->k >= b->ndone)
            break;
        size_t i = b->order[s->k++];
        if (b->rec_seq[i] <= s->after)
            continue;
        s_emit(s, "record", b->rec_seq[i], b->rec[i]);
        s->after = b->rec_seq[i];
    }
}

static ssize_t s_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    s_stream_t *s = cls;
    cr__gw_t *g = s->g;
    (void)pos;
    pthread_mutex_lock(&g->mu);
    while (s->off >= s->pend.n) {
        s->pend.n = s->off = 0;
        if (s->ended) {
            pthread_mutex_unlock(&g->mu);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        s_stream_fill(s);
        if (s->pend.n)
            break;
        cr__gw_batch_t *b = s->b;
        int64_t now = cr_time_mono_ms();
        if (s_finished(b) || now >= s->deadline) {
            s_buf_t d = {0};
            if (b->state == CR__GW_FAILED) {
                json_t *e = json_pack("{s:s}", "message", b->error);
                s_put_json(&d, e);
                json_decref(e);
                s_emit(s, "error", b->last_seq, d.p ? d.p : "{}");
            } else {
                s_printf(&d, "{\"complete\":%s,\"last_seq\":%llu,\"total\":%u}",
                         b->done ? "true" : "false", (unsigned long long)b->last_seq, b->total);
                s_emit(s, b->done ? "done" : "timeout", b->last_seq, d.p ? d.p : "{}");
            }
            free(d.p);
            s->ended = 1;
            break;
        }
        if (now - s->last_out > S_KEEPALIVE_MS) {
            s_puts(&s->pend, s->sse ? ": keepalive\n\n" : "\n");
            break;
        }
        s_wait(g, s->deadline, NULL);
    }
    if (s->pend.oom) {
        pthread_mutex_unlock(&g->mu);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = s->pend.n - s->off < max ? s->pend.n - s->off : max;
    memcpy(buf, s->pend.p + s->off, n);
    s->off += n;
    s->last_out = cr_time_mono_ms();
    pthread_mutex_unlock(&g->mu);
    return (ssize_t)n;
}

static void s_stream_free(void *cls)
{
    s_stream_t *s = cls;
    pthread_mutex_lock(&s->g->mu);
    s->b->refs--;
    pthread_mutex_unlock(&s->g->mu);
    free(s->pend.p);
    free(s);
}

/* GET /v1/batches/{id}/records?after=N&format=ndjson|sse (Last-Event-ID resumes SSE) */
static enum MHD_Result s_records(cr__gw_t *g, struct MHD_Connection *conn, const char *id)
{
    const char *fmt = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format");
    const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
    const char *after = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "after");
    const char *leid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Last-Event-ID");
    int sse = fmt ? strcmp(fmt, "sse") == 0 : accept && strstr(accept, "text/event-stream") != NULL;
    if (fmt && !sse && strcmp(fmt, "ndjson") != 0)
        return s_error(conn, 400, "bad_request", "format: ndjson or sse");
    const char *from = after ? after : leid;
    char *end = NULL;
    unsigned long long a = from ? strtoull(from, &end, 10) : 0;
    if (from && (!*from || *end))
        return s_error(conn, 400, "bad_request", "after: a sequence number is expected");
    int64_t deadline;
    /* a stream's default: the longest a caller would follow a step (1 h) */
    if (s_deadline(g, conn, 3600, &deadline) != 0)
        return s_error(conn, 400, "bad_request", "timeout_s: a number in [0, 86400] is expected");
    s_stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return s_error(conn, 503, "no_memory", "out of memory");
    pthread_mutex_lock(&g->mu);
    s->b = s_hold(g, id);
    pthread_mutex_unlock(&g->mu);
    if (!s->b) {
        free(s);
        return s_error(conn, 503, "no_memory", "out of memory");
    }
    s->g = g;
    s->sse = sse;
    s->after = a;
    s->deadline = deadline;
    s->last_out = cr_time_mono_ms();
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, s_stream_read, s,
                                          s_stream_free);
    if (!r) {
        s_stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", sse ? "text/event-stream" : "application/x-ndjson");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* GET /v1/status: the cluster, as the coordinator sees it */
static enum MHD_Result s_status(cr__gw_t *g, struct MHD_Connection *conn)
{
    int64_t deadline;
    if (s_deadline(g, conn, 5, &deadline) != 0)
        return s_error(conn, 400, "bad_request", "timeout_s: a number in [0, 86400] is expected");
    pthread_mutex_lock(&g->mu);
    uint64_t gen = g->status_gen;
    g->need_status = 1;
    cr__gw_wake(g);
    while (g->status_gen == gen)
        if (s_wait(g, deadline, NULL) == ETIMEDOUT)
            break;
    s_buf_t o = {0};
    unsigned status = 200;
    if (g->status_gen == gen) {
        status = 504;
        s_puts(&o, "{\"error\":{\"code\":\"timeout\",\"message\":\"no StatusReply from the "
                   "coordinator in time\"}}");
    } else {
        s_puts(&o, g->status_json ? g->status_json : "{}");
    }
    pthread_mutex_unlock(&g->mu);
    return s_json(conn, status, &o);
}

/* ---------------------------------------------------- remote-reward shapes */

/* The task a remote-reward label names: the name itself, a JSON text or an
 * object with "task". NULL when it names no loaded task (why says so). */
static Crucible__TaskBundle *s_label_task(cr__gw_t *g, const json_t *label, char *why,
                                          size_t len)
{
    const char *name = NULL;
    json_t *parsed = NULL;
    if (json_is_string(label)) {
        name = json_string_value(label);
        if (name[0] == '{' && (parsed = json_loads(name, 0, NULL)))
            name = json_string_value(json_object_get(parsed, "task"));
    } else if (json_is_object(label)) {
        name = json_string_value(json_object_get(label, "task"));
    }
    Crucible__TaskBundle *t = name ? cr__gw_loaded(g, name) : NULL;
    if (!t)
        snprintf(why, len, "label %s%.100s%s: it must name a task of --tasks (\"vector_add\" or "
                           "{\"task\": \"vector_add\"})",
                 name ? "'" : "", name ? name : "(not a task name)", name ? "'" : "");
    json_decref(parsed);
    return t;
}

/* The entry of one remote-reward sample, held (refs++): a retried request
 * (same task, prompt and response) finds the same batch id, here or in the
 * coordinator's store, and is never judged twice. mu held. */
static cr__gw_batch_t *s_sample(cr__gw_t *g, Crucible__TaskBundle *t, const char *prompt,
                                const char *response)
{
    cr_hash_t h;
    char hex[CR_HASH_HEX_LEN + 1], id[CR_GW_ID_MAX];
    cr_hash_global_init();
    cr_hash_init(&h);
    cr_hash_update(&h, t->name, strlen(t->name) + 1);
    cr_hash_update(&h, t->hash, strlen(t->hash) + 1);
    cr_hash_update(&h, prompt, strlen(prompt) + 1);
    cr_hash_update(&h, response, strlen(response) + 1);
    cr_hash_final_hex(&h, hex);
    snprintf(id, sizeof id, "rr-%.40s", hex);
    cr__gw_batch_t *b = cr__gw_find(g, id);
    if (b) {
        b->refs++;
        return b;
    }
    if (!(b = cr__gw_add(g, id)))
        return NULL;
    b->refs++;
    Crucible__JobSpec *spec = s_spec("sample", t->name, cr__gw_extract(response, s_is_c(t->task_json)),
                                     "", 0, 0);
    b->jobs = spec ? malloc(sizeof *b->jobs) : NULL;
    if (!b->jobs || s_add_task(b, t, 0) != 0 || cr__gw_job(b, "sample", 1) != 0) {
        if (!b->jobs && spec)
            crucible__job_spec__free_unpacked(spec, NULL);
        b->state = CR__GW_FAILED;
        b->http_status = 503;
        snprintf(b->error, sizeof b->error, "out of memory");
        b->t_finished_ms = cr_time_mono_ms();
        return b;
    }
    b->jobs[0] = spec;
    b->njobs_spec = 1;
    cr_client_job_options(g->cfg, &b->opts);
    snprintf(b->reward, sizeof b->reward, "%s", g->cfg->reward);
    snprintf(b->clock, sizeof b->clock, "%s", g->cfg->clock_policy);
    b->opts.reward = b->reward;
    b->opts.clock_policy = b->clock;
    b->need_submit = b->need_subscribe = 1;
    cr__gw_wake(g);
    return b;
}

/* The samples' rewards once all are judged, or 504 at the deadline.
 * shape 0: OpenRLHF {"rewards", "scores", "extra_logs"}; 1: slime's bare reward. */
static enum MHD_Result s_remote(cr__gw_t *g, struct MHD_Connection *conn, int shape,
                                Crucible__TaskBundle **tasks, const char **prompts,
                                const char **responses, size_t n, int64_t t0_ns)
{
    int64_t deadline;
    if (s_deadline(g, conn, -1, &deadline) != 0)
        return s_error(conn, 400, "bad_request", "timeout_s: a number in [0, 86400] is expected");
    cr__gw_batch_t **bs = calloc(n ? n : 1, sizeof *bs);
    if (!bs)
        return s_error(conn, 503, "no_memory", "out of memory");
    double waited = 0;
    pthread_mutex_lock(&g->mu);
    size_t held = 0;
    for (; held < n; held++)
        if (!(bs[held] = s_sample(g, tasks[held], prompts[held], responses[held])))
            break;
    int ready = held == n;
    for (size_t i = 0; ready && i < n;) {
        cr__gw_batch_t *b = bs[i];
        if (b->state == CR__GW_FAILED || (b->n && b->rec[0]) || b->done) {
            i++;
            continue;
        }
        if (s_wait(g, deadline, &waited) == ETIMEDOUT)
            ready = 0;
    }
    s_buf_t o = {0};
    unsigned status = 200;
    if (held < n) {
        status = 503;
        s_puts(&o, "{\"error\":{\"code\":\"no_memory\",\"message\":\"out of memory\"}}");
    } else if (!ready) {
        /* explicit, so the trainer retries; the retry joins the same job */
        status = 504;
        s_puts(&o, "{\"error\":{\"code\":\"timeout\",\"message\":\"not judged within the "
                   "request's timeout; a retry of the same request joins the same job\"}}");
    } else if (shape == 1) {
        cr__gw_batch_t *b = bs[0];
        if (b->state == CR__GW_FAILED && b->http_status >= 400 && b->http_status < 500 &&
            b->http_status != 429) {
            status = (unsigned)b->http_status;
            json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", "batch", "message", b->error);
            s_put_json(&o, e);
            json_decref(e);
        } else if (b->rec && b->rec[0] && b->has_reward[0]) {
            s_put_num(&o, b->reward_v[0]);
        } else {
            s_puts(&o, "null"); /* no reward: an infrastructure failure, never 0 */
        }
    } else {
        /* OpenRLHF reads "rewards" (or "scores", by its score_key): the same list */
        s_buf_t rw = {0};
        for (size_t i = 0; i < n; i++) {
            cr__gw_batch_t *b = bs[i];
            s_puts(&rw, i ? "," : "");
            if (b->rec && b->rec[0] && b->has_reward[0])
                s_put_num(&rw, b->reward_v[0]);
            else
                s_puts(&rw, "null");
        }
        s_printf(&o, "%s", "{\"rewards\":[");
        s_puts(&o, rw.p ? rw.p : "");
        s_puts(&o, "],\"scores\":[");
        s_puts(&o, rw.p ? rw.p : "");
        o.oom |= rw.oom;
        free(rw.p);
        s_puts(&o, "],\"extra_logs\":{\"status\":[");
        for (size_t i = 0; i < n; i++) {
            cr__gw_batch_t *b = bs[i];
            s_printf(&o, "%s\"%s\"", i ? "," : "",
                     b->rec && b->rec[0] ? cr_status_name(b->status[0])
                     : b->state == CR__GW_FAILED ? "GATEWAY_ERROR"
                                                 : "PENDING");
        }
        s_puts(&o, "],\"batch_id\":[");
        for (size_t i = 0; i < n; i++)
            s_printf(&o, "%s\"%s\"", i ? "," : "", bs[i]->id);
        s_puts(&o, "]}}");
    }
    for (size_t i = 0; i < held; i++)
        bs[i]->refs--;
    double total_us = (double)(cr_time_mono_ns() - t0_ns) / 1000.0;
    g->overhead_us_sum += total_us - waited;
    g->overhead_n++;
    pthread_mutex_unlock(&g->mu);
    free(bs);
    return s_json(conn, status, &o);
}

/* POST /reward/openrlhf: {"query": [...], "prompts": [...], "labels": [...]} */
static enum MHD_Result s_openrlhf(cr__gw_t *g, struct MHD_Connection *conn, json_t *body,
                                  int64_t t0)
{
    json_t *q = json_object_get(body, "query"), *p = json_object_get(body, "prompts");
    json_t *l = json_object_get(body, "labels");
    if (!json_is_array(q) || (p && !json_is_array(p)) || !json_is_array(l) ||
        json_array_size(l) != json_array_size(q) || (p && json_array_size(p) != json_array_size(q)) ||
        json_array_size(q) == 0 || json_array_size(q) > S_MAX_JOBS)
        return s_error(conn, 400, "bad_request",
                       "{\"query\": [...], \"prompts\": [...], \"labels\": [...]} of equal "
                       "lengths (1 to %d) is expected",
                       S_MAX_JOBS);
    size_t n = json_array_size(q);
    Crucible__TaskBundle **ts = calloc(n, sizeof *ts);
    const char **ps = calloc(n, sizeof *ps), **rs = calloc(n, sizeof *rs);
    char **own = calloc(n, sizeof *own);
    enum MHD_Result ret;
    char why[256];
    if (!ts || !ps || !rs || !own) {
        ret = s_error(conn, 503, "no_memory", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *query = json_string_value(json_array_get(q, i));
        const char *prompt = p ? json_string_value(json_array_get(p, i)) : "";
        if (!query || !prompt) {
            ret = s_error(conn, 400, "bad_request", "query[%zu] and prompts[%zu]: strings", i, i);
            goto out;
        }
        if (!(ts[i] = s_label_task(g, json_array_get(l, i), why, sizeof why))) {
            ret = s_error(conn, 400, "unknown_task", "labels[%zu]: %s", i, why);
            goto out;
        }
        /* query is prompt + response; the response is what follows the prompt */
        size_t pl = strlen(prompt);
        ps[i] = prompt;
        rs[i] = pl && strncmp(query, prompt, pl) == 0 ? query + pl : query;
    }
    ret = s_remote(g, conn, 0, ts, ps, rs, n, t0);
out:
    free(ts);
    free(ps);
    free(rs);
    free(own);
    return ret;
}

/* POST /reward/slime: {"prompt", "response", "label"} */
static enum MHD_Result s_slime(cr__gw_t *g, struct MHD_Connection *conn, json_t *body, int64_t t0)
{
    json_t *pj = json_object_get(body, "prompt");
    const char *prompt = json_string_value(pj);
    const char *response = json_string_value(json_object_get(body, "response"));
    char *pdump = NULL, why[256];
    if (pj && !prompt && json_is_array(pj))
        prompt = pdump = json_dumps(pj, JSON_COMPACT); /* chat messages: keyed as their text */
    if (!prompt || !response) {
        free(pdump);
        return s_error(conn, 400, "bad_request",
                       "{\"prompt\", \"response\", \"label\"} is expected (strings)");
    }
    Crucible__TaskBundle *t = s_label_task(g, json_object_get(body, "label"), why, sizeof why);
    enum MHD_Result ret = t ? s_remote(g, conn, 1, &t, &prompt, &response, 1, t0)
                            : s_error(conn, 400, "unknown_task", "%s", why);
    free(pdump);
    return ret;
}

/* ----------------------------------------------------------------- routing */

typedef struct {
    s_buf_t body;    /* the request body so far */
    int too_big;     /* it passed --max-body */
    size_t seen;     /* body bytes received, kept or not */
    int64_t t0_ns;   /* monotonic, first call */
} s_req_t;

/* Constant-time comparison of the presented token's hash with each token's. */
static int s_auth_ok(cr__gw_t *g, struct MHD_Connection *conn)
{
    if (g->ntokens == 0)
        return 1;
    const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    /* ?token=: for trainers whose remote-reward client sends no headers
     * (OpenRLHF, slime); docs/gateway.md says what it costs */
    const char *t = a && strncasecmp(a, "Bearer ", 7) == 0 ? a + 7
                    : a ? NULL
                        : MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
    if (!t)
        return 0;
    char hex[CR_HASH_HEX_LEN + 1];
    cr_hash_hex(t, strlen(t), hex);
    int ok = 0;
    for (size_t i = 0; i < g->ntokens; i++) {
        unsigned char d = 0;
        for (size_t k = 0; k < CR_HASH_HEX_LEN; k++)
            d |= (unsigned char)(hex[k] ^ g->tokens[i][k]);
        ok |= d == 0;
    }
    return ok;
}

static enum MHD_Result s_route(cr__gw_t *g, struct MHD_Connection *conn, const char *method,
                               const char *url, s_req_t *rq)
{
    int post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;
    char path[1024];
    snprintf(path, sizeof path, "%s", url);
    char *seg[6] = {0};
    int nseg = 0;
    for (char *save = NULL, *t = strtok_r(path, "/", &save); t && nseg < 6;
         t = strtok_r(NULL, "/", &save))
        seg[nseg++] = t;
    json_t *body = NULL;
    if (post) {
        json_error_t je;
        body = json_loadb(rq->body.p ? rq->body.p : "", rq->body.n, JSON_REJECT_DUPLICATES, &je);
        if (!body)
            return s_error(conn, 400, "malformed_json", "line %d column %d: %s", je.line,
                           je.column, je.text);
        if (!json_is_object(body)) {
            json_decref(body);
            return s_error(conn, 400, "bad_request", "the body must be a JSON object");
        }
    }
    enum MHD_Result ret;
    int v1 = nseg >= 2 && strcmp(seg[0], "v1") == 0;
    if (v1 && nseg == 2 && strcmp(seg[1], "batches") == 0) {
        ret = post ? s_submit(g, conn, body) : s_error(conn, 405, "method", "POST a batch here");
    } else if (v1 && nseg >= 3 && strcmp(seg[1], "batches") == 0) {
        const char *what = nseg >= 4 ? seg[3] : "";
        if (!s_id_ok(seg[2]))
            ret = s_error(conn, 400, "bad_request", "not a batch id");
        else if (nseg == 4 && strcmp(what, "records") == 0 && get)
            ret = s_records(g, conn, seg[2]);
        else if (nseg == 4 && strcmp(what, "cancel") == 0 && post)
            ret = s_batch_get(g, conn, seg[2], "cancel", NULL);
        else if (((nseg == 3) || (nseg == 4 && strcmp(what, "result") == 0) ||
                  (nseg == 5 && strcmp(what, "groups") == 0)) && get)
            ret = s_batch_get(g, conn, seg[2], nseg == 3 ? "" : what, nseg == 5 ? seg[4] : NULL);
        else
            ret = s_error(conn, 404, "not_found", "no such route: %s %s", method, url);
    } else if (v1 && nseg == 2 && strcmp(seg[1], "status") == 0 && get) {
        ret = s_status(g, conn);
    } else if (nseg == 2 && strcmp(seg[0], "reward") == 0 && strcmp(seg[1], "openrlhf") == 0) {
        ret = post ? s_openrlhf(g, conn, body, rq->t0_ns)
                   : s_error(conn, 405, "method", "POST {query, prompts, labels}");
    } else if (nseg == 2 && strcmp(seg[0], "reward") == 0 && strcmp(seg[1], "slime") == 0) {
        ret = post ? s_slime(g, conn, body, rq->t0_ns)
                   : s_error(conn, 405, "method", "POST {prompt, response, label}");
    } else {
        ret = s_error(conn, 404, "not_found", "no such route: %s %s (see docs/gateway.md)",
                      method, url);
    }
    json_decref(body);
    return ret;
}

static enum MHD_Result s_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    cr__gw_t *g = cls;
    s_req_t *rq = *con_cls;
    if (!rq) {
        /* first call: headers only. Refuse early what needs no body read. */
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        rq->t0_ns = cr_time_mono_ns();
        *con_cls = rq;
        pthread_mutex_lock(&g->mu);
        g->requests++;
        pthread_mutex_unlock(&g->mu);
        if (strcmp(url, "/v1/health") == 0 && strcmp(method, "GET") == 0) {
            s_buf_t o = {0};
            pthread_mutex_lock(&g->mu);
            s_printf(&o, "{\"ok\":true,\"connected\":%s,\"batches\":%zu,\"requests\":%llu,"
                         "\"tasks\":%zu,\"remote_reward_overhead_us\":",
                     g->connected ? "true" : "false", g->nbatches,
                     (unsigned long long)g->requests, g->nloaded);
            s_put_num(&o, g->overhead_n ? g->overhead_us_sum / (double)g->overhead_n : 0);
            s_printf(&o, ",\"remote_reward_requests\":%llu}", (unsigned long long)g->overhead_n);
            pthread_mutex_unlock(&g->mu);
            return s_json(conn, 200, &o);
        }
        if (!s_auth_ok(g, conn))
            return s_error(conn, 401, "unauthorized",
                           "a valid Authorization: Bearer <token> header is required");
        if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0)
            return s_error(conn, 405, "method", "only GET and POST are served");
        if (strcmp(method, "POST") == 0) {
            const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
            if (!ct || strncasecmp(ct, "application/json", 16) != 0 ||
                (ct[16] && ct[16] != ';' && ct[16] != ' '))
                return s_error(conn, 415, "unsupported_media_type",
                               "Content-Type must be application/json (got %.80s)",
                               ct ? ct : "none");
            const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
            /* too big: read and dropped, then 413, so a client that sends
             * the whole body before reading still gets the answer */
            if (cl && strtoull(cl, NULL, 10) > (unsigned long long)g->cfg->max_body)
                rq->too_big = 1;
        }
        return MHD_YES;
    }
    if (*upload_size) {
        rq->seen += *upload_size;
        if (rq->seen > S_DRAIN_MAX * (size_t)g->cfg->max_body)
            return MHD_NO; /* past any honest mistake: the connection is closed */
        if (rq->too_big || rq->body.n + *upload_size > (size_t)g->cfg->max_body)
            rq->too_big = 1;
        else
            s_put(&rq->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (rq->too_big)
        return s_error(conn, 413, "too_large", "the body exceeds --max-body (%lld bytes)",
                       (long long)g->cfg->max_body);
    if (rq->body.oom)
        return s_error(conn, 503, "no_memory", "out of memory");
    return s_route(g, conn, method, url, rq);
}

static void s_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    s_req_t *rq = *con_cls;
    if (rq) {
        free(rq->body.p);
        free(rq);
        *con_cls = NULL;
    }
}

static void s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    cr_debug("http: %s", msg);
}

static char *s_slurp(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    s_buf_t b = {0};
    char tmp[4096];
    size_t k;
    while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
        s_put(&b, tmp, k);
    fclose(f);
    if (b.oom || !b.p) {
        free(b.p);
        snprintf(err, errlen, "%s: empty or unreadable", path);
        return NULL;
    }
    return b.p;
}

void *cr__gw_http_start(cr__gw_t *g, char *err, size_t errlen)
{
    const cr_config_t *cfg = g->cfg;
    char host[CR_CONFIG_STR], *port;
    snprintf(host, sizeof host, "%s", cfg->listen);
    port = strrchr(host, ':');
    if (!port) {
        snprintf(err, errlen, "--listen %s: address:port is expected", cfg->listen);
        return NULL;
    }
    *port++ = '\0';
    char *h = host;
    if (h[0] == '[' && h[strlen(h) - 1] == ']') {
        h[strlen(h) - 1] = '\0';
        h++;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    int rc = getaddrinfo(h[0] ? h : NULL, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "--listen %s: %s", cfg->listen, gai_strerror(rc));
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    char *cert = NULL, *key = NULL;
    if (cfg->tls_cert[0] || cfg->tls_key[0]) {
        if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
            snprintf(err, errlen, "--tls-cert and --tls-key go together");
            freeaddrinfo(ai);
            return NULL;
        }
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(err, errlen, "this libmicrohttpd has no TLS: put a TLS proxy in front "
                                  "(docs/gateway.md)");
            freeaddrinfo(ai);
            return NULL;
        }
        if (!(cert = s_slurp(cfg->tls_cert, err, errlen)) ||
            !(key = s_slurp(cfg->tls_key, err, errlen))) {
            free(cert);
            freeaddrinfo(ai);
            return NULL;
        }
        flags |= MHD_USE_TLS;
    }
    struct MHD_OptionItem tls[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, key},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, s_handler, g, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)300, /* s idle: streams send keepalives */
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, NULL,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
        MHD_OPTION_ARRAY, cert ? tls : tls + 2, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (key)
        explicit_bzero(key, strlen(key));
    free(cert);
    free(key);
    if (!d)
        snprintf(err, errlen, "cannot listen on %s: %s", cfg->listen, strerror(errno));
    return d;
}

void cr__gw_http_stop(void *daemon)
{
    if (daemon)
        MHD_stop_daemon(daemon);
}

unsigned cr__gw_http_port(void *daemon)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : 0;
}
