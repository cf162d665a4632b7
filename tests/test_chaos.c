/* test_chaos.c — lose nothing under faults.
 *
 * A real cluster (the `crucible` binary: one coordinator, four workers, TCP
 * on loopback) judges a batch of cheap C candidates while this test kills
 * workers and the coordinator with SIGKILL again and again and starts them
 * again (the coordinator on the same database and endpoints; a worker under
 * its old id or as a new one). The client is this process, through the same
 * library calls as `crucible submit --follow`: it must reconnect by itself.
 *
 * Then: the client got every job's record exactly once, each with the
 * verdict its candidate deserves, and the database holds exactly one record
 * per job with seqs 1..N and every store invariant intact. */
#define _GNU_SOURCE
#include "net_util.h"
#include "cli.h"
#include "client.h"
#include "error.h"
#include "file.h"
#include "log.h"
#include "record.h"
#include "store.h"
#include "timeutil.h"
#include "wire.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CRUCIBLE CR_TEST_BIN_DIR "/crucible"
#define S_JOBS 300
#define S_WORKERS 4

typedef struct {
    pid_t pid;             /* 0 while down */
    int64_t restart_at;    /* mono ms to start it again; 0 = not pending */
    char id[32];           /* worker id ("" for the coordinator) */
    int gen;               /* restarts so far (names a new worker id) */
} s_proc_t;

static struct {
    char dir[128];                 /* temp folder: db, work dirs, logs, task */
    char cep[64], wep[64];         /* clients and workers endpoints */
    s_proc_t coord;                /* the coordinator */
    s_proc_t w[S_WORKERS];         /* the workers */
    int64_t next_event;            /* mono ms of the next kill */
    unsigned seed;                 /* rand_r state */
    int events;                    /* kills attempted */
    int kills_coord, kills_worker; /* SIGKILLs sent */
    int new_ids;                   /* workers that came back under a new id */
    int unexpected;                /* children that ended without our kill */
    int chaos;                     /* 1 while killing */
    int got[S_JOBS];               /* records handed to the client, per job */
    int status[S_JOBS];            /* status of the first */
    int unknown;                   /* records of jobs not in the batch */
} S;

/* Starts p (coordinator when p->id is "", else a worker); output to its log. */
static void s_start(s_proc_t *p)
{
    char log[256], a[8][300];
    int n = 0;
    if (!p->id[0]) {
        snprintf(log, sizeof log, "%s/coordinator.log", S.dir);
        snprintf(a[n++], sizeof a[0], "--clients-endpoint=%s", S.cep);
        snprintf(a[n++], sizeof a[0], "--db=%s/crucible.db", S.dir);
        snprintf(a[n++], sizeof a[0], "--max-attempts=50");
        snprintf(a[n++], sizeof a[0], "--drain-after=0"); /* kills on purpose: keep them all */
    } else {
        snprintf(log, sizeof log, "%s/worker-%s.log", S.dir, p->id);
        snprintf(a[n++], sizeof a[0], "--worker-id=%s", p->id);
        snprintf(a[n++], sizeof a[0], "--work-dir=%s/work-%s", S.dir, p->id);
        snprintf(a[n++], sizeof a[0], "--compile-jobs=1");
    }
    snprintf(a[n++], sizeof a[0], "--workers-endpoint=%s", S.wep);
    snprintf(a[n++], sizeof a[0], "--heartbeat-ms=200");
    snprintf(a[n++], sizeof a[0], "--liveness=5");
    char *argv[12] = {CRUCIBLE, p->id[0] ? "worker" : "coordinator"};
    for (int i = 0; i < n; i++)
        argv[2 + i] = a[i];
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* nothing outlives the test */
        if (getppid() != parent)
            _exit(1);
        setpgid(0, 0);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (fd < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        execv(CRUCIBLE, argv);
        _exit(127);
    }
    setpgid(pid, pid);
    p->pid = pid;
    p->restart_at = 0;
}

/* SIGKILL to p's process group (the worker's compilers too), reaped. */
static void s_kill(s_proc_t *p)
{
    if (!p->pid)
        return;
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    p->pid = 0;
}

/* Reaps a child that ended by itself: that is a bug (counted), but it is
 * started again so that the run can go on and show what else breaks. */
static void s_reap(s_proc_t *p, int64_t now)
{
    int st;
    if (p->pid && waitpid(p->pid, &st, WNOHANG) == p->pid) {
        fprintf(stderr, "chaos: %s %s ended by itself (status 0x%x)\n",
                p->id[0] ? "worker" : "coordinator", p->id, st);
        S.unexpected++;
        p->pid = 0;
        p->restart_at = now + 200;
    }
}

/* The stream's tick: kill something every 0.5–1.3 s, start it again 0–0.6 s
 * later. Every third kill hits the coordinator. */
static int s_tick(void *arg)
{
    (void)arg;
    int64_t now = cr_time_mono_ms();
    s_reap(&S.coord, now);
    for (int i = 0; i < S_WORKERS; i++)
        s_reap(&S.w[i], now);
    if (S.coord.restart_at && now >= S.coord.restart_at)
        s_start(&S.coord);
    for (int i = 0; i < S_WORKERS; i++) {
        if (S.w[i].restart_at && now >= S.w[i].restart_at) {
            if (rand_r(&S.seed) % 2) { /* a replacement machine: new id, new work dir */
                snprintf(S.w[i].id, sizeof S.w[i].id, "w%d-g%d", i, ++S.w[i].gen);
                S.new_ids++;
            }
            s_start(&S.w[i]);
        }
    }
    if (!S.chaos || now < S.next_event)
        return 0;
    S.next_event = now + 500 + rand_r(&S.seed) % 800;
    int64_t back = now + rand_r(&S.seed) % 600;
    if (++S.events % 3 == 0) { /* every third, so that a quick run still has some */
        if (S.coord.pid) {
            s_kill(&S.coord);
            S.coord.restart_at = back;
            S.kills_coord++;
        }
    } else {
        s_proc_t *w = &S.w[rand_r(&S.seed) % S_WORKERS];
        if (w->pid) {
            s_kill(w);
            w->restart_at = back;
            S.kills_worker++;
        }
    }
    return 0;
}

static int s_collect(void *arg, const Crucible__RewardRecord *rec)
{
    (void)arg;
    int i = -1;
    if (sscanf(rec->job_id, "j%d", &i) != 1 || i < 0 || i >= S_JOBS) {
        S.unknown++;
        return 0;
    }
    if (S.got[i]++ == 0)
        S.status[i] = rec->status;
    return 0;
}

static void s_tail(const char *name)
{
    char path[300], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", S.dir, name);
    if (cr_file_read(path, 64u << 20, &text, &len) != 0)
        return;
    size_t start = len > 3000 ? len - 3000 : 0;
    fprintf(stderr, "---- %s (end) ----\n%s\n", name, text + start);
    free(text);
}

static void s_fini(void)
{
    s_kill(&S.coord);
    for (int i = 0; i < S_WORKERS; i++)
        s_kill(&S.w[i]);
    if (S.dir[0])
        cr_file_rmtree(S.dir);
}

/* Every process here speaks plain TCP on 127.0.0.1: the children inherit this. */
static void s_init(void)
{
    setenv("CRUCIBLE_INSECURE", "1", 1);
}

TestSuite(chaos, .init = s_init, .fini = s_fini, .timeout = 280);

static const char s_task_json[] =
    "{\"name\": \"chaos\", \"language\": \"c\",\n"
    " \"signature\": \"void solve(const float *x, float *y, int n)\",\n"
    " \"params\": {\"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"y\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"n\": {\"role\": \"size\"}},\n"
    " \"cases\": [{\"n\": 7}, {\"n\": 1000}], \"bench_cases\": [1],\n"
    " \"tolerance\": {\"atol\": 0, \"rtol\": 0}, \"reference\": \"reference.c\"}\n";
static const char s_ok[] =
    "void solve(const float *x, float *y, int n) { for (int i = 0; i < n; i++) y[i] = 2 * x[i]; }";
static const char s_wrong[] =
    "void solve(const float *x, float *y, int n) { for (int i = 0; i < n; i++) y[i] = x[i]; }";
static const char s_broken[] = "void solve(const float *x, float *y, int n) { y[0] = }";

/* Makes the temporary folder S.dir holding the task folder task/ (task.json
 * and a correct reference); path is scratch. */
static void s_make_task_dir(char *path, size_t len)
{
    snprintf(S.dir, sizeof S.dir, "/tmp/crucible-chaos-XXXXXX");
    cr_assert_not_null(mkdtemp(S.dir));
    snprintf(path, len, "%s/task", S.dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, len, "%s/task/task.json", S.dir);
    cr_assert_eq(cr_file_write_atomic(path, s_task_json, strlen(s_task_json)), 0);
    snprintf(path, len, "%s/task/reference.c", S.dir);
    cr_assert_eq(cr_file_write_atomic(path, s_ok, strlen(s_ok)), 0);
}

Test(chaos, kill_workers_and_coordinator)
{
    char err[600], path[300], batch[64];
    s_make_task_dir(path, sizeof path);

    /* Jobs: correct, wrong, not compiling, in ten textual variants each, so
     * compiles happen (and get killed) but most hit the compile cache. */
    cr_jobset_t js = {0};
    snprintf(path, sizeof path, "%s/task", S.dir);
    cr_assert_eq(cr_jobset_load(&js, path, NULL, err, sizeof err), 0, "%s", err);
    static const int want[3] = {CRUCIBLE__STATUS__STATUS_OK, CRUCIBLE__STATUS__STATUS_INCORRECT,
                                CRUCIBLE__STATUS__STATUS_COMPILE_ERROR};
    for (int i = 0; i < S_JOBS; i++) {
        char id[32], src[256];
        const char *body = i % 3 == 0 ? s_ok : i % 3 == 1 ? s_wrong : s_broken;
        snprintf(id, sizeof id, "j%04d", i);
        snprintf(src, sizeof src, "/* variant %d */\n%s\n", i % 10, body);
        cr_assert_eq(cr_jobset_add(&js, id, "chaos", src, NULL, 0, 0), 0);
    }

    int pc = cr_test_free_port(), pw = cr_test_free_port();
    cr_assert(pc && pw && pc != pw);
    snprintf(S.cep, sizeof S.cep, "tcp://127.0.0.1:%d", pc);
    snprintf(S.wep, sizeof S.wep, "tcp://127.0.0.1:%d", pw);
    S.seed = (unsigned)time(NULL);
    fprintf(stderr, "chaos: seed %u, %d jobs, %d workers, %s\n", S.seed, S_JOBS, S_WORKERS,
            S.dir);
    s_start(&S.coord);
    for (int i = 0; i < S_WORKERS; i++) {
        snprintf(S.w[i].id, sizeof S.w[i].id, "w%d", i);
        s_start(&S.w[i]);
    }

    cr_config_t cfg;
    cr_config_defaults(&cfg);
    static const char *const set[][2] = {
        {"heartbeat-ms", "200"}, {"liveness", "5"},        {"time-budget-s", "0.01"},
        {"max-attempts", "50"},  {"run-timeout-s", "60"}, {"log-level", "warn"},
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        cr_assert_eq(cr_config_set(&cfg, set[i][0], set[i][1], err, sizeof err), 0, "%s", err);
    cr_log_set_level(CR_LEVEL_WARN);
    cr_client_t *c = cr_client_new(S.cep, 0);
    cr_assert_not_null(c);
    snprintf(batch, sizeof batch, "chaos-%u", S.seed);

    /* The kills start before the submit: the Submit itself may be lost. */
    int64_t t0 = cr_time_mono_ms();
    S.chaos = 1;
    S.next_event = t0 + 200;
    Crucible__Envelope *ack = NULL;
    int rc = cr_cli_submit_batch(c, &cfg, &js, batch, s_tick, NULL, &ack, err, sizeof err);
    cr_assert_eq(rc, 0, "submit: %s", err);
    cr_wire_free(&ack);
    cr_stream_t s = {.client = c, .batch = batch, .wait_s = 240, .on_record = s_collect,
                     .tick = s_tick, .silence_ms = cr_cli_silence_ms(&cfg)};
    rc = cr_cli_stream(&s);
    S.chaos = 0;
    double wall = (double)(cr_time_mono_ms() - t0) / 1000.0;
    fprintf(stderr, "chaos: %.1f s, %d coordinator kills, %d worker kills (%d came back under a "
            "new id), %u client reconnects, %d unexpected exits\n", wall, S.kills_coord,
            S.kills_worker, S.new_ids, s.reconnects, S.unexpected);
    if (rc != 0 || S.unexpected) {
        s_tail("coordinator.log");
        s_tail("worker-w0.log");
    }
    cr_client_destroy(&c);
    cr_assert_eq(rc, 0, "stream: %s (%s)", s.error, cr_strerror(rc));
    cr_expect_eq(S.unexpected, 0, "a cluster process ended without being killed");
    cr_expect_eq(s.total, (uint32_t)S_JOBS);
    cr_expect_eq(S.unknown, 0);
    int lost = 0, dup = 0, wrong = 0;
    for (int i = 0; i < S_JOBS; i++) {
        lost += S.got[i] == 0;
        dup += S.got[i] > 1;
        if (S.got[i] && S.status[i] != want[i % 3] && wrong++ < 5)
            fprintf(stderr, "j%04d: %s, expected %s\n", i, cr_status_name(S.status[i]),
                    cr_status_name(want[i % 3]));
    }
    cr_expect_eq(lost, 0, "%d jobs without a record at the client", lost);
    cr_expect_eq(dup, 0, "%d jobs handed to the client twice", dup);
    cr_expect_eq(wrong, 0, "%d jobs with the wrong verdict", wrong);
    /* The kills must have happened for the run to mean anything. */
    cr_expect_geq(S.kills_coord, 2);
    cr_expect_geq(S.kills_worker, 4);

    /* The database, once nobody writes it: one record per job, seqs 1..N. */
    s_kill(&S.coord);
    for (int i = 0; i < S_WORKERS; i++)
        s_kill(&S.w[i]);
    cr_store_t *st = NULL;
    snprintf(path, sizeof path, "%s/crucible.db", S.dir);
    cr_assert_eq(cr_store_open(path, &st), 0);
    cr_expect_eq(cr_store_check(st, err, sizeof err), 0, "%s", err);
    cr_store_batch_t b;
    cr_assert_eq(cr_store_batch_get(st, batch, &b), 0);
    cr_expect_eq(b.total, (uint32_t)S_JOBS);
    cr_expect_eq(b.done, (uint32_t)S_JOBS);
    cr_expect_eq(b.last_seq, (uint64_t)S_JOBS);
    int db_missing = 0;
    for (int i = 0; i < S_JOBS; i++) {
        char id[32];
        cr_store_job_info_t info;
        snprintf(id, sizeof id, "j%04d", i);
        db_missing += cr_store_job_get(st, batch, id, &info) != 0 || info.state != CR_JOB_DONE ||
                      info.seq == 0;
    }
    cr_expect_eq(db_missing, 0, "%d jobs without their record in the database", db_missing);
    cr_store_close(&st);
    cr_jobset_close(&js);
}

/* The stopped coordinator's tick: SIGKILL it 0.5 s into the submit (the
 * Submit sits unread in its socket), start it again 0.3 s later. */
static int s_tick_lost_submit(void *arg)
{
    int64_t *t = arg, now = cr_time_mono_ms();
    if (S.coord.pid && now - *t > 500 && !S.coord.restart_at && S.kills_coord == 0) {
        s_kill(&S.coord);
        S.kills_coord++;
        S.coord.restart_at = now + 300;
    }
    if (S.coord.restart_at && now >= S.coord.restart_at)
        s_start(&S.coord);
    return 0;
}

/* A Submit the coordinator never read (it was stopped, then killed) is sent
 * again on a new connection once no SubmitAck came: the batch is accepted
 * whole and runs to the end. */
Test(chaos, submit_lost_with_the_coordinator_is_sent_again)
{
    char err[600], path[300];
    s_make_task_dir(path, sizeof path);
    cr_jobset_t js = {0};
    snprintf(path, sizeof path, "%s/task", S.dir);
    cr_assert_eq(cr_jobset_load(&js, path, NULL, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 6; i++) {
        char id[32];
        snprintf(id, sizeof id, "j%04d", i);
        cr_assert_eq(cr_jobset_add(&js, id, "chaos", i % 2 ? s_wrong : s_ok, NULL, 0, 0), 0);
    }
    int pc = cr_test_free_port(), pw = cr_test_free_port();
    cr_assert(pc && pw && pc != pw);
    snprintf(S.cep, sizeof S.cep, "tcp://127.0.0.1:%d", pc);
    snprintf(S.wep, sizeof S.wep, "tcp://127.0.0.1:%d", pw);
    s_start(&S.coord);
    snprintf(S.w[0].id, sizeof S.w[0].id, "w0");
    s_start(&S.w[0]);
    cr_config_t cfg;
    cr_config_defaults(&cfg);
    static const char *const set[][2] = {
        {"heartbeat-ms", "200"}, {"liveness", "5"}, {"time-budget-s", "0.01"}, {"log-level", "warn"},
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        cr_assert_eq(cr_config_set(&cfg, set[i][0], set[i][1], err, sizeof err), 0, "%s", err);
    cr_client_t *c = cr_client_new(S.cep, 0);
    cr_assert_not_null(c);
    /* up and listening (a reply), then frozen: what it is sent stays unread */
    Crucible__Envelope *env = NULL;
    cr_assert_eq(cr_client_status(c, ""), 0);
    cr_assert_eq(cr_cli_wait_reply(c, 30, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, &env, NULL,
                                   NULL, err, sizeof err), 0, "%s", err);
    cr_wire_free(&env);
    cr_assert_eq(kill(S.coord.pid, SIGSTOP), 0);
    int64_t t0 = cr_time_mono_ms();
    int rc = cr_cli_submit_batch(c, &cfg, &js, "lost-submit", s_tick_lost_submit, &t0, &env, err,
                                 sizeof err);
    cr_assert_eq(rc, 0, "submit: %s", err);
    cr_expect_eq(S.kills_coord, 1);
    cr_expect_eq(env->submit_ack->accepted, 6, "the first Submit was never read: all 6 are new");
    cr_wire_free(&env);
    memset(S.got, 0, sizeof S.got);
    cr_stream_t s = {.client = c, .batch = "lost-submit", .wait_s = 120, .on_record = s_collect,
                     .silence_ms = cr_cli_silence_ms(&cfg)};
    rc = cr_cli_stream(&s);
    cr_assert_eq(rc, 0, "stream: %s", s.error);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(S.got[i], 1, "j%04d: %d records", i, S.got[i]);
    cr_client_destroy(&c);
    cr_jobset_close(&js);
}
