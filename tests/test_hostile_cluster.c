/* test_hostile_cluster.c — issue 19: no client, worker or local user takes
 * what is not theirs (docs/security.md, "Coordinator boundaries").
 *
 * Each test sets up one attack against a real `crucible coordinator`
 * process (CURVE on 127.0.0.1, or plaintext ipc:// where the attack is a
 * local user's), with raw ZeroMQ peers written here on libzmq and the wire
 * module, real SQLite files and, for a local user, a forked child that
 * drops to uid 65534. Each asserts the refusal. */
#include "net_util.h"
#include "client.h"
#include "curve.h"
#include "error.h"
#include "file.h"
#include "hash.h"
#include "timeutil.h"
#include "wire.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#define CRUCIBLE CR_TEST_BIN_DIR "/crucible"
#define EXAMPLES CR_TEST_SOURCE_DIR "/tasks/examples"
#define S_QUIET_MS 1500 /* a refused peer hears nothing for this long */
#define S_NOBODY 65534  /* the local user of the attacks: Debian's nobody */

static char s_dir[128];     /* temp folder: keys, db, logs */
static char s_cep[64];      /* clients endpoint */
static char s_wep[64];      /* workers endpoint */
static pid_t s_coord = -1;  /* the coordinator process */
static void *s_ctx;         /* ZeroMQ context of the raw peers */

static void s_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", s_dir, name);
}

static void s_allow(const char *list, const char *name)
{
    char path[256], pub[256], key[CR_CURVE_Z85 + 1], err[256];
    s_path(path, sizeof path, list);
    snprintf(pub, sizeof pub, "%s/%s.pub", s_dir, name);
    cr_assert_eq(cr_curve_read_key(pub, key, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", key);
    fclose(f);
}

static void s_setup(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cr-hostile-XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
    static const char *const names[] = {"server", "alice", "bob", "w1", "w2"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char prefix[256], err[256];
        s_path(prefix, sizeof prefix, names[i]);
        cr_assert_eq(cr_curve_keygen(prefix, err, sizeof err), 0, "%s", err);
    }
    s_allow("clients.allow", "alice");
    s_allow("clients.allow", "bob");
    s_allow("workers.allow", "w1");
    s_allow("workers.allow", "w2");
    snprintf(s_cep, sizeof s_cep, "tcp://127.0.0.1:%d", cr_test_free_port());
    snprintf(s_wep, sizeof s_wep, "tcp://127.0.0.1:%d", cr_test_free_port());
    s_ctx = zmq_ctx_new();
    cr_hash_global_init();
}

static void s_stop_coord(void)
{
    if (s_coord > 0) {
        kill(s_coord, SIGTERM);
        waitpid(s_coord, NULL, 0);
        s_coord = -1;
    }
}

static void s_teardown(void)
{
    s_stop_coord();
    /* sockets of a failed test may still be open: the exit reclaims them */
    s_ctx = NULL;
    if (s_dir[0])
        cr_file_rmtree(s_dir);
}

TestSuite(hostile, .init = s_setup, .fini = s_teardown, .timeout = 60);

/* Starts `crucible coordinator ARGS...` (NULL-terminated extra arguments),
 * stderr to <dir>/coord.log, umask 022 as an operator's shell would have it.
 * Returns the pid. */
static pid_t s_spawn(char **argv)
{
    char log[256];
    s_path(log, sizeof log, "coord.log");
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(fd, 2);
        dup2(fd, 1);
        umask(022);
        execv(CRUCIBLE, argv);
        _exit(127);
    }
    return pid;
}

/* 1 when the coordinator's log holds text. */
static int s_log_has(const char *text)
{
    char log[256], *buf = NULL;
    s_path(log, sizeof log, "coord.log");
    if (cr_file_read(log, 1 << 24, &buf, NULL) != 0)
        return 0;
    int yes = strstr(buf, text) != NULL;
    free(buf);
    return yes;
}

/* Waits until the log holds text (or the process died); 1 when it does. */
static int s_await_log(pid_t pid, const char *text, int ms)
{
    for (int i = 0; i < ms / 50; i++) {
        if (s_log_has(text))
            return 1;
        if (pid > 0 && waitpid(pid, NULL, WNOHANG) == pid)
            return s_log_has(text);
        usleep(50 * 1000);
    }
    return 0;
}

/* The CURVE coordinator on s_cep / s_wep with extra arguments. */
static void s_start_coord(const char *const *extra)
{
    static char a[32][300];
    char *argv[40];
    int n = 0;
    const char *base[] = {"crucible", "coordinator", "--db", NULL, "--clients-endpoint", s_cep,
                          "--workers-endpoint", s_wep, "--key", NULL, "--allow-clients", NULL,
                          "--allow-workers", NULL, "--heartbeat-ms", "200", "--liveness", "10",
                          "--drain-after", "0"};
    char db[256], key[256], ac[256], aw[256];
    s_path(db, sizeof db, "coord.db");
    s_path(key, sizeof key, "server.key");
    s_path(ac, sizeof ac, "clients.allow");
    s_path(aw, sizeof aw, "workers.allow");
    base[3] = db;
    base[9] = key;
    base[11] = ac;
    base[13] = aw;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        snprintf(a[n++], sizeof a[0], "%s", base[i]);
    for (size_t i = 0; extra && extra[i]; i++)
        snprintf(a[n++], sizeof a[0], "%s", extra[i]);
    for (int i = 0; i < n; i++)
        argv[i] = a[i];
    argv[n] = NULL;
    s_coord = s_spawn(argv);
    cr_assert(s_await_log(s_coord, "coordinator up", 10000), "the coordinator did not start");
}

/* A raw DEALER to ep with key name's CURVE keys (NULL = plaintext) and
 * routing id rid (NULL = libzmq's or, in the fixed code's client, random). */
static void *s_dealer(const char *ep, const char *name, const char *rid)
{
    void *d = zmq_socket(s_ctx, ZMQ_DEALER);
    int zero = 0;
    cr_assert_not_null(d);
    zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof zero);
    if (rid)
        zmq_setsockopt(d, ZMQ_ROUTING_ID, rid, strlen(rid));
    if (name) {
        cr_curve_t cv;
        char path[256], err[256];
        memset(&cv, 0, sizeof cv);
        cv.on = 1;
        snprintf(path, sizeof path, "%s/%s.key", s_dir, name);
        cr_assert_eq(cr_curve_read_key(path, cv.secret, err, sizeof err), 0, "%s", err);
        cr_assert_eq(zmq_curve_public(cv.public_key, cv.secret), 0);
        snprintf(path, sizeof path, "%s/server.pub", s_dir);
        cr_assert_eq(cr_curve_read_key(path, cv.server_key, err, sizeof err), 0, "%s", err);
        cr_assert_eq(cr_curve_apply(d, &cv), 0);
    }
    cr_assert_eq(zmq_connect(d, ep), 0);
    return d;
}

static void s_send(void *d, Crucible__Envelope *env)
{
    cr_assert_eq(cr_wire_send(d, NULL, env), 0);
}

/* The next message of body case want (others skipped; an Error always
 * returned; want < 0: any message), or NULL after ms. */
static Crucible__Envelope *s_expect(void *d, int want, int ms)
{
    int64_t end = cr_time_mono_ms() + ms;
    for (;;) {
        int64_t left = end - cr_time_mono_ms();
        if (left <= 0)
            return NULL;
        zmq_pollitem_t it = {d, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, (long)left) <= 0)
            continue;
        Crucible__Envelope *env = NULL;
        if (cr_wire_recv(d, NULL, &env) != 0)
            continue;
        if (want < 0 || (int)env->body_case == want ||
            env->body_case == CRUCIBLE__ENVELOPE__BODY_ERROR)
            return env;
        cr_wire_free(&env);
    }
}

/* Any message at all within ms, or NULL. */
static Crucible__Envelope *s_any(void *d, int ms)
{
    return s_expect(d, -1, ms);
}

/* Packs Submit{batch, saxpy's bundle, jobs named ids, subscribe} into a heap
 * buffer, so a test can change bytes a C string cannot hold. */
static uint8_t *s_submit_bytes(const char *batch, const char *const *ids, size_t n, int subscribe,
                               size_t *len)
{
    cr_jobset_t js = {0};
    char err[512];
    cr_assert_eq(cr_jobset_load(&js, EXAMPLES "/saxpy", NULL, err, sizeof err), 0, "%s", err);
    Crucible__JobSpec specs[16], *sp[16];
    cr_assert_leq(n, 16);
    for (size_t i = 0; i < n; i++) {
        crucible__job_spec__init(&specs[i]);
        specs[i].job_id = (char *)ids[i];
        specs[i].task = js.tasks[0]->name;
        specs[i].source = js.jobs[0]->source;
        sp[i] = &specs[i];
    }
    Crucible__Submit s = CRUCIBLE__SUBMIT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    s.batch_id = (char *)batch;
    s.tasks = js.tasks;
    s.n_tasks = js.ntasks;
    s.jobs = sp;
    s.n_jobs = n;
    s.subscribe = subscribe;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
    env.submit = &s;
    uint8_t *buf = NULL;
    cr_assert_eq(cr_wire_pack(&env, &buf, len), 0);
    cr_jobset_close(&js);
    return buf;
}

static void s_submit(void *d, const char *batch, size_t n, int subscribe)
{
    const char *ids[16];
    char names[16][16];
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "j%zu", i);
        ids[i] = names[i];
    }
    size_t len;
    uint8_t *buf = s_submit_bytes(batch, ids, n, subscribe, &len);
    cr_assert_eq(zmq_send(d, buf, len, 0), (int)len);
    free(buf);
    Crucible__Envelope *env = s_expect(d, CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK, 10000);
    cr_assert_not_null(env, "no SubmitAck");
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK, "got %s: %s",
                 cr_wire_body_name(env), env->error ? env->error->message : "");
    cr_assert_eq(env->submit_ack->accepted, n);
    cr_wire_free(&env);
}

static void s_ready(void *w, const char *id, uint32_t credit)
{
    Crucible__Ready r = CRUCIBLE__READY__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    char *backends[] = {"c"};
    r.worker_id = (char *)id;
    r.host = "hostile";
    r.backends = backends;
    r.n_backends = 1;
    r.credit = credit;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_READY;
    env.ready = &r;
    s_send(w, &env);
}

static void s_heartbeat(void *w)
{
    Crucible__Heartbeat hb = CRUCIBLE__HEARTBEAT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    s_send(w, &env);
}

/* The forged verdict every rogue sends: OK, 1000x. */
static void s_result_of_try(void *w, const char *batch, const char *job, uint32_t attempt)
{
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    Crucible__ProfileResult p = CRUCIBLE__PROFILE_RESULT__INIT;
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    r.batch_id = (char *)batch;
    r.job_id = (char *)job;
    r.attempt = attempt;
    r.status = CRUCIBLE__STATUS__STATUS_OK;
    p.speedup_geomean = 1000.0;
    r.profile = &p;
    res.record = &r;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    s_send(w, &env);
}

static void s_forged_result(void *w, const char *batch, const char *job)
{
    s_result_of_try(w, batch, job, 1);
}

/* Records of batch the owner's client sees (batch_done of its Status). */
static uint32_t s_done(void *owner, const char *batch)
{
    Crucible__StatusRequest sr = CRUCIBLE__STATUS_REQUEST__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    sr.batch_id = (char *)batch;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    s_send(owner, &env);
    Crucible__Envelope *r = s_expect(owner, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, 5000);
    cr_assert_not_null(r, "no StatusReply");
    cr_assert_eq(r->body_case, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, "got %s",
                 cr_wire_body_name(r));
    uint32_t done = r->status_reply->batch_done;
    cr_wire_free(&r);
    return done;
}

/* Waits for an Assign on w; returns the first job's id in out. */
static void s_take_assign(void *w, char *out, size_t cap, uint32_t *attempt)
{
    Crucible__Envelope *env = s_expect(w, CRUCIBLE__ENVELOPE__BODY_ASSIGN, 5000);
    cr_assert_not_null(env, "no Assign");
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_ASSIGN, "got %s",
                 cr_wire_body_name(env));
    snprintf(out, cap, "%s", env->assign->jobs[0]->spec->job_id);
    if (attempt)
        *attempt = env->assign->jobs[0]->attempt;
    cr_wire_free(&env);
}

/* ---- finding: a client takes over another's result stream ---- */

Test(hostile, client_cannot_take_over_a_stream_by_reusing_its_routing_id)
{
    s_start_coord(NULL);
    /* alice's connection has a routing id (old clients' were a counter,
     * and the coordinator's log printed it); she follows her batch */
    void *alice = s_dealer(s_cep, "alice", "alice-conn-1");
    s_submit(alice, "alice-b", 1, 1);
    cr_assert_not_null(s_expect(alice, CRUCIBLE__ENVELOPE__BODY_HEARTBEAT, 3000),
                       "alice's subscription hears no beat");
    /* bob, another allowed key, connects with her routing id */
    void *bob = s_dealer(s_cep, "bob", "alice-conn-1");
    Crucible__Envelope *env = s_any(bob, S_QUIET_MS);
    cr_assert_null(env, "bob received alice's %s", env ? cr_wire_body_name(env) : "");
    cr_assert_not(s_log_has("alice-conn-1"), "the log prints a client's routing id");
    /* and alice still has her stream */
    cr_assert_not_null(s_expect(alice, CRUCIBLE__ENVELOPE__BODY_HEARTBEAT, 3000),
                       "alice lost her stream");
    zmq_close(alice);
    zmq_close(bob);
}

/* ---- finding: any registered worker records any job's result ---- */

/* Alice's batch of three jobs, one held by wA (ja), one by wB (jb), the
 * third by nobody (returned). */
static const char *s_two_holders(const char *batch, void **alice, void **wa, void **wb, char *ja,
                                 char *jb, size_t cap)
{
    s_start_coord(NULL);
    *alice = s_dealer(s_cep, "alice", NULL);
    s_submit(*alice, batch, 3, 0);
    *wa = s_dealer(s_wep, "w1", "wA");
    s_ready(*wa, "wA", 1);
    s_take_assign(*wa, ja, cap, NULL);
    *wb = s_dealer(s_wep, "w2", "wB");
    s_ready(*wb, "wB", 1);
    s_take_assign(*wb, jb, cap, NULL);
    return strcmp(ja, "j2") && strcmp(jb, "j2")   ? "j2"
           : strcmp(ja, "j1") && strcmp(jb, "j1") ? "j1"
                                                  : "j0";
}

Test(hostile, result_from_a_worker_not_holding_the_job_is_refused)
{
    void *alice, *wa, *wb;
    char ja[64], jb[64];
    /* wB forges wA's job and the third, which nobody holds */
    const char *third = s_two_holders("b-forge", &alice, &wa, &wb, ja, jb, sizeof ja);
    s_forged_result(wb, "b-forge", ja);
    s_forged_result(wb, "b-forge", third);
    usleep(800 * 1000);
    cr_assert_eq(s_done(alice, "b-forge"), 0, "a forged result was recorded");
    cr_assert(s_await_log(s_coord, "worker wB: OK for b-forge/", 3000),
              "the refusal is not logged with the worker id");
    cr_assert(s_log_has("refused, not recorded"));
    /* the holder's own result is recorded */
    s_forged_result(wa, "b-forge", ja);
    usleep(500 * 1000);
    cr_assert_eq(s_done(alice, "b-forge"), 1);
    zmq_close(wa);
    zmq_close(wb);
    zmq_close(alice);
}

/* Several records in one Result (Assign.result_batches) are judged one by
 * one: a worker that slips another's job, and one nobody holds, in with its
 * own gets its own recorded and the other two refused. */
Test(hostile, forged_records_inside_a_batched_result_are_refused)
{
    void *alice, *wa, *wb;
    char ja[64], jb[64];
    const char *third = s_two_holders("b-many", &alice, &wa, &wb, ja, jb, sizeof ja);
    const char *jobs[3] = {ja, third, jb}; /* its own last: each is judged, not the first only */
    Crucible__RewardRecord r[3], *rp[3];
    for (int i = 0; i < 3; i++) {
        crucible__reward_record__init(&r[i]);
        r[i].batch_id = "b-many";
        r[i].job_id = (char *)jobs[i];
        r[i].attempt = 1;
        r[i].status = CRUCIBLE__STATUS__STATUS_OK;
        rp[i] = &r[i];
    }
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    res.n_records = 3;
    res.records = rp;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    s_send(wb, &env);
    usleep(800 * 1000);
    cr_assert_eq(s_done(alice, "b-many"), 1, "not just wB's own record was kept");
    cr_assert(s_await_log(s_coord, "worker wB: OK for b-many/", 3000),
              "the refusal is not logged with the worker id");
    /* the holder's own result is still recorded */
    s_forged_result(wa, "b-many", ja);
    usleep(500 * 1000);
    cr_assert_eq(s_done(alice, "b-many"), 2);
    zmq_close(wa);
    zmq_close(wb);
    zmq_close(alice);
}

/* The worker holds its job's first try: a result it says is of another try
 * (a late one of an earlier try, or a lie) is not that try's verdict. */
Test(hostile, result_of_another_try_is_refused)
{
    s_start_coord(NULL);
    void *alice = s_dealer(s_cep, "alice", NULL);
    s_submit(alice, "b-try", 1, 0);
    void *wa = s_dealer(s_wep, "w1", "wA");
    s_ready(wa, "wA", 1);
    char ja[64];
    uint32_t attempt = 0;
    s_take_assign(wa, ja, sizeof ja, &attempt);
    cr_assert_eq(attempt, 1);
    s_result_of_try(wa, "b-try", ja, 2);
    usleep(800 * 1000);
    cr_assert_eq(s_done(alice, "b-try"), 0, "another try's result was recorded");
    cr_assert(s_await_log(s_coord, "attempt 2, which is assigned to worker", 3000),
              "the refusal is not logged");
    s_result_of_try(wa, "b-try", ja, 1);
    usleep(500 * 1000);
    cr_assert_eq(s_done(alice, "b-try"), 1, "its own try's result was not recorded");
    zmq_close(wa);
    zmq_close(alice);
}

/* ---- finding: worker ids are not bound to keys ---- */

Test(hostile, worker_id_stays_with_its_first_key_across_restarts)
{
    s_start_coord(NULL);
    void *alice = s_dealer(s_cep, "alice", NULL);
    s_submit(alice, "b-id", 1, 0);
    void *wa = s_dealer(s_wep, "w1", "wA");
    s_ready(wa, "wA", 1);
    char job[64];
    s_take_assign(wa, job, sizeof job, NULL);
    /* w2's key claims the id wA, on a connection of its own */
    void *rogue = s_dealer(s_wep, "w2", "rogue-conn");
    s_ready(rogue, "wA", 1);
    Crucible__Envelope *env = s_expect(rogue, CRUCIBLE__ENVELOPE__BODY_ASSIGN, S_QUIET_MS);
    cr_assert_not_null(env, "the rogue Ready was not answered");
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR,
                 "a Ready under another key's worker id got %s", cr_wire_body_name(env));
    cr_wire_free(&env);
    s_forged_result(rogue, "b-id", job);
    usleep(500 * 1000);
    cr_assert_eq(s_done(alice, "b-id"), 0, "the impostor's result was recorded");
    /* the binding is persisted: after a restart the impostor is still refused */
    zmq_close(wa);
    zmq_close(rogue);
    s_stop_coord();
    s_start_coord(NULL);
    rogue = s_dealer(s_wep, "w2", "rogue-conn-2");
    s_ready(rogue, "wA", 1);
    env = s_expect(rogue, CRUCIBLE__ENVELOPE__BODY_ASSIGN, 3000);
    cr_assert_not_null(env, "the rogue Ready was not answered after a restart");
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR,
                 "after a restart, the impostor got %s", cr_wire_body_name(env));
    cr_wire_free(&env);
    zmq_close(rogue);
    zmq_close(alice);
}

/* ---- finding: jobs held by a silent worker never time out ---- */

Test(hostile, silent_worker_loses_its_lease)
{
    const char *extra[] = {"--lease-s", "1", NULL};
    s_start_coord(extra);
    void *alice = s_dealer(s_cep, "alice", NULL);
    s_submit(alice, "b-lease", 1, 0);
    void *w = s_dealer(s_wep, "w1", "w-silent");
    s_ready(w, "w-silent", 1);
    char job[64];
    uint32_t attempt = 0;
    s_take_assign(w, job, sizeof job, &attempt);
    cr_assert_eq(attempt, 1);
    /* it beats, so it is never lost, but never answers */
    int cancelled = 0, again = 0;
    for (int i = 0; i < 40 && !again; i++) {
        s_heartbeat(w);
        Crucible__Envelope *env = s_any(w, 150);
        if (!env)
            continue;
        if (env->body_case == CRUCIBLE__ENVELOPE__BODY_CANCEL &&
            strcmp(env->cancel->job_id, job) == 0)
            cancelled = 1;
        if (env->body_case == CRUCIBLE__ENVELOPE__BODY_ASSIGN) {
            cr_assert_str_eq(env->assign->jobs[0]->spec->job_id, job);
            again = env->assign->jobs[0]->attempt;
        }
        cr_wire_free(&env);
    }
    cr_assert(cancelled, "the holder was not told to cancel the expired lease");
    cr_assert_eq(again, 2, "the job was not requeued with its try counted");
    cr_assert(s_log_has("lease of 1 s ran out on worker w-silent"));
    zmq_close(w);
    zmq_close(alice);
}

/* ---- finding: a worker's credit is what it claims ---- */

Test(hostile, credit_claims_are_clamped)
{
    const char *extra[] = {"--max-credit", "2", NULL};
    s_start_coord(extra);
    void *alice = s_dealer(s_cep, "alice", NULL);
    s_submit(alice, "b-credit", 6, 0);
    void *w = s_dealer(s_wep, "w1", "w-greedy");
    s_ready(w, "w-greedy", 1000000);
    size_t got = 0;
    for (int i = 0; i < 10; i++) {
        s_heartbeat(w);
        Crucible__Envelope *env = s_expect(w, CRUCIBLE__ENVELOPE__BODY_ASSIGN, 150);
        if (env && env->body_case == CRUCIBLE__ENVELOPE__BODY_ASSIGN)
            got += env->assign->n_jobs;
        cr_wire_free(&env);
    }
    cr_assert_eq(got, 2, "a worker claiming 1000000 credit holds %zu jobs", got);
    zmq_close(w);
    zmq_close(alice);
}

/* ---- finding: --key with --insecure silently drops encryption ---- */

/* Runs crucible with argv (NULL-terminated) for at most 5 s; returns its
 * exit status (-1: still running, killed) and its output in out. */
static int s_run(char **argv, char *out, size_t cap)
{
    char log[256];
    s_path(log, sizeof log, "run.log");
    unlink(log);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(CRUCIBLE, argv);
        _exit(127);
    }
    int st = 0, rc = -1;
    for (int i = 0; i < 100; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
            break;
        }
        usleep(50 * 1000);
    }
    if (rc == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    char *text = NULL;
    cr_file_read(log, 1 << 20, &text, NULL);
    snprintf(out, cap, "%s", text ? text : "");
    free(text);
    return rc;
}

Test(hostile, keys_with_insecure_are_an_error_not_a_downgrade)
{
    char key[256], pub[256], out[4096], db[256];
    s_path(key, sizeof key, "alice.key");
    s_path(pub, sizeof pub, "server.pub");
    char *client[] = {"crucible", "status", "--clients-endpoint", s_cep, "--key", key,
                      "--server-key", pub, "--insecure", "--wait-s", "2", NULL};
    int rc = s_run(client, out, sizeof out);
    cr_assert(rc > 0, "the client did not refuse (exit %d): %s", rc, out);
    cr_assert(strstr(out, "--key") && strstr(out, "--insecure") && strstr(out, "contradict"),
              "%s", out);
    s_path(key, sizeof key, "server.key");
    s_path(db, sizeof db, "other.db");
    char ac[256];
    s_path(ac, sizeof ac, "clients.allow");
    char *coord[] = {"crucible", "coordinator", "--db", db, "--clients-endpoint", s_cep,
                     "--workers-endpoint", s_wep, "--key", key, "--allow-clients", ac,
                     "--allow-workers", ac, "--insecure", NULL};
    rc = s_run(coord, out, sizeof out);
    cr_assert(rc > 0, "the coordinator started in plaintext with a key (exit %d): %s", rc, out);
    cr_assert(strstr(out, "contradict"), "%s", out);
}

/* ---- finding: abstract ipc://@name sockets are open to every local user ---- */

Test(hostile, abstract_ipc_endpoints_are_refused)
{
    char db[256], out[4096], ep[64], wep[64];
    s_path(db, sizeof db, "abstract.db");
    snprintf(ep, sizeof ep, "ipc://@cr-hostile-%d", (int)getpid());
    snprintf(wep, sizeof wep, "ipc://@cr-hostile-w-%d", (int)getpid());
    char *coord[] = {"crucible", "coordinator", "--db", db, "--clients-endpoint", ep,
                     "--workers-endpoint", wep, NULL};
    int rc = s_run(coord, out, sizeof out);
    if (rc == -1) {
        /* it served: show what that means, a nobody connects to it */
        cr_assert_fail("the coordinator bound an abstract socket every local user reaches");
    }
    cr_assert(rc > 0 && strstr(out, "abstract"), "exit %d: %s", rc, out);
}

/* ---- finding: the database and the sockets are world-readable ---- */

/* In a child that became uid 65534: 1 when it can open path for reading. */
static int s_nobody_reads(const char *path)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (setgid(S_NOBODY) != 0 || setuid(S_NOBODY) != 0)
            _exit(2);
        int fd = open(path, O_RDONLY);
        _exit(fd >= 0 ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) < 2, "the child could not become nobody");
    return WEXITSTATUS(st);
}

/* In a child that became uid 65534: 1 when a Status on ep is answered. */
static int s_nobody_talks(const char *ep)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (setgid(S_NOBODY) != 0 || setuid(S_NOBODY) != 0)
            _exit(2);
        void *ctx = zmq_ctx_new();
        void *d = zmq_socket(ctx, ZMQ_DEALER);
        int zero = 0;
        zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof zero);
        zmq_connect(d, ep);
        Crucible__StatusRequest sr = CRUCIBLE__STATUS_REQUEST__INIT;
        Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
        env.body_case = CRUCIBLE__ENVELOPE__BODY_STATUS_REQUEST;
        env.status_request = &sr;
        cr_wire_send(d, NULL, &env);
        zmq_pollitem_t it = {d, 0, ZMQ_POLLIN, 0};
        _exit(zmq_poll(&it, 1, S_QUIET_MS) == 1 ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) < 2, "the child could not become nobody");
    return WEXITSTATUS(st);
}

Test(hostile, database_and_sockets_are_the_coordinators_alone)
{
    /* a folder others may enter, as /var/lib/crucible would be */
    cr_assert_eq(chmod(s_dir, 0755), 0);
    char db[256], ep[200], wep[200];
    s_path(db, sizeof db, "coord.db");
    snprintf(ep, sizeof ep, "ipc://%s/clients.sock", s_dir);
    snprintf(wep, sizeof wep, "ipc://%s/workers.sock", s_dir);
    char *argv[] = {"crucible", "coordinator", "--db", db, "--clients-endpoint", ep,
                    "--workers-endpoint", wep, "--heartbeat-ms", "200", NULL};
    s_coord = s_spawn(argv);
    cr_assert(s_await_log(s_coord, "coordinator up", 10000), "the coordinator did not start");
    /* its own user is served */
    void *me = s_dealer(ep, NULL, NULL);
    s_submit(me, "b-files", 1, 0);
    zmq_close(me);
    const char *files[] = {"coord.db", "coord.db-wal", "coord.db-shm", "clients.sock",
                           "workers.sock"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[256];
        struct stat st;
        s_path(p, sizeof p, files[i]);
        cr_assert_eq(stat(p, &st), 0, "%s: %s", files[i], strerror(errno));
        cr_assert_eq(st.st_mode & 077, 0, "%s is mode %o", files[i], st.st_mode & 0777);
    }
    cr_assert_not(s_nobody_reads(db), "another local user reads the database");
    cr_assert_not(s_nobody_talks(ep), "another local user talks to the clients socket");
}

/* ---- finding: NUL bytes in ids merge jobs ---- */

Test(hostile, nul_bytes_in_ids_are_refused_naming_the_field)
{
    s_start_coord(NULL);
    void *alice = s_dealer(s_cep, "alice", NULL);
    /* "aQQx" and "aQQy" become "a\0\0x" and "a\0\0y": protobuf-c would read both as "a" */
    const char *ids[] = {"aQQx", "aQQy"};
    size_t len;
    uint8_t *buf = s_submit_bytes("b-nul", ids, 2, 0, &len);
    for (size_t i = 0; i + 4 <= len; i++)
        if (buf[i] == 'a' && buf[i + 1] == 'Q' && buf[i + 2] == 'Q')
            buf[i + 1] = buf[i + 2] = '\0';
    cr_assert_eq(zmq_send(alice, buf, len, 0), (int)len);
    free(buf);
    Crucible__Envelope *env = s_expect(alice, CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK, 5000);
    cr_assert_not_null(env);
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR,
                 "ids with NUL bytes were accepted (%s)", cr_wire_body_name(env));
    cr_assert(strstr(env->error->message, "job_id"), "%s", env->error->message);
    cr_wire_free(&env);
    /* nothing of it stays */
    Crucible__StatusRequest sr = CRUCIBLE__STATUS_REQUEST__INIT;
    Crucible__Envelope req = CRUCIBLE__ENVELOPE__INIT;
    sr.batch_id = "b-nul";
    req.body_case = CRUCIBLE__ENVELOPE__BODY_STATUS_REQUEST;
    req.status_request = &sr;
    s_send(alice, &req);
    env = s_expect(alice, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, 5000);
    cr_assert_not_null(env);
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR, "the batch was stored");
    cr_wire_free(&env);
    zmq_close(alice);
}

/* ---- finding: invalid UTF-8 is echoed back ---- */

Test(hostile, invalid_utf8_is_never_echoed_back)
{
    s_start_coord(NULL);
    void *alice = s_dealer(s_cep, "alice", NULL);
    const char *ids[] = {"j0"};
    size_t len;
    uint8_t *buf = s_submit_bytes("bZZZ", ids, 1, 0, &len);
    for (size_t i = 0; i + 4 <= len; i++)
        if (memcmp(buf + i, "bZZZ", 4) == 0)
            buf[i + 1] = 0xff, buf[i + 2] = 0xfe, buf[i + 3] = 0xc0;
    cr_assert_eq(zmq_send(alice, buf, len, 0), (int)len);
    free(buf);
    Crucible__Envelope *env = s_expect(alice, CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK, 5000);
    cr_assert_not_null(env, "no answer");
    /* every string of the answer is UTF-8 */
    if (env->body_case == CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK) {
        const char *b = env->submit_ack->batch_id;
        cr_assert(cr_wire_utf8_ok(b, strlen(b)), "the batch id came back raw");
        for (size_t i = 0; i < env->submit_ack->n_errors; i++)
            cr_assert(cr_wire_utf8_ok(env->submit_ack->errors[i],
                                      strlen(env->submit_ack->errors[i])));
    }
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR, "a batch id of invalid UTF-8 "
                 "was accepted");
    cr_assert(cr_wire_utf8_ok(env->error->message, strlen(env->error->message)));
    cr_assert(cr_wire_utf8_ok(env->error->batch_id, strlen(env->error->batch_id)));
    cr_assert(strstr(env->error->message, "batch_id"), "%s", env->error->message);
    cr_wire_free(&env);
    zmq_close(alice);
}

/* ---- finding: symlinks out of a task folder are followed and uploaded ---- */

static void s_copy_task(const char *to)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cp -r %s/saxpy %s", EXAMPLES, to);
    cr_assert_eq(system(cmd), 0);
}

Test(hostile, task_folders_may_not_reach_outside_themselves)
{
    char secret[256], task[256], link[300], err[1024];
    s_path(secret, sizeof secret, "secret.txt");
    FILE *f = fopen(secret, "w");
    fprintf(f, "void solve(void) {} /* the operator's secret */\n");
    fclose(f);
    /* the reference is a symlink out of the folder */
    s_path(task, sizeof task, "t-ref");
    s_copy_task(task);
    snprintf(link, sizeof link, "%s/reference.c", task);
    cr_assert_eq(unlink(link), 0);
    cr_assert_eq(symlink(secret, link), 0);
    Crucible__TaskBundle *b = NULL;
    int rc = cr_client_task_bundle(task, &b, err, sizeof err);
    cr_assert_neq(rc, 0, "a symlink out of the task folder was read");
    cr_assert(strstr(err, "reference.c"), "%s", err);
    /* a candidate is a symlink out of its folder */
    s_path(task, sizeof task, "t-cand");
    s_copy_task(task);
    snprintf(link, sizeof link, "%s/candidates/leak.c", task);
    cr_assert_eq(symlink(secret, link), 0);
    cr_jobset_t js = {0};
    rc = cr_jobset_load(&js, task, NULL, err, sizeof err);
    cr_assert_neq(rc, 0, "a candidate symlinked out of its folder was loaded");
    cr_assert(strstr(err, "leak.c"), "%s", err);
    cr_jobset_close(&js);
    /* and `crucible submit` says so before it connects */
    char out[4096];
    char *argv[] = {"crucible", "submit", task, "--clients-endpoint", s_cep, "--insecure",
                    "--wait-s", "2", NULL};
    rc = s_run(argv, out, sizeof out);
    cr_assert(rc > 0 && strstr(out, "leak.c"), "exit %d: %s", rc, out);
}
