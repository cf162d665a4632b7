/* test_security.c — CURVE, the ZAP allow-lists, batch ownership and the
 * plaintext policy, over real TCP sockets on 127.0.0.1: the coordinator runs
 * in-process on a thread (cr_coordinator_new/run/stop), workers are real
 * cr_worker threads with the real crucible-runner, clients the C client. */
#include "net_util.h"
#include "client.h"
#include "coordinator.h"
#include "curve.h"
#include "error.h"
#include "file.h"
#include "wire.h"
#include "worker.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define EXAMPLES CR_TEST_SOURCE_DIR "/tasks/examples"
#define RUNNER CR_TEST_BIN_DIR "/crucible-runner"
#define S_COORD_MAX_MSG (256 * 1024) /* the coordinator's cap: the oversize test sends more */
#define S_SILENT_MS 1500             /* a refused peer hears nothing for this long */

static char s_dir[128];               /* temp folder: keys, db, work dirs */
static cr_config_t s_coord_cfg;       /* the coordinator's settings */
static cr_coordinator_t *s_coord;     /* in-process coordinator */
static pthread_t s_coord_thread;
static cr_worker_t *s_worker;         /* one worker thread at most */
static pthread_t s_worker_thread;

static void s_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", s_dir, name);
}

static void s_keygen(const char *name)
{
    char prefix[256], err[256];
    s_path(prefix, sizeof prefix, name);
    cr_assert_eq(cr_curve_keygen(prefix, err, sizeof err), 0, "%s", err);
}

/* Appends name.pub to the allow-list file list. */
static void s_allow(const char *list, const char *name)
{
    char path[256], pub[256], key[CR_CURVE_Z85 + 1], err[256];
    s_path(path, sizeof path, list);
    snprintf(pub, sizeof pub, "%s/%s.pub", s_dir, name);
    cr_assert_eq(cr_curve_read_key(pub, key, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    fprintf(f, "# %s\n%s\n", name, key);
    fclose(f);
}

static void *s_coord_main(void *arg)
{
    cr_coordinator_run(arg);
    return NULL;
}

static void *s_worker_main(void *arg)
{
    cr_worker_run(arg);
    return NULL;
}

/* A client's (or worker's) settings with key name (NULL = plaintext). */
static void s_peer_cfg(cr_config_t *c, const char *name)
{
    cr_config_defaults(c);
    snprintf(c->clients_endpoint, sizeof c->clients_endpoint, "%s", s_coord_cfg.clients_endpoint);
    snprintf(c->workers_endpoint, sizeof c->workers_endpoint, "%s", s_coord_cfg.workers_endpoint);
    c->heartbeat_ms = 200;
    c->liveness = 10;
    if (name) {
        snprintf(c->key, sizeof c->key, "%s/%s.key", s_dir, name);
        snprintf(c->server_key, sizeof c->server_key, "%s/server.pub", s_dir);
    }
}

static void s_setup(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cr-sec-XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
    static const char *const names[] = {"server", "alice", "bob", "worker", "rogue"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        s_keygen(names[i]);
    s_allow("clients.allow", "alice");
    s_allow("clients.allow", "bob");
    s_allow("workers.allow", "worker");

    cr_config_t *c = &s_coord_cfg;
    cr_config_defaults(c);
    snprintf(c->clients_endpoint, sizeof c->clients_endpoint, "tcp://127.0.0.1:%d",
             cr_test_free_port());
    snprintf(c->workers_endpoint, sizeof c->workers_endpoint, "tcp://127.0.0.1:%d",
             cr_test_free_port());
    snprintf(c->db, sizeof c->db, "%s/coord.db", s_dir);
    snprintf(c->key, sizeof c->key, "%s/server.key", s_dir);
    snprintf(c->allow_clients, sizeof c->allow_clients, "%s/clients.allow", s_dir);
    snprintf(c->allow_workers, sizeof c->allow_workers, "%s/workers.allow", s_dir);
    c->max_msg = S_COORD_MAX_MSG;
    c->heartbeat_ms = 200;
    c->liveness = 10;
    s_coord = cr_coordinator_new(c);
    cr_assert_not_null(s_coord);
    cr_assert_eq(pthread_create(&s_coord_thread, NULL, s_coord_main, s_coord), 0);
}

static void s_teardown(void)
{
    if (s_worker) {
        cr_worker_stop(s_worker);
        pthread_join(s_worker_thread, NULL);
        cr_worker_destroy(&s_worker);
    }
    if (s_coord) {
        cr_coordinator_stop(s_coord);
        pthread_join(s_coord_thread, NULL);
        cr_coordinator_destroy(&s_coord);
    }
    if (s_dir[0])
        cr_file_rmtree(s_dir);
}

TestSuite(security, .init = s_setup, .fini = s_teardown, .timeout = 100);

/* Waits for a message of body case want (others are dropped) up to ms.
 * Returns it (caller frees) or NULL. An Error is returned whatever want is. */
static Crucible__Envelope *s_await(cr_client_t *c, int want, int ms)
{
    for (int waited = 0; waited < ms; waited += 100) {
        Crucible__Envelope *env = NULL;
        if (cr_client_recv(c, 100, &env) != 0)
            continue;
        if ((int)env->body_case == want || env->body_case == CRUCIBLE__ENVELOPE__BODY_ERROR)
            return env;
        cr_wire_free(&env);
    }
    return NULL;
}

/* Client with key name (NULL = plaintext, unchecked). */
static cr_client_t *s_client(const char *name)
{
    cr_config_t c;
    s_peer_cfg(&c, name);
    cr_client_t *cl = name ? cr_client_new_cfg(&c) : cr_client_new(c.clients_endpoint, 0);
    cr_assert_not_null(cl);
    return cl;
}

/* Workers the coordinator lists, asked by an allowed client. */
static size_t s_workers(cr_client_t *c)
{
    cr_assert_eq(cr_client_status(c, ""), 0);
    Crucible__Envelope *env = s_await(c, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, 5000);
    cr_assert_not_null(env, "no StatusReply");
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY);
    size_t n = env->status_reply->n_workers;
    cr_wire_free(&env);
    return n;
}

static void s_start_worker(const char *name)
{
    cr_config_t c;
    s_peer_cfg(&c, name);
    snprintf(c.work_dir, sizeof c.work_dir, "%s/work-%s", s_dir, name);
    snprintf(c.runner, sizeof c.runner, "%s", RUNNER);
    snprintf(c.worker_id, sizeof c.worker_id, "w-%s", name);
    c.compile_jobs = 1;
    s_worker = cr_worker_new(&c);
    cr_assert_not_null(s_worker);
    cr_assert_eq(pthread_create(&s_worker_thread, NULL, s_worker_main, s_worker), 0);
}

/* Submits saxpy's wrong.c as batch; returns the SubmitAck or Error. */
static Crucible__Envelope *s_submit(cr_client_t *c, const char *batch, int subscribe)
{
    cr_jobset_t js = {0};
    char err[512];
    cr_assert_eq(cr_jobset_load(&js, EXAMPLES "/saxpy", NULL, err, sizeof err), 0, "%s", err);
    size_t keep = js.njobs;
    for (size_t i = 0; i < js.njobs; i++)
        if (strstr(js.jobs[i]->job_id, "wrong"))
            keep = i;
    cr_assert_lt(keep, js.njobs, "saxpy has no wrong.c");
    Crucible__JobOptions o = CRUCIBLE__JOB_OPTIONS__INIT;
    o.time_budget_s = 0.05;
    o.rse_target = 0.05;
    cr_assert_eq(cr_client_submit(c, batch, js.tasks, js.ntasks, &js.jobs[keep], 1, &o, subscribe),
                 0);
    cr_jobset_close(&js);
    return s_await(c, CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK, 10000);
}

Test(security, keygen_writes_private_secret_and_loadable_public)
{
    char path[256], sec[CR_CURVE_Z85 + 1], pub[CR_CURVE_Z85 + 1], derived[CR_CURVE_Z85 + 1];
    char err[256];
    struct stat st;
    s_path(path, sizeof path, "alice.key");
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
    cr_assert_eq(cr_curve_read_key(path, sec, err, sizeof err), 0, "%s", err);
    s_path(path, sizeof path, "alice.pub");
    cr_assert_eq(cr_curve_read_key(path, pub, err, sizeof err), 0, "%s", err);
    cr_assert_eq(zmq_curve_public(derived, sec), 0);
    cr_assert_str_eq(derived, pub);
    /* never overwrites a key */
    s_path(path, sizeof path, "alice");
    cr_assert_neq(cr_curve_keygen(path, err, sizeof err), 0);
    /* a bad allow-list line is named */
    s_path(path, sizeof path, "bad.allow");
    FILE *f = fopen(path, "w");
    fprintf(f, "# ok\n%s\nnot-a-key\n", pub);
    fclose(f);
    char(*keys)[CR_CURVE_Z85 + 1] = NULL;
    size_t n = 0;
    cr_assert_neq(cr_curve_read_list(path, &keys, &n, err, sizeof err), 0);
    cr_assert(strstr(err, ":3:"), "%s", err);
}

Test(security, allowed_client_and_worker_judge_a_candidate)
{
    cr_client_t *c = s_client("alice");
    s_start_worker("worker");
    int n = 0;
    for (int i = 0; i < 50 && (n = (int)s_workers(c)) == 0; i++)
        usleep(100 * 1000);
    cr_assert_eq(n, 1, "the allowed worker did not register");
    Crucible__Envelope *env = s_submit(c, "sec-judge", 1);
    cr_assert_not_null(env, "no SubmitAck");
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK, "got %s",
                 cr_wire_body_name(env));
    cr_assert_eq(env->submit_ack->accepted, 1);
    cr_wire_free(&env);
    env = s_await(c, CRUCIBLE__ENVELOPE__BODY_RESULT, 60000);
    cr_assert_not_null(env, "no record came back");
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_RESULT);
    cr_assert_str_eq(env->result->record->batch_id, "sec-judge");
    cr_assert_str_eq(env->result->record->worker_id, "w-worker");
    cr_wire_free(&env);
    cr_client_destroy(&c);
}

Test(security, unknown_client_key_is_refused_and_others_are_served)
{
    cr_client_t *rogue = s_client("rogue");
    cr_assert_eq(cr_client_status(rogue, ""), 0);
    Crucible__Envelope *env = s_await(rogue, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, S_SILENT_MS);
    cr_assert_null(env, "an unknown key got %s", cr_wire_body_name(env));
    cr_client_t *c = s_client("alice");
    cr_assert_eq(s_workers(c), 0);
    cr_client_destroy(&rogue);
    cr_client_destroy(&c);
}

Test(security, plaintext_client_gets_nothing_from_curve_endpoint)
{
    cr_client_t *plain = s_client(NULL);
    cr_assert_eq(cr_client_status(plain, ""), 0);
    Crucible__Envelope *env = s_await(plain, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, S_SILENT_MS);
    cr_assert_null(env, "a plaintext client got %s", cr_wire_body_name(env));
    cr_client_destroy(&plain);
}

Test(security, unknown_worker_key_never_registers)
{
    cr_client_t *c = s_client("alice");
    s_start_worker("rogue");
    usleep(2000 * 1000); /* ten heartbeats: it would have said Ready by now */
    cr_assert_eq(s_workers(c), 0);
    cr_client_destroy(&c);
}

Test(security, oversized_message_is_dropped_and_coordinator_serves_on)
{
    /* a raw DEALER with an allowed key and no cap of its own */
    cr_config_t pc;
    s_peer_cfg(&pc, "alice");
    cr_curve_t cv;
    char err[256];
    const char *ep = pc.clients_endpoint;
    cr_assert_eq(cr_curve_setup(&pc, 0, &ep, 1, &cv, err, sizeof err), 0, "%s", err);
    void *ctx = zmq_ctx_new();
    void *d = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof zero);
    cr_assert_eq(cr_curve_apply(d, &cv), 0);
    cr_assert_eq(zmq_connect(d, ep), 0);
    /* over the cap, under the socket's hard cap: refused with E_TOO_BIG (and logged) */
    size_t big = 4 * S_COORD_MAX_MSG;
    char *junk = calloc(1, big);
    size_t over = S_COORD_MAX_MSG + S_COORD_MAX_MSG / 2;
    cr_assert_eq(zmq_send(d, junk, over, 0), (int)over);
    zmq_pollitem_t it = {d, 0, ZMQ_POLLIN, 0};
    cr_assert_eq(zmq_poll(&it, 1, 5000), 1, "no answer to a message over the cap");
    Crucible__Envelope *reply = NULL;
    cr_assert_eq(cr_wire_recv(d, NULL, &reply), 0);
    cr_assert_eq(reply->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR);
    cr_assert_str_eq(reply->error->code, "E_TOO_BIG");
    cr_wire_free(&reply);
    /* over the hard cap: the connection is dropped unread, nothing answers */
    cr_assert_eq(zmq_send(d, junk, big, 0), (int)big);
    free(junk);
    cr_assert_eq(zmq_poll(&it, 1, S_SILENT_MS), 0, "the coordinator answered an oversized message");
    zmq_close(d);
    zmq_ctx_term(ctx);
    cr_client_t *c = s_client("alice");
    cr_assert_eq(s_workers(c), 0);
    cr_client_destroy(&c);
}

Test(security, plaintext_is_refused_off_loopback_without_force)
{
    cr_config_t c;
    cr_curve_t cv;
    char err[512];
    cr_config_defaults(&c);
    /* no keys and no --insecure: plain TCP is refused even on loopback; ipc:// is fine */
    const char *lo_tcp[] = {"tcp://127.0.0.1:7000"}, *lo_ipc[] = {"ipc:///tmp/x"};
    cr_assert_eq(cr_curve_setup(&c, 1, lo_tcp, 1, &cv, err, sizeof err), CR_E_USAGE);
    cr_assert(strstr(err, "--insecure") && strstr(err, "--key"), "%s", err);
    cr_assert_eq(cr_curve_setup(&c, 0, lo_ipc, 1, &cv, err, sizeof err), 0, "%s", err);
    c.insecure = 1;
    cr_assert_eq(cr_curve_setup(&c, 1, lo_tcp, 1, &cv, err, sizeof err), 0, "%s", err);
    const char *open_ep[] = {"tcp://0.0.0.0:7001", "tcp://127.0.0.1:7002"};
    cr_assert_eq(cr_curve_setup(&c, 1, open_ep, 2, &cv, err, sizeof err), CR_E_USAGE);
    cr_assert(strstr(err, "--insecure-force") && strstr(err, "--key"), "%s", err);
    c.insecure_force = 1;
    cr_assert_eq(cr_curve_setup(&c, 1, open_ep, 2, &cv, err, sizeof err), 0, "%s", err);
    cr_assert_eq(cv.on, 0);
    /* keys and --insecure contradict each other: refused on any endpoint,
     * never a silent fall back to plaintext (issue 19) */
    c.insecure_force = 0;
    snprintf(c.key, sizeof c.key, "%s/server.key", s_dir);
    cr_assert_eq(cr_curve_setup(&c, 1, open_ep, 2, &cv, err, sizeof err), CR_E_USAGE);
    const char *loop[] = {"tcp://127.0.0.1:7003", "ipc:///tmp/x", "inproc://y",
                          "tcp://localhost:7004", "tcp://[::1]:7005"};
    cr_assert_eq(cr_curve_setup(&c, 1, loop, 5, &cv, err, sizeof err), CR_E_USAGE);
    cr_assert(strstr(err, "--key") && strstr(err, "--insecure"), "%s", err);
    /* --insecure alone: plaintext on every loopback kind of endpoint */
    c.key[0] = '\0';
    cr_assert_eq(cr_curve_setup(&c, 1, loop, 5, &cv, err, sizeof err), 0, "%s", err);
    cr_assert_eq(cv.on, 0);
    cr_assert_eq(cr_curve_is_loopback("tcp://10.0.0.1:7006"), 0);
    cr_assert_eq(cr_curve_is_loopback("tcp://127.0.0.1.evil.com:7006"), 0);
    /* the coordinator itself refuses to start */
    cr_config_t cc = s_coord_cfg;
    cc.key[0] = '\0';
    snprintf(cc.clients_endpoint, sizeof cc.clients_endpoint, "tcp://0.0.0.0:%d", cr_test_free_port());
    snprintf(cc.db, sizeof cc.db, "%s/other.db", s_dir);
    cr_coordinator_t *co = cr_coordinator_new(&cc);
    cr_assert_null(co);
    /* a client without keys will not talk plaintext to a remote host */
    cr_config_t pc;
    cr_config_defaults(&pc);
    snprintf(pc.clients_endpoint, sizeof pc.clients_endpoint, "tcp://192.0.2.1:7007");
    cr_assert_null(cr_client_new_cfg(&pc));
}

Test(security, clients_see_and_cancel_only_their_own_batches)
{
    cr_client_t *alice = s_client("alice");
    cr_client_t *bob = s_client("bob");
    Crucible__Envelope *env = s_submit(alice, "alice-batch", 0);
    cr_assert_not_null(env);
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK, "got %s",
                 cr_wire_body_name(env));
    cr_wire_free(&env);

    /* bob: status, subscribe and cancel all say not found */
    cr_assert_eq(cr_client_status(bob, "alice-batch"), 0);
    cr_assert_eq(cr_client_subscribe(bob, "alice-batch", 0, 1), 0);
    cr_assert_eq(cr_client_cancel(bob, "alice-batch", NULL), 0);
    for (int i = 0; i < 3; i++) {
        env = s_await(bob, CRUCIBLE__ENVELOPE__BODY_ERROR, 5000);
        cr_assert_not_null(env, "bob got no answer %d", i);
        cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR, "bob got %s",
                     cr_wire_body_name(env));
        cr_assert_str_eq(env->error->code, cr_errname(CR_E_NOT_FOUND));
        cr_wire_free(&env);
    }
    /* nor may he add to it */
    env = s_submit(bob, "alice-batch", 0);
    cr_assert_not_null(env);
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR);
    cr_wire_free(&env);

    /* alice still sees it whole, and may cancel it */
    cr_assert_eq(cr_client_status(alice, "alice-batch"), 0);
    env = s_await(alice, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, 5000);
    cr_assert_not_null(env);
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY);
    cr_assert_eq(env->status_reply->batch_total, 1);
    cr_wire_free(&env);
    cr_assert_eq(cr_client_cancel(alice, "alice-batch", NULL), 0);
    env = s_await(alice, CRUCIBLE__ENVELOPE__BODY_CANCEL_ACK, 5000);
    cr_assert_not_null(env);
    cr_assert_eq(env->body_case, CRUCIBLE__ENVELOPE__BODY_CANCEL_ACK, "got %s",
                 cr_wire_body_name(env));
    cr_assert_eq(env->cancel_ack->cancelled, 1);
    cr_wire_free(&env);
    cr_client_destroy(&alice);
    cr_client_destroy(&bob);
}
