/* client.c — see client.h. */
#define _GNU_SOURCE
#include "client.h"

#include "curve.h"
#include "error.h"
#include "file.h"
#include "hash.h"
#include "log.h"
#include "wire.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

struct cr_client {
    void *ctx;       /* ZeroMQ context, owned */
    void *sock;      /* DEALER connected to the clients endpoint, owned */
    size_t max_msg;  /* bytes; cap on messages both ways */
    char *endpoint;  /* where it connects, owned: cr_client_reconnect goes there again */
    cr_curve_t curve; /* CURVE keys (curve.on = 0: plaintext), kept for reconnects */
    Crucible__Envelope *held; /* owned: a Result of several records (Result.records)
                                 handed out one a call (s_next_held); NULL = none */
    size_t held_next;  /* the next of held's records to hand out */
};

/* Frees what is left of the held Result: the records not handed out, then
 * the message (whose records were moved out one by one). */
static void s_held_drop(cr_client_t *c)
{
    if (!c->held)
        return;
    Crucible__Result *r = c->held->result;
    for (size_t i = c->held_next; i < r->n_records; i++)
        crucible__reward_record__free_unpacked(r->records[i], NULL);
    r->n_records = 0; /* the array alone is left for free_unpacked */
    cr_wire_free(&c->held);
    c->held_next = 0;
}

/* The held Result's next record as Envelope{Result{record}}, the shape of
 * a record streamed alone, which cr_wire_free releases like any received
 * message (protobuf-c frees with the system allocator what it unpacked;
 * these two are malloc'd the same way). 0 and *out, or -ENOMEM. */
static int s_next_held(cr_client_t *c, Crucible__Envelope **out)
{
    Crucible__Envelope *e = malloc(sizeof *e);
    Crucible__Result *r = malloc(sizeof *r);
    if (!e || !r) {
        free(e);
        free(r);
        return -ENOMEM;
    }
    crucible__envelope__init(e);
    crucible__result__init(r);
    Crucible__Result *h = c->held->result;
    e->version = c->held->version;
    e->body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    e->result = r;
    if (h->record) { /* beside the batch, which the coordinator never sends: first */
        r->record = h->record;
        h->record = NULL;
    } else {
        r->record = h->records[c->held_next];
        h->records[c->held_next++] = NULL;
    }
    if (c->held_next == h->n_records)
        s_held_drop(c);
    *out = e;
    return 0;
}

/* The one constructor: cv NULL = plaintext. */
static cr_client_t *s_new(const char *endpoint, size_t max_msg, const cr_curve_t *cv)
{
    cr_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (cv)
        c->curve = *cv;
    c->max_msg = max_msg ? max_msg : CR_WIRE_MAX_MSG;
    c->endpoint = strdup(endpoint);
    c->ctx = zmq_ctx_new();
    if (!c->ctx || !c->endpoint)
        goto fail;
    c->sock = zmq_socket(c->ctx, ZMQ_DEALER);
    if (!c->sock)
        goto fail;
    /* A routing id of 16 random bytes, new for every connection: libzmq's
     * own are a counter, and a client that guessed another's could ask for
     * its route. The first byte is never 0, the prefix of libzmq's. */
    unsigned char rid[16];
    cr_hash_global_init();
    cr_random_bytes(rid, sizeof rid);
    rid[0] |= 0x80;
    if (zmq_setsockopt(c->sock, ZMQ_ROUTING_ID, rid, sizeof rid) != 0 ||
        cr_wire_socket_caps(c->sock, c->max_msg) != 0 || cr_curve_apply(c->sock, &c->curve) != 0 ||
        zmq_connect(c->sock, endpoint) != 0) {
        cr_error("cannot connect to %s: %s", endpoint, zmq_strerror(zmq_errno()));
        goto fail;
    }
    return c;
fail:
    cr_client_destroy(&c);
    return NULL;
}

cr_client_t *cr_client_new(const char *endpoint, size_t max_msg)
{
    return s_new(endpoint, max_msg, NULL);
}

cr_client_t *cr_client_new_cfg(const cr_config_t *cfg)
{
    const char *ep = cfg->clients_endpoint;
    cr_curve_t cv;
    char err[512];
    if (cr_curve_setup(cfg, 0, &ep, 1, &cv, err, sizeof err) != 0) {
        cr_error("%s", err);
        return NULL;
    }
    cr_client_t *c = s_new(ep, (size_t)cfg->max_msg, &cv);
    explicit_bzero(&cv, sizeof cv);
    return c;
}

void cr_client_destroy(cr_client_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_client_t *c = *self_p;
    if (c->sock)
        zmq_close(c->sock);
    if (c->ctx)
        zmq_ctx_term(c->ctx);
    s_held_drop(c);
    free(c->endpoint);
    explicit_bzero(&c->curve, sizeof c->curve);
    free(c);
    *self_p = NULL;
}

int cr_client_reconnect(cr_client_t *c)
{
    /* A whole new client, swapped in: the socket is made exactly as
     * cr_client_new makes it (options, security), and the old one, with
     * whatever it still queued for a dead peer, is dropped (linger 0). */
    cr_client_t *fresh = s_new(c->endpoint, c->max_msg, &c->curve);
    if (!fresh)
        return CR_E_ZMQ;
    cr_client_t old = *c;
    *c = *fresh;
    *fresh = old;
    /* records already received are the caller's still: they stay */
    c->held = fresh->held;
    c->held_next = fresh->held_next;
    fresh->held = NULL;
    cr_client_destroy(&fresh);
    return 0;
}

void *cr_client_socket(cr_client_t *c)
{
    return c->sock;
}

void cr_client_job_options(const cr_config_t *cfg, Crucible__JobOptions *o)
{
    crucible__job_options__init(o);
    o->time_budget_s = cfg->time_budget_s;
    o->rse_target = cfg->rse_target;
    o->compile_timeout_s = cfg->compile_timeout_s;
    o->run_timeout_s = cfg->run_timeout_s;
    o->queue_timeout_s = cfg->queue_timeout_s;
    o->reward = (char *)cfg->reward;
    o->ref_policy = strcmp(cfg->ref_policy, "cached") == 0 ? CRUCIBLE__REF_POLICY__REF_CACHED
                                                           : CRUCIBLE__REF_POLICY__REF_INTERLEAVED;
    o->clock_policy = (char *)cfg->clock_policy;
    o->max_attempts = (uint32_t)cfg->max_attempts;
}

/* Packs env and checks it against the client's cap before sending. */
static int s_send(cr_client_t *c, Crucible__Envelope *env)
{
    if (crucible__envelope__get_packed_size(env) > c->max_msg)
        return CR_E_TOO_BIG;
    return cr_wire_send(c->sock, NULL, env);
}

int cr_client_submit(cr_client_t *c, const char *batch_id, Crucible__TaskBundle **tasks,
                     size_t ntasks, Crucible__JobSpec **jobs, size_t njobs,
                     const Crucible__JobOptions *options, int subscribe)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Submit s = CRUCIBLE__SUBMIT__INIT;
    s.batch_id = (char *)batch_id;
    s.tasks = tasks;
    s.n_tasks = ntasks;
    s.jobs = jobs;
    s.n_jobs = njobs;
    s.options = (Crucible__JobOptions *)options;
    s.subscribe = subscribe != 0;
    s.record_batches = c->max_msg >= 2 * CR_WIRE_BATCH_BYTES; /* cr_client_recv splits them */
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
    env.submit = &s;
    return s_send(c, &env);
}

int cr_client_subscribe(cr_client_t *c, const char *batch_id, uint64_t after_seq, int follow)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Subscribe s = CRUCIBLE__SUBSCRIBE__INIT;
    s.batch_id = (char *)batch_id;
    s.after_seq = after_seq;
    s.follow = follow != 0;
    s.record_batches = c->max_msg >= 2 * CR_WIRE_BATCH_BYTES; /* cr_client_recv splits them */
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBSCRIBE;
    env.subscribe = &s;
    return s_send(c, &env);
}

int cr_client_status(cr_client_t *c, const char *batch_id)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__StatusRequest s = CRUCIBLE__STATUS_REQUEST__INIT;
    s.batch_id = (char *)(batch_id ? batch_id : "");
    env.body_case = CRUCIBLE__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &s;
    return s_send(c, &env);
}

int cr_client_cancel(cr_client_t *c, const char *batch_id, const char *job_id)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Cancel s = CRUCIBLE__CANCEL__INIT;
    s.batch_id = (char *)batch_id;
    s.job_id = (char *)(job_id ? job_id : "");
    env.body_case = CRUCIBLE__ENVELOPE__BODY_CANCEL;
    env.cancel = &s;
    return s_send(c, &env);
}

int cr_client_recv(cr_client_t *c, int timeout_ms, Crucible__Envelope **out)
{
    *out = NULL;
    if (c->held)
        return s_next_held(c, out);
    zmq_pollitem_t it = {.socket = c->sock, .events = ZMQ_POLLIN};
    int n = zmq_poll(&it, 1, timeout_ms);
    if (n < 0)
        return zmq_errno() == EINTR ? -EINTR : CR_E_ZMQ;
    if (n == 0)
        return -EAGAIN;
    int rc = cr_wire_recv(c->sock, NULL, out);
    if (rc != 0 && rc != -EAGAIN)
        cr_warn("bad message from the coordinator: %s", cr_strerror(rc));
    Crucible__Envelope *e = *out;
    if (rc == 0 && e->body_case == CRUCIBLE__ENVELOPE__BODY_RESULT && e->result &&
        e->result->n_records) {
        /* several records: handed out one a call, each as if it came alone
         * (a `record` beside them, which the coordinator never sends, first) */
        c->held = e;
        c->held_next = 0;
        *out = NULL;
        return s_next_held(c, out);
    }
    return rc;
}

int cr_client_pending(const cr_client_t *c)
{
    return c->held != NULL;
}

/* ------------------------------------------------------------ task bundles */

/* Reads path, which must lie inside folder root once every symlink is
 * resolved (a task folder, or a folder of candidates, may not reach outside
 * itself: a link to ~/.ssh/id_rsa would be uploaded), and must be UTF-8
 * text without NUL bytes (what a proto3 string holds; a NUL would cut it).
 * max bytes at most. Returns 0 and *out (caller frees), or a negative code
 * with err naming the file. */
static int s_read_inside(const char *root, const char *path, size_t max, char **out, char *err,
                         size_t errlen)
{
    *out = NULL;
    char *rr = realpath(root, NULL), *rp = realpath(path, NULL);
    int rc = 0;
    if (!rr || !rp) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", rr ? path : root, strerror(errno));
        goto out;
    }
    size_t n = strlen(rr);
    if (strncmp(rp, rr, n) != 0 || (rp[n] != '/' && !(n == 1 && rr[0] == '/'))) {
        snprintf(err, errlen, "%s: refused: it resolves to %s, outside %s (a symlink out of the "
                 "folder)", path, rp, root);
        rc = CR_E_USAGE;
        goto out;
    }
    size_t len = 0;
    rc = cr_file_read(rp, max, out, &len);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, cr_strerror(rc));
        goto out;
    }
    if (!cr_wire_utf8_ok(*out, len)) {
        snprintf(err, errlen, "%s: refused: not UTF-8 text (a NUL byte or an invalid sequence)",
                 path);
        free(*out);
        *out = NULL;
        rc = CR_E_USAGE;
    }
out:
    free(rr);
    free(rp);
    return rc;
}

/* Reads dir/name into *out (NULL name: *out = ""). */
static int s_read_in(const char *dir, const char *name, char **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!name) {
        *out = strdup("");
        return *out ? 0 : -ENOMEM;
    }
    if (strchr(name, '/') || strcmp(name, "..") == 0) {
        snprintf(err, errlen, "%s/task.json: '%s': a file name inside the task folder is expected",
                 dir, name);
        return CR_E_TASK;
    }
    char *path = cr_file_join(dir, name);
    if (!path)
        return -ENOMEM;
    /* 1 MiB: the task loader's CR_TASK_MAX_FILE */
    int rc = s_read_inside(dir, path, 1u << 20, out, err, errlen);
    free(path);
    return rc;
}

void cr_client_bundle_hash(Crucible__TaskBundle *b)
{
    cr_hash_global_init();
    cr_hash_t h;
    cr_hash_init(&h);
    cr_hash_update_str(&h, b->task_json);
    cr_hash_update_str(&h, b->reference_source);
    cr_hash_update_str(&h, b->baseline_source);
    cr_hash_final_hex(&h, b->hash);
}

/* A torch problem's source as its key sees it (docs/torch.md): line ends
 * LF, no trailing spaces or tabs, no blank lines at the end, one final
 * newline; so the same problem saved by another editor is the same task.
 * In place (it only shrinks). */
static void s_normalise_source(char *src)
{
    char *w = src;
    for (const char *r = src; *r;) {
        size_t n = strcspn(r, "\r\n");
        size_t k = n;
        while (k > 0 && (r[k - 1] == ' ' || r[k - 1] == '\t'))
            k--;
        memmove(w, r, k);
        w += k;
        r += n;
        if (*r == '\r')
            r++;
        if (*r == '\n')
            r++;
        *w++ = '\n';
    }
    while (w > src && w[-1] == '\n')
        w--;
    if (w > src)
        *w++ = '\n';
    *w = '\0';
}

/* 1 when path names a regular file ending in .py: a KernelBench-format
 * problem given as a task by itself. */
static int s_is_problem_file(const char *path)
{
    struct stat st;
    size_t n = strlen(path);
    return n > 3 && strcmp(path + n - 3, ".py") == 0 && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

/* The bundle of a problem file (s_is_problem_file): task.json made from its
 * name and, when its folder has one, the options in torch.json there
 * (precision, tolerance, trials, device); the source normalised. */
static int s_problem_bundle(const char *file, Crucible__TaskBundle **out, char *err,
                            size_t errlen)
{
    const char *slash = strrchr(file, '/');
    const char *base = slash ? slash + 1 : file;
    char stem[129], dir[PATH_MAX];
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(base) - 3 > 128 ? 128 : strlen(base) - 3),
             base);
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - file) : 1, slash ? file : ".");
    for (char *c = stem; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *c))
            *c = '_';
    json_t *tj = NULL;
    char *opt = cr_file_join(dir, "torch.json");
    if (opt && cr_file_exists(opt)) {
        json_error_t je;
        if (!(tj = json_load_file(opt, 0, &je)) || !json_is_object(tj)) {
            snprintf(err, errlen, "%s: line %d: %s", opt, je.line,
                     tj ? "an object of options is expected" : je.text);
            json_decref(tj);
            free(opt);
            return CR_E_TASK;
        }
    }
    free(opt);
    if (!tj)
        tj = json_object();
    json_object_set_new(tj, "name", json_string(stem));
    json_object_set_new(tj, "language", json_string("torch"));
    json_object_set_new(tj, "reference", json_string(base));
    char *text = json_dumps(tj, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(tj);
    Crucible__TaskBundle *b = malloc(sizeof *b);
    int rc = text && b ? 0 : -ENOMEM;
    if (b)
        crucible__task_bundle__init(b);
    if (rc == 0) {
        b->task_json = text;
        text = NULL;
        b->name = strdup(stem);
        b->hash = malloc(CR_HASH_HEX_LEN + 1);
        b->baseline_source = strdup("");
        rc = b->name && b->hash && b->baseline_source ? 0 : -ENOMEM;
    }
    if (rc == 0 && (rc = cr_file_read(file, 1u << 20, &b->reference_source, NULL)) != 0)
        snprintf(err, errlen, "%s: %s", file, cr_strerror(rc));
    if (rc == 0) {
        s_normalise_source(b->reference_source);
        cr_client_bundle_hash(b);
        *out = b;
        b = NULL;
    } else if (rc == -ENOMEM) {
        snprintf(err, errlen, "%s: out of memory", file);
    }
    if (b)
        crucible__task_bundle__free_unpacked(b, NULL);
    free(text);
    return rc;
}

int cr_client_task_bundle(const char *dir, Crucible__TaskBundle **out, char *err, size_t errlen)
{
    *out = NULL;
    if (s_is_problem_file(dir))
        return s_problem_bundle(dir, out, err, errlen);
    char *path = cr_file_join(dir, "task.json"), *text = NULL;
    if (!path)
        return -ENOMEM;
    int rc = s_read_inside(dir, path, 1u << 20, &text, err, errlen);
    if (rc != 0) {
        free(path);
        return rc;
    }
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    const char *name = j ? json_string_value(json_object_get(j, "name")) : NULL;
    const char *ref = j ? json_string_value(json_object_get(j, "reference")) : NULL;
    json_t *base = j ? json_object_get(j, "baseline") : NULL;
    if (!j)
        snprintf(err, errlen, "%s: line %d: %s", path, je.line, je.text);
    else if (!name || !*name)
        snprintf(err, errlen, "%s: name: a non-empty string is required", path);
    else if (!ref)
        snprintf(err, errlen, "%s: reference: a file name is required", path);
    else if (base && !json_is_null(base) && !json_is_string(base))
        snprintf(err, errlen, "%s: baseline: a file name is expected", path);
    if (!j || !name || !*name || !ref || (base && !json_is_null(base) && !json_is_string(base))) {
        json_decref(j);
        free(text);
        free(path);
        return !j ? CR_E_JSON : CR_E_TASK;
    }
    Crucible__TaskBundle *b = malloc(sizeof *b);
    if (!b) {
        rc = -ENOMEM;
        goto done;
    }
    crucible__task_bundle__init(b);
    b->task_json = text;
    text = NULL;
    b->name = strdup(name);
    b->hash = malloc(CR_HASH_HEX_LEN + 1);
    if (!b->name || !b->hash) {
        rc = -ENOMEM;
        goto done;
    }
    rc = s_read_in(dir, ref, &b->reference_source, err, errlen);
    if (rc == 0)
        rc = s_read_in(dir, json_string_value(base), &b->baseline_source, err, errlen);
    if (rc != 0)
        goto done;
    const char *lang = json_string_value(json_object_get(j, "language"));
    if (lang && !strcmp(lang, "torch"))
        s_normalise_source(b->reference_source); /* the problem's key (docs/torch.md) */
    cr_client_bundle_hash(b);
    *out = b;
    b = NULL;
done:
    if (b)
        crucible__task_bundle__free_unpacked(b, NULL); /* NULL strings are skipped */
    if (rc == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", dir);
    json_decref(j);
    free(text);
    free(path);
    return rc;
}

/* ---------------------------------------------------------------- job sets */

static int s_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int s_is_candidate(const char *name)
{
    static const char *const ext[] = {".c", ".cu", ".cc", ".cpp", ".cxx", ".py"};
    const char *dot = strrchr(name, '.');
    if (name[0] == '.' || !dot)
        return 0;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (strcmp(dot, ext[i]) == 0)
            return 1;
    return 0;
}

/* Sorted names in dir (alphabetical, so job order is the same on every run). */
static int s_list(const char *dir, struct dirent ***names, char *err, size_t errlen)
{
    int n = scandir(dir, names, NULL, alphasort);
    if (n < 0)
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
    return n < 0 ? -errno : n;
}

static void s_list_free(struct dirent **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static char *s_dup(const char *s)
{
    return strdup(s ? s : "");
}

int cr_jobset_add(cr_jobset_t *js, const char *job_id, const char *task, const char *source,
                  const char *group_id, uint32_t sample_index, uint32_t turn)
{
    if (js->njobs == js->cap_jobs) {
        size_t cap = js->cap_jobs ? js->cap_jobs * 2 : 64;
        Crucible__JobSpec **nj = realloc(js->jobs, cap * sizeof *nj);
        if (!nj)
            return -ENOMEM;
        js->jobs = nj;
        js->cap_jobs = cap;
    }
    Crucible__JobSpec *j = malloc(sizeof *j);
    if (!j)
        return -ENOMEM;
    crucible__job_spec__init(j);
    j->job_id = s_dup(job_id);
    j->task = s_dup(task);
    j->source = s_dup(source);
    j->group_id = s_dup(group_id);
    j->sample_index = sample_index;
    j->turn = turn;
    if (!j->job_id || !j->task || !j->source || !j->group_id) {
        crucible__job_spec__free_unpacked(j, NULL);
        return -ENOMEM;
    }
    js->jobs[js->njobs++] = j;
    return 0;
}

Crucible__TaskBundle *cr_jobset_task(const cr_jobset_t *js, const char *name)
{
    for (size_t i = 0; i < js->ntasks; i++)
        if (strcmp(js->tasks[i]->name, name) == 0)
            return js->tasks[i];
    return NULL;
}

/* Index of the task whose name, or folder base name, is name; -1 if none. */
static int s_task_for(const cr_jobset_t *js, const char *name)
{
    for (size_t i = 0; i < js->ntasks; i++) {
        const char *dir = js->task_dirs[i], *slash = strrchr(dir, '/');
        if (strcmp(js->tasks[i]->name, name) == 0 || strcmp(slash ? slash + 1 : dir, name) == 0)
            return (int)i;
    }
    return -1;
}

static int s_add_task(cr_jobset_t *js, const char *dir, char *err, size_t errlen)
{
    Crucible__TaskBundle *b = NULL;
    int rc = cr_client_task_bundle(dir, &b, err, errlen);
    if (rc != 0)
        return rc;
    if (cr_jobset_task(js, b->name)) {
        snprintf(err, errlen, "%s/task.json: name: '%s' is already the name of another task", dir,
                 b->name);
        crucible__task_bundle__free_unpacked(b, NULL);
        return CR_E_DUPLICATE;
    }
    Crucible__TaskBundle **nt = realloc(js->tasks, (js->ntasks + 1) * sizeof *nt);
    if (nt)
        js->tasks = nt;
    char **nd = nt ? realloc(js->task_dirs, (js->ntasks + 1) * sizeof *nd) : NULL;
    if (nd)
        js->task_dirs = nd;
    char *d = nd ? strdup(dir) : NULL;
    if (!d) {
        crucible__task_bundle__free_unpacked(b, NULL);
        return -ENOMEM;
    }
    /* strip trailing slashes so the folder's base name can be matched */
    for (size_t n = strlen(d); n > 1 && d[n - 1] == '/'; n--)
        d[n - 1] = '\0';
    js->tasks[js->ntasks] = b;
    js->task_dirs[js->ntasks++] = d;
    return 0;
}

/* Adds every candidate file in dir as a job of task. */
static int s_add_dir(cr_jobset_t *js, const char *task, const char *dir, char *err, size_t errlen)
{
    struct dirent **names = NULL;
    int n = s_list(dir, &names, err, errlen), rc = 0;
    if (n < 0)
        return n;
    for (int i = 0; i < n && rc == 0; i++) {
        if (!s_is_candidate(names[i]->d_name))
            continue;
        char *path = cr_file_join(dir, names[i]->d_name), *src = NULL;
        if (!path) {
            rc = -ENOMEM;
            break;
        }
        if (s_is_dir(path)) {
            free(path);
            continue;
        }
        rc = s_read_inside(dir, path, 1u << 20, &src, err, errlen);
        if (rc == 0) {
            char id[1024];
            snprintf(id, sizeof id, "%s/%s", task, names[i]->d_name);
            rc = cr_jobset_add(js, id, task, src, NULL, 0, 0);
        }
        free(src);
        free(path);
    }
    s_list_free(names, n);
    return rc;
}

/* One manifest line: {"task", "file" | "source", "job_id"?, "group_id"?, ...}. */
static int s_add_line(cr_jobset_t *js, const char *manifest, int lineno, const char *line,
                      char *err, size_t errlen)
{
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    int rc = 0;
    char *src = NULL, *path = NULL;
    const char *task = o ? json_string_value(json_object_get(o, "task")) : NULL;
    const char *file = o ? json_string_value(json_object_get(o, "file")) : NULL;
    const char *source = o ? json_string_value(json_object_get(o, "source")) : NULL;
    json_t *jid = o ? json_object_get(o, "job_id") : NULL, *jgroup = NULL;
    json_t *jsi = o ? json_object_get(o, "sample_index") : NULL;
    json_t *jturn = o ? json_object_get(o, "turn") : NULL;
    if (o)
        jgroup = json_object_get(o, "group_id");
#define S_BAD(...)                                                                          \
    do {                                                                                    \
        int k_ = snprintf(err, errlen, "%s:%d: ", manifest, lineno);                        \
        if (k_ >= 0 && (size_t)k_ < errlen)                                                 \
            snprintf(err + k_, errlen - (size_t)k_, __VA_ARGS__);                           \
        rc = CR_E_USAGE;                                                                    \
        goto done;                                                                          \
    } while (0)
    if (!o)
        S_BAD("%s", je.text);
    if (!json_is_object(o))
        S_BAD("an object is expected");
    if (!task)
        S_BAD("task: a task name is required");
    int ti = s_task_for(js, task);
    if (ti < 0)
        S_BAD("task: no task named '%s'", task);
    task = js->tasks[ti]->name;
    if (!!file == !!source)
        S_BAD("exactly one of \"file\" and \"source\" is required");
    if (jid && !json_is_string(jid))
        S_BAD("job_id: a string is expected");
    if (jgroup && !json_is_string(jgroup))
        S_BAD("group_id: a string is expected");
    if ((jsi && (!json_is_integer(jsi) || json_integer_value(jsi) < 0 ||
                 json_integer_value(jsi) > UINT32_MAX)) ||
        (jturn && (!json_is_integer(jturn) || json_integer_value(jturn) < 0 ||
                   json_integer_value(jturn) > UINT32_MAX)))
        S_BAD("sample_index and turn must be non-negative integers");
    if (file) {
        /* relative to the working directory, else to the manifest's folder */
        if (file[0] != '/' && !cr_file_exists(file)) {
            char *mdir = strdup(manifest), *slash = mdir ? strrchr(mdir, '/') : NULL;
            if (slash) {
                *slash = '\0';
                path = cr_file_join(mdir, file);
            }
            free(mdir);
        }
        rc = cr_file_read(path ? path : file, 1u << 20, &src, NULL);
        if (rc != 0)
            S_BAD("%s: %s", path ? path : file, cr_strerror(rc));
    }
    char id[1024];
    if (jid)
        snprintf(id, sizeof id, "%s", json_string_value(jid));
    else if (file)
        snprintf(id, sizeof id, "%s/%s", task, strrchr(file, '/') ? strrchr(file, '/') + 1 : file);
    else
        snprintf(id, sizeof id, "%s/line%d", task, lineno);
    rc = cr_jobset_add(js, id, task, file ? src : source, json_string_value(jgroup),
                       jsi ? (uint32_t)json_integer_value(jsi) : 0,
                       jturn ? (uint32_t)json_integer_value(jturn) : 0);
#undef S_BAD
done:
    free(src);
    free(path);
    json_decref(o);
    return rc;
}

static int s_add_manifest(cr_jobset_t *js, const char *manifest, char *err, size_t errlen)
{
    FILE *f = fopen(manifest, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", manifest, strerror(errno));
        return -errno;
    }
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        lineno++;
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue; /* blank lines are allowed */
        rc = s_add_line(js, manifest, lineno, line, err, errlen);
    }
    free(line);
    fclose(f);
    return rc;
}

/* Order of job ids, for the duplicate check. */
static int s_cmp_id(const void *a, const void *b)
{
    return strcmp((*(Crucible__JobSpec *const *)a)->job_id, (*(Crucible__JobSpec *const *)b)->job_id);
}

int cr_jobset_check(const cr_jobset_t *js, char *err, size_t errlen)
{
    for (size_t i = 0; i < js->njobs; i++) {
        if (!cr_jobset_task(js, js->jobs[i]->task)) {
            snprintf(err, errlen, "job %s: no task named '%s'", js->jobs[i]->job_id,
                     js->jobs[i]->task);
            return CR_E_NOT_FOUND;
        }
    }
    if (js->njobs < 2)
        return 0;
    Crucible__JobSpec **s = malloc(js->njobs * sizeof *s);
    if (!s)
        return -ENOMEM;
    memcpy(s, js->jobs, js->njobs * sizeof *s);
    qsort(s, js->njobs, sizeof *s, s_cmp_id);
    int rc = 0;
    for (size_t i = 1; i < js->njobs && rc == 0; i++) {
        if (strcmp(s[i - 1]->job_id, s[i]->job_id) == 0) {
            snprintf(err, errlen, "job id '%s' is used twice", s[i]->job_id);
            rc = CR_E_DUPLICATE;
        }
    }
    free(s);
    return rc;
}

/* 1 when dir is a task folder (holds task.json) or holds candidate files
 * directly rather than per-task subfolders. */
static int s_single_task_dir(const char *dir)
{
    char *tj = cr_file_join(dir, "task.json");
    int yes = tj && cr_file_exists(tj);
    free(tj);
    if (yes)
        return 1;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    for (struct dirent *e; !yes && (e = readdir(d));) {
        if (!s_is_candidate(e->d_name))
            continue;
        char *p = cr_file_join(dir, e->d_name);
        yes = p && !s_is_dir(p);
        free(p);
    }
    closedir(d);
    return yes;
}

int cr_jobset_load(cr_jobset_t *js, const char *tasks, const char *cands, char *err,
                   size_t errlen)
{
    int rc = 0;
    char *tj = cr_file_join(tasks, "task.json");
    if (!tj)
        return -ENOMEM;
    if (cr_file_exists(tj) || s_is_problem_file(tasks)) {
        rc = s_add_task(js, tasks, err, errlen);
    } else {
        struct dirent **names = NULL;
        int n = s_list(tasks, &names, err, errlen);
        if (n < 0) {
            free(tj);
            return n;
        }
        for (int i = 0; i < n && rc == 0; i++) {
            char *d = names[i]->d_name[0] == '.' ? NULL : cr_file_join(tasks, names[i]->d_name);
            char *t = d ? cr_file_join(d, "task.json") : NULL;
            if ((t && cr_file_exists(t)) || (d && s_is_problem_file(d)))
                rc = s_add_task(js, d, err, errlen); /* a task folder, or a problem file */
            free(t);
            free(d);
        }
        s_list_free(names, n);
    }
    free(tj);
    if (rc == 0 && js->ntasks == 0) {
        snprintf(err, errlen, "%s: no task folders (folders holding task.json) and no "
                 "problem files (.py)", tasks);
        rc = CR_E_NOT_FOUND;
    }
    if (rc != 0)
        return rc;

    if (!cands) {
        for (size_t i = 0; i < js->ntasks && rc == 0; i++) {
            char *cd = cr_file_join(js->task_dirs[i], "candidates");
            if (cd && s_is_dir(cd))
                rc = s_add_dir(js, js->tasks[i]->name, cd, err, errlen);
            free(cd);
        }
    } else if (js->ntasks == 1 && s_is_dir(cands) && s_single_task_dir(cands)) {
        /* one task and a folder of its candidates: the task folder itself
         * (its candidates/), or a plain folder of source files */
        char *sub = cr_file_join(cands, "candidates");
        rc = s_add_dir(js, js->tasks[0]->name, sub && s_is_dir(sub) ? sub : cands, err, errlen);
        free(sub);
    } else if (s_is_dir(cands)) {
        struct dirent **names = NULL;
        int n = s_list(cands, &names, err, errlen);
        if (n < 0)
            return n;
        for (int i = 0; i < n && rc == 0; i++) {
            char *d = names[i]->d_name[0] == '.' ? NULL : cr_file_join(cands, names[i]->d_name);
            if (!d || !s_is_dir(d)) {
                free(d);
                continue;
            }
            int ti = s_task_for(js, names[i]->d_name);
            if (ti < 0) {
                snprintf(err, errlen, "%s: no task named '%s' in %s", d, names[i]->d_name, tasks);
                rc = CR_E_NOT_FOUND;
            } else {
                char *sub = cr_file_join(d, "candidates");
                rc = s_add_dir(js, js->tasks[ti]->name, sub && s_is_dir(sub) ? sub : d, err,
                               errlen);
                free(sub);
            }
            free(d);
        }
        s_list_free(names, n);
    } else {
        rc = s_add_manifest(js, cands, err, errlen);
    }
    return rc != 0 ? rc : cr_jobset_check(js, err, errlen);
}

/* 1 when word is an item of the comma list list. */
static int s_in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && strncmp(p, word, n) == 0)
            return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

/* Keeps the tasks keep() says yes to (a task.json that does not parse is
 * kept, for the coordinator to refuse) and their jobs; adds the label keep()
 * writes for each one dropped to skipped, once. Returns the jobs dropped. */
static size_t s_jobset_keep(cr_jobset_t *js, int (*keep)(json_t *task, const void *arg,
                                                          char *label, size_t len),
                            const void *arg, char *skipped, size_t len)
{
    if (skipped && len)
        skipped[0] = '\0';
    size_t kt = 0, kj = 0, dropped = 0;
    for (size_t i = 0; i < js->ntasks; i++) {
        json_t *j = json_loads(js->tasks[i]->task_json, 0, NULL);
        char label[64] = "";
        if (!j || keep(j, arg, label, sizeof label)) {
            js->tasks[kt] = js->tasks[i];
            js->task_dirs[kt++] = js->task_dirs[i];
        } else {
            if (skipped && !s_in_list(skipped, label)) {
                size_t n = strlen(skipped);
                snprintf(skipped + n, len - n, "%s%s", n ? "," : "", label);
            }
            /* its jobs go below, once the task is no longer in the set */
            for (size_t k = 0; k < js->njobs; k++)
                if (js->jobs[k] && strcmp(js->jobs[k]->task, js->tasks[i]->name) == 0) {
                    crucible__job_spec__free_unpacked(js->jobs[k], NULL);
                    js->jobs[k] = NULL;
                    dropped++;
                }
            crucible__task_bundle__free_unpacked(js->tasks[i], NULL);
            free(js->task_dirs[i]);
        }
        json_decref(j);
    }
    js->ntasks = kt;
    for (size_t k = 0; k < js->njobs; k++)
        if (js->jobs[k])
            js->jobs[kj++] = js->jobs[k];
    js->njobs = kj;
    return dropped;
}

static int s_keep_backend(json_t *task, const void *arg, char *label, size_t len)
{
    const char *lang = json_string_value(json_object_get(task, "language"));
    if (!lang || s_in_list((const char *)arg, lang))
        return 1;
    snprintf(label, len, "%s", lang);
    return 0;
}

size_t cr_jobset_keep_backends(cr_jobset_t *js, const char *backends, char *skipped, size_t len)
{
    return s_jobset_keep(js, s_keep_backend, backends, skipped, len);
}

static int s_keep_gpus(json_t *task, const void *arg, char *label, size_t len)
{
    json_t *g = json_object_get(task, "gpus");
    int have = *(const int *)arg;
    if (!json_is_integer(g) || json_integer_value(g) <= have)
        return 1;
    snprintf(label, len, "%lld-GPU", (long long)json_integer_value(g));
    return 0;
}

size_t cr_jobset_keep_gpus(cr_jobset_t *js, int gpus, char *skipped, size_t len)
{
    return s_jobset_keep(js, s_keep_gpus, &gpus, skipped, len);
}

void cr_jobset_close(cr_jobset_t *js)
{
    for (size_t i = 0; i < js->ntasks; i++) {
        crucible__task_bundle__free_unpacked(js->tasks[i], NULL);
        free(js->task_dirs[i]);
    }
    for (size_t i = 0; i < js->njobs; i++)
        crucible__job_spec__free_unpacked(js->jobs[i], NULL);
    free(js->tasks);
    free(js->task_dirs);
    free(js->jobs);
    memset(js, 0, sizeof *js);
}
