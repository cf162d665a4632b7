/* test_runner.c — the real crucible-runner binary on real shared objects.
 *
 * Each test compiles a candidate (and the suite a reference) with cc through
 * the task's generated shim, sends a RunnerRequest on stdin and reads the
 * RewardRecord frame from stdout, exactly as the worker does. */
#define _GNU_SOURCE /* memmem */
#include "error.h"
#include "file.h"
#include "hash.h"
#include "proc.h"
#include "task.h"
#include "topo.h"
#include "runner_io.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <hwloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <limits.h>

#define RUNNER CR_TEST_BIN_DIR "/crucible-runner"

/* x in, y inout (y *= 0.5), z out (z = alpha*x + y), a size and a float scalar:
 * every role and a value of each kind goes through the shim. */
static const char s_task_json[] =
    "{\n"
    "  \"name\": \"axpy_t\",\n"
    "  \"language\": \"c\",\n"
    "  \"signature\": \"void solve(const float *x, float *y, float *z, int n, float alpha)\",\n"
    "  \"params\": {\n"
    "    \"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"],\n"
    "           \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1}},\n"
    "    \"y\": {\"role\": \"inout\", \"dtype\": \"float32\", \"shape\": [\"n\"],\n"
    "           \"init\": {\"dist\": \"uniform\", \"low\": -2, \"high\": 2}},\n"
    "    \"z\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "    \"n\": {\"role\": \"size\"},\n"
    "    \"alpha\": {\"role\": \"scalar\", \"dtype\": \"float32\"}\n"
    "  },\n"
    "  \"cases\": [{\"n\": 1, \"alpha\": 0.5}, {\"n\": 37, \"alpha\": -1.25},\n"
    "            {\"n\": 4096, \"alpha\": 2.0}],\n"
    "  \"bench_cases\": [2],\n"
    "  \"tolerance\": {\"atol\": 1e-5, \"rtol\": 1e-5},\n"
    "  \"reference\": \"reference.c\"\n"
    "}\n";

static const char s_reference[] =
    "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
    "{\n"
    "    for (int i = 0; i < n; i++) {\n"
    "        z[i] = alpha * x[i] + y[i];\n"
    "        y[i] = y[i] * 0.5f;\n"
    "    }\n"
    "}\n";

static char s_dir[64];
static cr_task_t *s_task;

static void s_write(const char *name, const char *text)
{
    char *p = cr_file_join(s_dir, name);
    cr_assert_eq(cr_file_write_atomic(p, text, strlen(text)), 0, "write %s", p);
    free(p);
}

/* Compiles src (already in s_dir) through the shim into so. */
static void s_build(const char *src, const char *so, const char *extra)
{
    char shim_name[128];
    snprintf(shim_name, sizeof shim_name, "shim_%s", src);
    char *shim = cr_task_shim_source(s_task, src);
    cr_assert_not_null(shim);
    s_write(shim_name, shim);
    free(shim);
    char *argv[] = {"cc", "-O2", "-shared", "-fPIC", "-Wl,-Bsymbolic", "-o", (char *)so,
                    shim_name, (char *)extra, NULL};
    if (!extra)
        argv[8] = NULL;
    cr_proc_opts_t o = {.argv = argv, .cwd = s_dir, .out_cap = 1 << 16, .err_cap = 1 << 16,
                        .merge_stderr = 1, .timeout_ms = 60000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited && r.exit_code == 0, "cc %s failed:\n%s", src, r.out);
    cr_proc_result_close(&r);
}

static void s_setup(void)
{
    cr_assert_eq(cr_hash_global_init(), 0);
    snprintf(s_dir, sizeof s_dir, "/tmp/cr-test-runner-XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
    char err[512];
    cr_assert_eq(cr_task_parse(s_task_json, "test task.json", &s_task, err, sizeof err), 0, "%s",
                 err);
    s_write("task.json", s_task_json);
    s_write("reference.c", s_reference);
    s_build("reference.c", "reference.so", NULL);
}

static void s_teardown(void)
{
    cr_task_destroy(&s_task);
    if (s_dir[0])
        cr_file_rmtree(s_dir);
}

TestSuite(runner, .init = s_setup, .fini = s_teardown, .timeout = 120);

typedef struct {
    const char *candidate;  /* .so name in s_dir */
    const char *baseline;   /* .so name or NULL */
    size_t seed_len;        /* 32 unless testing a bad request */
    int verify_only;
    double *cached;         /* cached reference medians (us) or NULL */
    double *cached_rse;     /* their RSEs, ncached of them, or NULL */
    size_t ncached;
} s_req_t;

/* Runs the runner on stdin_data. Returns the process result; *rec is the
 * decoded report, or NULL when there was none. */
static cr_proc_result_t s_run_raw(const void *stdin_data, size_t len,
                                  Crucible__RewardRecord **rec)
{
    cr_proc_result_t r;
    *rec = cr_test_runner_raw(RUNNER, stdin_data, len, 0, &r);
    return r;
}

/* Runner options for s_run (after the program; at most 6, NULL-terminated
 * when fewer), or NULL. */
static char **s_runner_opts;

static cr_proc_result_t s_run(const s_req_t *q, Crucible__RewardRecord **rec)
{
    Crucible__RunnerRequest req = CRUCIBLE__RUNNER_REQUEST__INIT;
    Crucible__JobOptions opt = CRUCIBLE__JOB_OPTIONS__INIT;
    unsigned char seed[32];
    cr_random_bytes(seed, sizeof seed);
    char *cand = cr_file_join(s_dir, q->candidate);
    char *ref = cr_file_join(s_dir, "reference.so");
    char *base = q->baseline ? cr_file_join(s_dir, q->baseline) : NULL;
    opt.time_budget_s = 0.2;
    req.task_json = (char *)s_task_json;
    req.candidate_so = cand;
    req.reference_so = ref;
    req.baseline_so = base ? base : (char *)"";
    req.seed.data = seed;
    req.seed.len = q->seed_len ? q->seed_len : 32;
    req.options = &opt;
    req.scratch_dir = s_dir;
    req.cpu = -1;
    req.llc_bytes = 1 << 20; /* a 2 MiB flush keeps the tests quick */
    req.verify_only = q->verify_only;
    req.n_cached_ref_median_us = q->ncached;
    req.cached_ref_median_us = q->cached;
    req.n_cached_ref_rse = q->cached_rse ? q->ncached : 0;
    req.cached_ref_rse = q->cached_rse;
    size_t n = crucible__runner_request__get_packed_size(&req);
    uint8_t *buf = malloc(n + 4);
    cr_assert_not_null(buf);
    buf[0] = n & 0xff, buf[1] = (n >> 8) & 0xff, buf[2] = (n >> 16) & 0xff, buf[3] = n >> 24;
    crucible__runner_request__pack(&req, buf + 4);
    cr_proc_result_t r;
    if (s_runner_opts) {
        char *argv[8] = {RUNNER};
        for (int i = 0; i < 6 && s_runner_opts[i]; i++)
            argv[i + 1] = s_runner_opts[i];
        *rec = cr_test_runner_argv(argv, buf, n + 4, 0, &r);
    } else {
        r = s_run_raw(buf, n + 4, rec);
    }
    free(buf);
    free(cand);
    free(ref);
    free(base);
    return r;
}

static int s_has_flag(const Crucible__RewardRecord *rec, const char *flag)
{
    for (size_t i = 0; i < rec->n_hack_flags; i++)
        if (!strcmp(rec->hack_flags[i], flag))
            return 1;
    return 0;
}

/* Builds candidate src (text) as name.so and runs it. */
static Crucible__RewardRecord *s_judge(const char *name, const char *text, cr_proc_result_t *out)
{
    char src[128], so[128];
    snprintf(src, sizeof src, "%s.c", name);
    snprintf(so, sizeof so, "%s.so", name);
    s_write(src, text);
    s_build(src, so, NULL);
    s_req_t q = {.candidate = so};
    Crucible__RewardRecord *rec;
    *out = s_run(&q, &rec);
    return rec;
}

static void s_done(Crucible__RewardRecord *rec, cr_proc_result_t *r)
{
    if (rec)
        crucible__reward_record__free_unpacked(rec, NULL);
    cr_proc_result_close(r);
}

#define S_STATUS(rec) ((rec) ? (int)(rec)->status : -1)
#define S_MSG(rec) ((rec) ? (rec)->message : "(no report)")

static const char s_honest[] =
    "#include <stddef.h>\n"
    "void solve(const float *restrict x, float *restrict y, float *restrict z, int n,\n"
    "           float alpha)\n"
    "{\n"
    "    for (size_t i = 0; i < (size_t)n; i++) {\n"
    "        float yi = y[i];\n"
    "        z[i] = alpha * x[i] + yi;\n"
    "        y[i] = 0.5f * yi;\n"
    "    }\n"
    "}\n";

Test(runner, honest_candidate_is_ok_and_timed)
{
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge("honest", s_honest, &r);
    cr_assert_not_null(rec, "no report; stderr:\n%s", r.err);
    cr_assert(r.exited && r.exit_code == 0);
    cr_assert_eq(rec->status, CRUCIBLE__STATUS__STATUS_OK, "%s", rec->message);
    cr_assert_eq(rec->n_hack_flags, 0);
    cr_assert_str_eq(rec->backend, "c");
    cr_assert(!strncmp(rec->device, "cpu:", 4), "device %s", rec->device);
    cr_assert_not_null(rec->verify);
    cr_assert(rec->verify->ok);
    cr_assert_eq(rec->verify->n_cases, 3);
    for (size_t i = 0; i < 3; i++) {
        const Crucible__CaseResult *c = rec->verify->cases[i];
        cr_assert(c->passed && c->inputs_unchanged && c->all_written && c->second_run_passed);
        cr_assert_eq(c->first_bad_index, -1);
    }
    const Crucible__ProfileResult *p = rec->profile;
    cr_assert_not_null(p);
    cr_assert_eq(p->n_cases, 1);
    const Crucible__BenchResult *b = p->cases[0];
    cr_assert_eq(b->case_index, 2);
    cr_assert_geq(b->samples, 10);
    cr_assert_geq(b->ref_samples, 10);
    cr_assert(b->median_us > 0 && b->min_us <= b->median_us && b->ref_median_us > 0);
    cr_assert(b->speedup > 0 && b->speedup_lo <= b->speedup && b->speedup <= b->speedup_hi,
              "speedup %g [%g, %g]", b->speedup, b->speedup_lo, b->speedup_hi);
    cr_assert_geq(b->verified_samples, 1);
    cr_assert_float_eq(p->speedup_geomean, b->speedup, 1e-9);
    cr_assert(p->cache_flushed);
    cr_assert_str_eq(p->ref_policy, "interleaved");
    s_done(rec, &r);
}

Test(runner, cached_reference_times_only_the_candidate)
{
    s_write("honest.c", s_honest);
    s_build("honest.c", "honest.so", NULL);
    /* A reference "measured" at 1000 us: far from the real one, so a speedup
     * that came from timing the reference could not pass for it. */
    double med[2] = {1000.0, 7.0}, rse[1] = {0.004};
    s_req_t q = {.candidate = "honest.so", .cached = med, .cached_rse = rse, .ncached = 1};
    Crucible__RewardRecord *rec;
    cr_proc_result_t r = s_run(&q, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_OK, "%s", S_MSG(rec));
    cr_assert(rec->verify && rec->verify->ok, "verification is unchanged");
    const Crucible__ProfileResult *p = rec->profile;
    cr_assert_not_null(p);
    cr_assert_str_eq(p->ref_policy, "cached");
    cr_assert_eq(p->n_cases, 1);
    const Crucible__BenchResult *b = p->cases[0];
    cr_assert_eq(b->ref_samples, 0);
    cr_assert_geq(b->samples, 10);
    cr_assert_geq(b->verified_samples, 1);
    cr_assert_float_eq(b->ref_median_us, 1000.0, 1e-12);
    cr_assert_float_eq(b->ref_rse, 0.004, 1e-12);
    cr_assert_gt(b->median_us, 0);
    double want = 1000.0 / b->median_us;
    cr_assert_float_eq(b->speedup, want, 1e-9 * want, "speedup %g, cached/median %g", b->speedup,
                       want);
    cr_assert(b->speedup_lo > 0 && b->speedup_lo <= b->speedup && b->speedup <= b->speedup_hi,
              "speedup %g [%g, %g]", b->speedup, b->speedup_lo, b->speedup_hi);
    cr_assert_float_eq(p->speedup_geomean, b->speedup, 1e-9 * want);
    s_done(rec, &r);

    /* Two medians for one bench case do not fit the task: it is measured. */
    q.ncached = 2;
    q.cached_rse = NULL;
    r = s_run(&q, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_OK, "%s", S_MSG(rec));
    cr_assert_str_eq(rec->profile->ref_policy, "interleaved");
    cr_assert_geq(rec->profile->cases[0]->ref_samples, 10);
    cr_assert_lt(rec->profile->cases[0]->ref_median_us, 1000.0);
    s_done(rec, &r);
}

Test(runner, verify_only_skips_timing)
{
    s_write("honest.c", s_honest);
    s_build("honest.c", "honest.so", NULL);
    s_req_t q = {.candidate = "honest.so", .verify_only = 1};
    Crucible__RewardRecord *rec;
    cr_proc_result_t r = s_run(&q, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_OK, "%s", S_MSG(rec));
    cr_assert_null(rec->profile);
    s_done(rec, &r);
}

Test(runner, wrong_candidate_is_incorrect)
{
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "wrong",
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ for (int i = 0; i < n; i++) { z[i] = alpha * x[i] - y[i]; y[i] *= 0.5f; } }\n",
        &r);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_INCORRECT, "%s", S_MSG(rec));
    cr_assert(strstr(rec->message, "case 0") && strstr(rec->message, "'z'") &&
                  strstr(rec->message, "expected"),
              "message: %s", rec->message);
    cr_assert_not(rec->verify->ok);
    cr_assert_gt(rec->verify->cases[0]->mismatches, 0);
    cr_assert_eq(rec->verify->cases[0]->first_bad_index, 0);
    cr_assert_null(rec->profile, "a wrong candidate is not timed");
    s_done(rec, &r);
}

Test(runner, input_mutation_is_a_hack)
{
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "mutate",
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] *= 0.5f; }\n"
        "  ((float *)x)[n - 1] = 0.0f; }\n",
        &r);
    /* `in` buffers are mapped read-only in the candidate's executor: the
     * store faults, and the judge names it */
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "%s", S_MSG(rec));
    cr_assert(s_has_flag(rec, "input_mutated"));
    cr_assert(strstr(rec->message, "'x'") && strstr(rec->message, "read-only"), "%s", rec->message);
    s_done(rec, &r);
}

Test(runner, unwritten_output_is_incorrect)
{
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "lazy",
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ for (int i = 0; i < n; i++) { if (i < n / 2) z[i] = alpha * x[i] + y[i];\n"
        "    y[i] *= 0.5f; } }\n",
        &r);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_INCORRECT, "%s", S_MSG(rec));
    cr_assert(s_has_flag(rec, "output_unwritten"));
    cr_assert_not(rec->verify->cases[0]->all_written);
    cr_assert(strstr(rec->message, "never written"), "%s", rec->message);
    s_done(rec, &r);
}

Test(runner, first_call_cache_fails_second_run)
{
    /* Computes once, then replays the remembered answer. */
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "cache_first",
        "#include <string.h>\n"
        "static float zc[8192], yc[8192]; static int have;\n"
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ if (have) { memcpy(z, zc, n * 4); memcpy(y, yc, n * 4); return; }\n"
        "  for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] *= 0.5f; }\n"
        "  memcpy(zc, z, n * 4); memcpy(yc, y, n * 4); have = 1; }\n",
        &r);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_INCORRECT, "%s", S_MSG(rec));
    cr_assert(s_has_flag(rec, "second_run_mismatch"));
    cr_assert_not(rec->verify->cases[0]->second_run_passed);
    s_done(rec, &r);
}

Test(runner, pointer_cache_is_caught)
{
    /* Remembers results per (x, n): passes both verification runs (new
     * addresses each time) and is caught when the timing pool rotates values
     * behind the same addresses. */
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "cache_ptr",
        "#include <stdlib.h>\n#include <string.h>\n"
        "struct e { const float *x; int n; float *z, *y; };\n"
        "static struct e tab[64]; static int ntab;\n"
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ for (int k = 0; k < ntab; k++) if (tab[k].x == x && tab[k].n == n) {\n"
        "      memcpy(z, tab[k].z, n * 4); memcpy(y, tab[k].y, n * 4); return; }\n"
        "  for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] *= 0.5f; }\n"
        "  if (ntab < 64) { struct e *e = &tab[ntab++]; e->x = x; e->n = n;\n"
        "    e->z = malloc(n * 4); e->y = malloc(n * 4);\n"
        "    memcpy(e->z, z, n * 4); memcpy(e->y, y, n * 4); } }\n",
        &r);
    cr_assert_not_null(rec, "no report: %s", r.err);
    cr_assert_neq(rec->status, CRUCIBLE__STATUS__STATUS_OK, "pointer cache passed");
    cr_assert(s_has_flag(rec, "timed_output_mismatch") ||
                  s_has_flag(rec, "second_run_mismatch"),
              "status %d: %s", rec->status, rec->message);
    s_done(rec, &r);
}

Test(runner, late_wrong_answers_are_caught_while_timing)
{
    /* Right for the 6 verification calls and the warm-up, wrong afterwards:
     * only the re-verified timed outputs (the last one always) can see it. */
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "late",
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ static int calls; int bad = ++calls > 12;\n"
        "  for (int i = 0; i < n; i++) { z[i] = bad ? 0.0f : alpha * x[i] + y[i];\n"
        "    y[i] *= 0.5f; } }\n",
        &r);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_INCORRECT, "%s", S_MSG(rec));
    cr_assert(s_has_flag(rec, "timed_output_mismatch"), "%s", rec->message);
    cr_assert(rec->verify->ok, "verification alone could not see it");
    cr_assert_not_null(rec->profile);
    cr_assert_geq(rec->profile->cases[0]->verified_samples, 1);
    s_done(rec, &r);
}

Test(runner, stdout_junk_cannot_forge_the_report)
{
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "noisy",
        "#include <stdio.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void hello(void)\n"
        "{ printf(\"loaded\\n\"); fflush(stdout); }\n"
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ static const char fake[] = {2, 0, 0, 0, 0x48, 1};\n"
        "  write(1, fake, sizeof fake); printf(\"junk %d\\n\", n); fflush(stdout);\n"
        "  for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] *= 0.5f; } }\n",
        &r);
    cr_assert_not_null(rec, "no clean report; stdout %zu bytes", r.out_len);
    cr_assert_eq(rec->status, CRUCIBLE__STATUS__STATUS_OK, "%s", rec->message);
    /* Thousands of timed calls each print: only the tail of stderr is kept. */
    cr_assert_not_null(memmem(r.err, r.err_len, "junk", 4), "prints go to stderr");
    s_done(rec, &r);
}

Test(runner, crash_is_reported_by_the_judge)
{
    /* the candidate's executor dies; the judge, another process, lives on
     * and says how */
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "crash",
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ *(volatile int *)0 = n; }\n",
        &r);
    cr_assert_not_null(rec, "ended: exited %d code %d signal %d", r.exited, r.exit_code,
                       r.signal);
    cr_assert_eq(rec->status, CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR, "%s", rec->message);
    cr_assert(strstr(rec->message, "signal 11"), "%s", rec->message);
    s_done(rec, &r);
}

Test(runner, background_thread_is_a_hack)
{
    /* The task sets no "threads": the link audit refuses pthread_create
     * before the object is loaded, ahead of the judge's thread count. */
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "thread",
        "#include <pthread.h>\n#include <unistd.h>\n"
        "static void *idle(void *a) { (void)a; for (;;) pause(); return 0; }\n"
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ static int started; if (!started) { pthread_t t;\n"
        "    pthread_create(&t, 0, idle, 0); pthread_detach(t); started = 1; }\n"
        "  for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] *= 0.5f; } }\n",
        &r);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "%s", S_MSG(rec));
    cr_assert(s_has_flag(rec, "link_audit"), "%s", S_MSG(rec));
    cr_assert(strstr(rec->message, "'pthread_create'"), "%s", rec->message);
    s_done(rec, &r);
}

Test(runner, link_audit_refuses_a_timer_before_loading)
{
    /* Its constructor would end the runner without a report if the object
     * were ever loaded: the audit must refuse it first. */
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "clock",
        "#include <time.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void loaded(void) { _exit(3); }\n"
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); (void)t;\n"
        "  for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] *= 0.5f; } }\n",
        &r);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "%s", S_MSG(rec));
    cr_assert(s_has_flag(rec, "link_audit"), "%s", S_MSG(rec));
    cr_assert_eq(rec->n_hack_flags, 1, "only the audit ran");
    cr_assert(strstr(rec->message, "link audit: imports 'clock_gettime'"), "%s", rec->message);
    cr_assert_null(rec->verify, "nothing was verified");
    cr_assert_null(rec->profile, "nothing was timed");
    cr_assert(r.exited && r.exit_code == 0, "the runner reported and exited 0");
    s_done(rec, &r);

    /* Bytes that are no shared object: a runtime error naming the problem. */
    s_write("garbage.so", "not an ELF object at all\n");
    s_req_t q = {.candidate = "garbage.so"};
    r = s_run(&q, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR, "%s", S_MSG(rec));
    cr_assert(strstr(rec->message, "link audit") && strstr(rec->message, "not an ELF file"), "%s",
              rec->message);
    s_done(rec, &r);
}

Test(runner, unloadable_candidate_is_runtime_error)
{
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_judge(
        "undef",
        "void cr_no_such_function(void);\n"
        "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
        "{ cr_no_such_function(); }\n",
        &r);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR, "%s", S_MSG(rec));
    cr_assert(strstr(rec->message, "cr_no_such_function"), "%s", rec->message);
    s_done(rec, &r);

    /* An object without the shim's entry point. */
    s_write("noentry.c", "int solve_not(void) { return 1; }\n");
    char *argv[] = {"cc", "-shared", "-fPIC", "-o", "noentry.so", "noentry.c", NULL};
    cr_proc_opts_t o = {.argv = argv, .cwd = s_dir, .out_cap = 4096, .err_cap = 4096,
                        .timeout_ms = 60000};
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert_eq(r.exit_code, 0);
    cr_proc_result_close(&r);
    s_req_t q = {.candidate = "noentry.so"};
    r = s_run(&q, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR, "%s", S_MSG(rec));
    cr_assert(strstr(rec->message, "cr_entry"), "%s", rec->message);
    s_done(rec, &r);
}

Test(runner, bad_requests_are_infra_errors)
{
    Crucible__RewardRecord *rec;
    /* Not a frame at all (ends early). */
    cr_proc_result_t r = s_run_raw("\x10\x00", 2, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_INFRA_ERROR);
    cr_assert(r.exited && r.exit_code == 0);
    s_done(rec, &r);
    /* A frame that is not a RunnerRequest. */
    r = s_run_raw("\x03\x00\x00\x00\xff\xff\xff", 7, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_INFRA_ERROR);
    s_done(rec, &r);
    /* Wrong seed length. */
    s_req_t q = {.candidate = "reference.so", .seed_len = 8};
    r = s_run(&q, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_INFRA_ERROR);
    cr_assert(strstr(rec->message, "seed"), "%s", rec->message);
    s_done(rec, &r);
    /* Missing reference object: infra, not the candidate's fault. */
    q = (s_req_t){.candidate = "reference.so", .baseline = "missing.so"};
    r = s_run(&q, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s", S_MSG(rec));
    s_done(rec, &r);
}

Test(runner, speedup_is_against_the_baseline)
{
    /* A baseline doing the work 30 times over: the honest candidate must come
     * out clearly faster against it. */
    s_write("honest.c", s_honest);
    s_build("honest.c", "honest.so", NULL);
    s_write("slow.c",
            "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
            "{ for (int r = 0; r < 30; r++) for (int i = 0; i < n; i++) {\n"
            "      volatile float v = alpha * x[i] + y[i]; z[i] = v; }\n"
            "  for (int i = 0; i < n; i++) y[i] *= 0.5f; }\n");
    s_build("slow.c", "slow.so", NULL);
    s_req_t q = {.candidate = "honest.so", .baseline = "slow.so"};
    Crucible__RewardRecord *rec;
    cr_proc_result_t r = s_run(&q, &rec);
    cr_assert_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_OK, "%s", S_MSG(rec));
    cr_assert_gt(rec->profile->cases[0]->speedup, 2.0, "speedup %g",
                 rec->profile->cases[0]->speedup);
    s_done(rec, &r);
}

/* --preload (supervisor.c note 5): a spare reads ahead the objects the next
 * request will likely name, and never loads them: their constructors are
 * client code, which runs only in the sandbox (docs/security.md). The
 * request then judges as ever, whether the object was the one it names,
 * another, or one that cannot be read, and the runner says which. Misuse is
 * a usage error. */
Test(runner, preloaded_objects_change_no_verdict)
{
    s_write("honest.c", s_honest);
    s_build("honest.c", "honest.so", NULL);
    s_build("honest.c", "other.so", NULL); /* an object the request does not name */
    /* a "reference" whose constructor leaves a mark where the runner, as
     * root and outside the sandbox, could write */
    char *mark = cr_file_join(s_dir, "ctor_ran");
    char ctor[1024];
    snprintf(ctor, sizeof ctor,
             "#include <fcntl.h>\n#include <unistd.h>\n%s\n"
             "__attribute__((constructor)) static void s_mark(void)\n"
             "{ int fd = open(\"%s\", O_CREAT | O_WRONLY, 0644); if (fd >= 0) close(fd); }\n",
             s_honest, mark);
    s_write("ctor.c", ctor);
    s_build("ctor.c", "ctor.so", NULL);
    char *ref = cr_file_join(s_dir, "reference.so"), *other = cr_file_join(s_dir, "ctor.so");
    struct {
        char *opts[6];
        const char *log;
    } runs[] = {
        {{"--prestart", "c", "--preload", ref, NULL}, "read ahead (loaded inside the sandbox"},
        {{"--prestart", "c", "--preload", other, "--preload", ref}, "read ahead (loaded inside"},
        {{"--prestart", "c", "--preload", "/nonexistent/ref.so", NULL}, "not read ahead"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        s_runner_opts = runs[i].opts;
        s_req_t q = {.candidate = "honest.so"};
        Crucible__RewardRecord *rec;
        cr_proc_result_t r = s_run(&q, &rec);
        s_runner_opts = NULL;
        cr_expect_eq(S_STATUS(rec), CRUCIBLE__STATUS__STATUS_OK, "run %zu: %s", i, S_MSG(rec));
        cr_expect(r.err && strstr(r.err, runs[i].log), "run %zu: no '%s' in: %s", i,
                  runs[i].log, r.err ? r.err : "");
        s_done(rec, &r);
        cr_expect_not(cr_file_exists(mark), "run %zu: a preloaded object's constructor ran "
                      "outside the sandbox", i);
    }
    free(mark);
    char *no_prestart[] = {RUNNER, "--preload", ref, NULL};
    char *three[] = {RUNNER, "--prestart", "c", "--preload", ref, "--preload", ref,
                     "--preload", ref, NULL};
    char **misuse[] = {no_prestart, three};
    for (size_t i = 0; i < 2; i++) {
        char **argv = misuse[i];
        cr_proc_opts_t o = {.argv = argv, .out_cap = 4096, .err_cap = 4096, .timeout_ms = 10000};
        cr_proc_result_t r;
        cr_assert_eq(cr_proc_run(&o, &r), 0);
        cr_expect(r.exited && r.exit_code == 2, "misuse %zu: exit %d", i, r.exit_code);
        cr_expect(r.err && strstr(r.err, "--preload"), "misuse %zu: %s", i, r.err ? r.err : "");
        cr_proc_result_close(&r);
    }
    free(ref);
    free(other);
}

Test(runner, help_and_version)
{
    char *argv[] = {RUNNER, "--version", NULL};
    cr_proc_opts_t o = {.argv = argv, .out_cap = 4096, .err_cap = 4096, .timeout_ms = 10000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited && r.exit_code == 0 && strstr(r.out, "crucible-runner"));
    cr_proc_result_close(&r);
    argv[1] = "--help";
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited && r.exit_code == 0 && strstr(r.out, "usage"));
    cr_proc_result_close(&r);
}

/* --measure-device (supervisor.c note 7): with a GPU, one line "copy_bw N"
 * with N > 0; without one (this machine, CI), exit 1 and a reason on
 * stderr, never a figure a worker would pass on. */
Test(runner, measure_device_prints_a_bandwidth_or_says_why_not)
{
    char *argv[] = {RUNNER, "--measure-device", NULL};
    cr_proc_opts_t o = {.argv = argv, .out_cap = 4096, .err_cap = 4096, .timeout_ms = 60000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited, "runner killed by signal %d", r.signal);
    double bw = 0;
    if (r.exit_code == 0) {
        cr_assert_eq(sscanf(r.out, "copy_bw %lf", &bw), 1, "stdout: %s", r.out);
        cr_assert_gt(bw, 1e9, "implausible bandwidth %g B/s", bw);
    } else {
        cr_assert_eq(r.exit_code, 1, "stderr: %s", r.err);
        cr_assert_str_empty(r.out, "a failed measurement printed: %s", r.out);
        cr_assert(strstr(r.err, "not measured") || strstr(r.err, "built without CUDA"),
                  "no reason given: %s", r.err);
    }
    cr_proc_result_close(&r);
}

/* ---------------------------------------------------------------- topo */

TestSuite(topo, .timeout = 30);

/* The calling thread's "Cpus_allowed_list" ("0-1", "3"). */
static void s_cpus_allowed(char *out, size_t len)
{
    FILE *f = fopen("/proc/thread-self/status", "r");
    cr_assert_not_null(f);
    char line[512];
    out[0] = '\0';
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18)) {
            char *v = line + 18;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = '\0';
            snprintf(out, len, "%s", v);
        }
    fclose(f);
    cr_assert(out[0], "no Cpus_allowed_list");
}

Test(topo, llc_model_and_pinning)
{
    uint64_t llc = 0;
    int rc = cr_topo_llc_bytes(&llc);
    cr_assert(rc == 0 || llc == CR_TOPO_LLC_FALLBACK, "rc %d llc %llu", rc,
              (unsigned long long)llc);
    cr_assert_gt(llc, 0);

    char model[256];
    cr_topo_cpu_model(model, sizeof model);
    cr_assert_gt(strlen(model), 0);
    cr_assert_neq(model[strlen(model) - 1], ' ', "trailing blanks: '%s'", model);

    /* the affinity is read back from /proc, as another process would see it */
    char before[256], now[256];
    s_cpus_allowed(before, sizeof before);
    int first = atoi(before);
    cr_assert_eq(cr_topo_pin_self(-1), 0);
    s_cpus_allowed(now, sizeof now);
    cr_assert_eq(atoi(now), first, "pinned to the first allowed cpu: '%s' of '%s'", now, before);
    cr_assert(strspn(now, "0123456789") == strlen(now), "one cpu only: '%s'", now);
    /* A cpu outside the allowed set is refused, and the pinning is kept. */
    cr_assert_eq(cr_topo_pin_self(first + 1), -EINVAL);
    cr_assert_eq(cr_topo_pin_self(1 << 20), -EINVAL);
    s_cpus_allowed(now, sizeof now);
    cr_assert_eq(atoi(now), first);
}

/* hwloc's first PCI device as a bus id ("0000:00:02.0"); 0 when found. */
static int s_first_pci(char *out, size_t len, char *cpus, size_t clen)
{
    hwloc_topology_t topo;
    cr_assert_eq(hwloc_topology_init(&topo), 0);
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    cr_assert_eq(hwloc_topology_load(topo), 0);
    hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL);
    hwloc_obj_t anc = o ? hwloc_get_non_io_ancestor_obj(topo, o) : NULL;
    if (o && anc) {
        snprintf(out, len, "%04x:%02x:%02x.%01x", o->attr->pcidev.domain, o->attr->pcidev.bus,
                 o->attr->pcidev.dev, o->attr->pcidev.func);
        hwloc_bitmap_list_snprintf(cpus, clen, anc->cpuset);
    }
    hwloc_topology_destroy(topo);
    return o && anc ? 0 : -1;
}

Test(topo, bind_to_pci)
{
    char before[256], now[256], desc[256] = "x";
    s_cpus_allowed(before, sizeof before);
    /* a device that does not exist, or a malformed id: an error, nothing moved */
    cr_assert_eq(cr_topo_bind_to_pci("0000:fe:1f.7", desc, sizeof desc), -ENODEV);
    cr_assert_str_eq(desc, "");
    cr_assert_eq(cr_topo_bind_to_pci("not a bus id", desc, sizeof desc), -EINVAL);
    cr_assert_eq(cr_topo_bind_to_pci(NULL, NULL, 0), -EINVAL);
    s_cpus_allowed(now, sizeof now);
    cr_assert_str_eq(now, before);

    char bus[64], cpus[256];
    if (s_first_pci(bus, sizeof bus, cpus, sizeof cpus) != 0)
        cr_skip_test("hwloc sees no PCI device on this machine");
    /* NVML writes an eight-digit domain: both spellings name the device */
    char nvml_bus[80];
    snprintf(nvml_bus, sizeof nvml_bus, "0000%s", bus);
    cr_assert_eq(cr_topo_bind_to_pci(nvml_bus, desc, sizeof desc), 0, "%s", nvml_bus);
    s_cpus_allowed(now, sizeof now);
    cr_assert_str_eq(now, cpus, "bound to '%s', %s is local to '%s'", now, bus, cpus);
    cr_assert(strncmp(desc, "CPUs ", 5) == 0 && strstr(desc, cpus) && strstr(desc, "NUMA"),
              "%s", desc);
    cr_assert_eq(cr_topo_bind_to_pci(bus + 5, desc, sizeof desc), 0, "%s", bus + 5);
    /* give the test process its cores back */
    hwloc_topology_t topo;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    cr_assert_eq(hwloc_bitmap_list_sscanf(set, before), 0);
    cr_assert_eq(hwloc_topology_init(&topo), 0);
    cr_assert_eq(hwloc_topology_load(topo), 0);
    cr_assert_eq(hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS), 0);
    hwloc_topology_destroy(topo);
    hwloc_bitmap_free(set);
}

/* The judge is not dumpable (runner.c main): a process of its uid (an
 * executor, when the worker is not root and every process shares its uid)
 * cannot open its descriptors through /proc/<pid>/fd (the report pipe, the
 * serving judge's request pipe) nor read its memory. Seen from outside: its
 * /proc/<pid>/fd belongs to root even when it runs as another uid. */
Test(runner, judge_is_not_dumpable)
{
    if (geteuid() != 0)
        cr_skip_test("needs root, to start the judge under another uid");
    int in[2];
    cr_assert_eq(pipe(in), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(in[0], 0);
        close(in[1]);
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(126);
        execl(RUNNER, RUNNER, "--serve", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    /* the runner's image first: between setuid and exec the child is not
     * dumpable whatever the runner does, and exec makes it dumpable again */
    char exe[64], path[64], want[PATH_MAX], got[PATH_MAX];
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    cr_assert_not_null(realpath(RUNNER, want));
    int running = 0;
    for (int i = 0; i < 500 && !running; i++) {
        ssize_t n = readlink(exe, got, sizeof got - 1);
        running = n > 0 && (got[n] = '\0', strcmp(got, want) == 0);
        if (!running)
            usleep(2000);
    }
    cr_assert(running, "the runner did not start");
    struct stat st;
    int owner = -1;
    for (int i = 0; i < 200 && owner != 0; i++) { /* it makes itself so at its start */
        if (stat(path, &st) == 0)
            owner = (int)st.st_uid;
        if (owner != 0)
            usleep(10000);
    }
    close(in[1]); /* stdin ends: the serving judge exits */
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert_eq(owner, 0, "/proc/<judge>/fd is uid %d's: a process of that uid opens the judge's "
                 "descriptors", owner);
}
