/* test_e2e.c — the whole system: a coordinator and two workers as separate
 * processes (the real `crucible` binary), real compilers and runners, real
 * records back over ZeroMQ.
 *
 * The cluster is cr_local_start's: children in a temp folder, talking over
 * TCP on loopback (127.0.0.1, ports picked free), sent SIGTERM if this test
 * process dies, stopped and removed by the suite's fini even when an
 * assertion fails. */
#include "cli.h"
#include "client.h"
#include "error.h"
#include "file.h"
#include "proc.h"
#include "record.h"
#include "run.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CRUCIBLE CR_TEST_BIN_DIR "/crucible"
#define EXAMPLES CR_TEST_SOURCE_DIR "/tasks/examples"

static cr_local_t *s_local;
static cr_client_t *s_client;
static char s_tmp[128]; /* scratch folder of the `crucible run` test */

static void s_fini(void)
{
    /* a failing test leaves its children's logs for the reader */
    for (int i = 0; s_local && i < s_local->n; i++) {
        if (s_local->pid[i] == 0) {
            fprintf(stderr, "%s ended; its log:\n", s_local->name[i]);
            cr_local_log_tail(s_local, i, stderr, 20);
        }
    }
    cr_client_destroy(&s_client);
    cr_local_stop(&s_local);
    if (s_tmp[0])
        cr_file_rmtree(s_tmp);
}

TestSuite(e2e, .fini = s_fini, .timeout = 560);

/* The settings of a quick test cluster. */
static void s_test_config(cr_config_t *cfg)
{
    char err[256];
    cr_config_defaults(cfg);
    static const char *const set[][2] = {
        {"heartbeat-ms", "200"},   {"liveness", "10"},      {"time-budget-s", "0.05"},
        {"rse-target", "0.05"},    {"run-timeout-s", "120"}, {"compile-jobs", "1"},
        {"log-level", "info"},
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        cr_assert_eq(cr_config_set(cfg, set[i][0], set[i][1], err, sizeof err), 0, "%s", err);
}

/* ---- collecting a batch ---- */

typedef struct {
    const char *ids[512];      /* job ids, borrowed from the job set */
    int want[512];             /* expected Status per job */
    int got[512];              /* records received per job */
    int status[512];           /* status of the first record */
    char workers[4][64];       /* distinct worker ids seen */
    int nworkers;
    int n;
    int unknown;               /* records for jobs not in the batch */
} s_batch_t;

static int s_collect(void *arg, const Crucible__RewardRecord *rec)
{
    s_batch_t *b = arg;
    int i = 0;
    while (i < b->n && strcmp(b->ids[i], rec->job_id) != 0)
        i++;
    if (i == b->n) {
        b->unknown++;
        return 0;
    }
    if (b->got[i]++ == 0)
        b->status[i] = rec->status;
    int k = 0;
    while (k < b->nworkers && strcmp(b->workers[k], rec->worker_id) != 0)
        k++;
    if (k == b->nworkers && k < 4)
        snprintf(b->workers[b->nworkers++], sizeof b->workers[0], "%s", rec->worker_id);
    return 0;
}

/* Fails the test when a cluster process has ended. */
static int s_alive(void *arg)
{
    char why[256];
    int i = cr_local_check(s_local, why, sizeof why);
    if (i >= 0) {
        cr_local_log_tail(s_local, i, stderr, 30);
        fprintf(stderr, "%s\n", why);
        return CR_E_CHILD;
    }
    return 0;
}

/* Submits js as batch (options from cfg) and collects every record into b. */
static void s_run_batch(const char *batch, cr_jobset_t *js, const cr_config_t *cfg, s_batch_t *b,
                        double wait_s)
{
    Crucible__Envelope *env = NULL;
    char err[600];
    int rc = cr_cli_submit_batch(s_client, cfg, js, batch, s_alive, NULL, &env, err, sizeof err);
    cr_assert_eq(rc, 0, "submit %s: %s", batch, err);
    cr_assert_eq(env->submit_ack->accepted, js->njobs, "accepted %u of %zu",
                 env->submit_ack->accepted, js->njobs);
    cr_wire_free(&env);
    cr_stream_t s = {.client = s_client, .batch = batch, .wait_s = wait_s,
                     .on_record = s_collect, .tick = s_alive, .arg = b};
    rc = cr_cli_stream(&s);
    cr_assert_eq(rc, 0, "batch %s: %s (%s)", batch, s.error, cr_strerror(rc));
    cr_assert_eq(s.total, (uint32_t)js->njobs);
    cr_assert_eq(b->unknown, 0);
    for (int i = 0; i < b->n; i++) {
        cr_expect_eq(b->got[i], 1, "%s: %d records", b->ids[i], b->got[i]);
        cr_expect_eq(b->status[i], b->want[i], "%s: %s, expected %s", b->ids[i],
                     cr_status_name(b->status[i]), cr_status_name(b->want[i]));
    }
}

/* Expected status of candidate file in a task's candidates/expected.json. */
static int s_expected(const char *task_dir, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/candidates/expected.json", task_dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s", path, je.text);
    const char *name = json_string_value(json_object_get(j, file));
    cr_assert_not_null(name, "%s: no entry for %s", path, file);
    int st = 0;
    cr_assert_eq(cr_status_parse(name, &st), 0, "%s: %s", path, name);
    json_decref(j);
    return st;
}

static void s_start_cluster(const cr_config_t *cfg)
{
    char err[512];
    cr_assert_eq(cr_local_start(CRUCIBLE, cfg, 2, CR_LOCAL_TCP, &s_local, err, sizeof err), 0, "%s", err);
    s_client = cr_client_new(s_local->clients_endpoint, (size_t)cfg->max_msg);
    cr_assert_not_null(s_client);
}

Test(e2e, hundred_jobs_two_workers_survive_crashes)
{
    cr_config_t cfg;
    s_test_config(&cfg);
    s_start_cluster(&cfg);

    /* 1. sabotage: each kills its runner in a different way */
    cr_jobset_t sab = {0};
    char err[1024];
    cr_assert_eq(cr_jobset_load(&sab, EXAMPLES "/vector_add", NULL, err, sizeof err), 0, "%s", err);
    for (size_t i = 0; i < sab.njobs; i++)
        crucible__job_spec__free_unpacked(sab.jobs[i], NULL);
    sab.njobs = 0; /* keep the task, replace the candidates */
    static const char *const sabotage[][3] = {
        {"segfault", "void solve(const float *a, const float *b, float *c, int n)\n"
                     "{ (void)a; (void)b; (void)c; (void)n; *(volatile int *)0 = 1; }\n",
         "RUNTIME_ERROR"},
        {"abort", "#include <stdlib.h>\n"
                  "void solve(const float *a, const float *b, float *c, int n) { abort(); }\n",
         "RUNTIME_ERROR"},
        {"endless", "void solve(const float *a, const float *b, float *c, int n)\n"
                    "{ volatile unsigned long k = 0; for (;;) k++; }\n",
         "TIMEOUT"},
        {"exit0", "#include <stdlib.h>\n"
                  "void solve(const float *a, const float *b, float *c, int n) { exit(0); }\n",
         "RUNTIME_ERROR"},
    };
    static s_batch_t b1, b2; /* large: off the stack */
    memset(&b1, 0, sizeof b1);
    memset(&b2, 0, sizeof b2);
    for (size_t i = 0; i < 4; i++) {
        char id[64];
        snprintf(id, sizeof id, "vector_add/%s", sabotage[i][0]);
        cr_assert_eq(cr_jobset_add(&sab, id, "vector_add", sabotage[i][1], NULL, 0, 0), 0);
        b1.ids[b1.n] = sab.jobs[i]->job_id;
        cr_assert_eq(cr_status_parse(sabotage[i][2], &b1.want[b1.n]), 0);
        b1.n++;
    }
    cr_config_t quick = cfg;
    quick.run_timeout_s = 3; /* the endless loop is killed after 3 s */
    s_run_batch("e2e-sabotage", &sab, &quick, &b1, 240);
    cr_jobset_close(&sab);

    /* 2. >= 100 jobs: every example candidate once, then the ones that are
     * not timed (compile errors, wrong answers) again under distinct ids
     * until there are 100. Timing is the slow part of a job on this shared
     * box (seconds each), and one round of it already covers every kind. */
    cr_jobset_t js = {0};
    cr_assert_eq(cr_jobset_load(&js, EXAMPLES, NULL, err, sizeof err), 0, "%s", err);
    cr_jobset_keep_backends(&js, cfg.backends, NULL, 0); /* no GPU here: the C tasks */
    size_t base = js.njobs;
    cr_assert_gt(base, 0);
    for (size_t i = 0; i < base; i++) {
        const Crucible__JobSpec *j = js.jobs[i];
        size_t t = 0;
        while (strcmp(js.tasks[t]->name, j->task) != 0)
            t++;
        b2.ids[i] = j->job_id;
        b2.want[i] = s_expected(js.task_dirs[t], strchr(j->job_id, '/') + 1);
    }
    for (int r = 1; js.njobs < 100; r++) {
        for (size_t i = 0; i < base; i++) {
            if (b2.want[i] == CRUCIBLE__STATUS__STATUS_OK)
                continue;
            char id[300];
            snprintf(id, sizeof id, "%s#%d", js.jobs[i]->job_id, r);
            cr_assert_eq(cr_jobset_add(&js, id, js.jobs[i]->task, js.jobs[i]->source, NULL, 0, 0),
                         0);
            b2.ids[js.njobs - 1] = js.jobs[js.njobs - 1]->job_id;
            b2.want[js.njobs - 1] = b2.want[i];
        }
        cr_assert_lt(r, 100, "no candidate that is not timed");
    }
    cr_assert_leq(js.njobs, 512);
    b2.n = (int)js.njobs;
    s_run_batch("e2e-main", &js, &cfg, &b2, 500);

    /* 3. the workers survived the sabotage and both served the main batch */
    char why[256];
    cr_assert_eq(cr_local_check(s_local, why, sizeof why), -1, "%s", why);
    cr_expect_eq(b2.nworkers, 2, "records came from %d worker(s)", b2.nworkers);
    Crucible__Envelope *env = NULL;
    cr_assert_eq(cr_client_status(s_client, "e2e-main"), 0);
    cr_assert_eq(cr_cli_wait_reply(s_client, 30, CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY, &env, NULL,
                                   NULL, err, sizeof err),
                 0, "%s", err);
    cr_expect_eq(env->status_reply->n_workers, 2);
    cr_expect_eq(env->status_reply->batch_done, js.njobs);
    cr_wire_free(&env);

    /* 4. the command line sees the same batch: results as CSV, one row per job */
    char ep[300];
    snprintf(ep, sizeof ep, "--clients-endpoint=%s", s_local->clients_endpoint);
    char *argv[] = {CRUCIBLE, "results", "e2e-main", "--format", "csv", ep, "--wait-s", "60",
                    "--insecure", NULL};
    cr_proc_opts_t o = {.argv = argv, .out_cap = 8u << 20, .timeout_ms = 90000};
    cr_proc_result_t pr;
    cr_assert_eq(cr_proc_run(&o, &pr), 0);
    cr_expect_eq(pr.exit_code, 0, "results: %s", pr.err);
    int lines = 0;
    for (const char *p = pr.out; (p = strstr(p, "\r\n")); p += 2)
        lines++;
    cr_expect_geq(lines, (int)js.njobs + 1, "%d CSV lines for %zu jobs", lines, js.njobs);
    cr_proc_result_close(&pr);
    cr_jobset_close(&js);
}

Test(e2e, crucible_run_prints_a_table_and_writes_jsonl)
{
    snprintf(s_tmp, sizeof s_tmp, "/tmp/cr-e2e-run-XXXXXX");
    cr_assert_not_null(mkdtemp(s_tmp));
    char tasks[256], out[256];
    snprintf(tasks, sizeof tasks, "%s/tasks", s_tmp);
    snprintf(out, sizeof out, "%s/out.jsonl", s_tmp);
    cr_assert_eq(cr_file_mkdirs(tasks, 0755), 0);
    char link[300];
    snprintf(link, sizeof link, "%s/vector_add", tasks);
    cr_assert_eq(symlink(EXAMPLES "/vector_add", link), 0);

    char outopt[300];
    snprintf(outopt, sizeof outopt, "--out=%s", out);
    char *argv[] = {CRUCIBLE, "run", tasks, outopt, "--time-budget-s", "0.05", "--rse-target",
                    "0.05", "--workers", "2", "--wait-s", "400", NULL};
    cr_proc_opts_t o = {.argv = argv, .cwd = s_tmp, .out_cap = 1u << 20, .timeout_ms = 450000};
    cr_proc_result_t pr;
    cr_assert_eq(cr_proc_run(&o, &pr), 0);
    cr_assert_eq(pr.exit_code, 0, "crucible run: exit %d\n%s", pr.exit_code, pr.err);
    cr_assert(strstr(pr.out, "TASK") && strstr(pr.out, "STATUS") && strstr(pr.out, "REWARD"),
              "%s", pr.out);
    /* one row per candidate, each naming its status */
    const char *cands[] = {"broken.c", "fast.c", "nowrite.c", "slow.c", "wrong.c"};
    for (int i = 0; i < 5; i++)
        cr_expect(strstr(pr.out, cands[i]), "no row for %s:\n%s", cands[i], pr.out);
    cr_expect(strstr(pr.out, "COMPILE_ERROR") && strstr(pr.out, "INCORRECT"), "%s", pr.out);
    cr_proc_result_close(&pr);

    FILE *f = fopen(out, "r");
    cr_assert_not_null(f, "%s not written", out);
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        Crucible__RewardRecord *r = NULL;
        char err[256];
        cr_assert_eq(cr_record_from_json(line, &r, err, sizeof err), 0, "%s", err);
        cr_expect_str_eq(r->task, "vector_add");
        crucible__reward_record__free_unpacked(r, NULL);
        n++;
    }
    free(line);
    fclose(f);
    cr_expect_eq(n, 5, "%d JSONL lines", n);
    /* nothing left behind: no crucible-run-* folder of ours */
}

Test(e2e, command_line_errors_have_their_exit_codes)
{
    struct {
        char *argv[6];
        int code;
    } cases[] = {
        {{CRUCIBLE, "no-such-command", NULL}, 2},
        {{CRUCIBLE, "run", NULL}, 2},
        {{CRUCIBLE, "run", "/nonexistent-tasks", NULL}, 1},
        {{CRUCIBLE, "run", ".", "--workers", "0", NULL}, 2},
        {{CRUCIBLE, "submit", "x", "--time-budget-s", "abc", NULL}, 2},
        {{CRUCIBLE, "task", "check", EXAMPLES, NULL}, 0},
        {{CRUCIBLE, "task", "check", "/nonexistent-task", NULL}, 1},
        {{CRUCIBLE, "--version", NULL}, 0},
        {{CRUCIBLE, "results", "--help", NULL}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_proc_opts_t o = {.argv = cases[i].argv, .timeout_ms = 30000};
        cr_proc_result_t pr;
        cr_assert_eq(cr_proc_run(&o, &pr), 0);
        cr_expect_eq(pr.exit_code, cases[i].code, "%s %s: exit %d\n%s", cases[i].argv[1],
                     cases[i].argv[2] ? cases[i].argv[2] : "", pr.exit_code, pr.err);
        cr_proc_result_close(&pr);
    }
}

/* crucible run drops the tasks its local workers cannot take (docs/multigpu.md):
 * a task with "gpus": N needs a worker that owns N GPUs, or its jobs would
 * wait for one that never comes. */
Test(e2e, run_keeps_only_tasks_its_workers_own_the_gpus_for)
{
    char err[512], skipped[64];
    for (int own = 0; own <= 2; own++) {
        cr_jobset_t js = {0};
        cr_assert_eq(cr_jobset_load(&js, EXAMPLES "/allreduce_sum_f32", NULL, err, sizeof err), 0,
                     "%s", err);
        size_t n = js.njobs;
        cr_assert_geq(n, 5);
        size_t dropped = cr_jobset_keep_gpus(&js, own, skipped, sizeof skipped);
        cr_assert_eq(dropped, own < 2 ? n : 0, "own %d: dropped %zu of %zu", own, dropped, n);
        cr_assert_eq(js.ntasks, own < 2 ? 0u : 1u);
        cr_assert_str_eq(skipped, own < 2 ? "2-GPU" : "");
        cr_jobset_close(&js);
    }
    cr_jobset_t js = {0}; /* a one-GPU task needs no GPU of a group */
    cr_assert_eq(cr_jobset_load(&js, EXAMPLES "/vector_add", NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(cr_jobset_keep_gpus(&js, 0, skipped, sizeof skipped), 0);
    cr_assert_eq(js.ntasks, 1u);
    cr_jobset_close(&js);
}
