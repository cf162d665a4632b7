/* test_verifier.c — the verifier's own adversarial tests (docs/hacks.md #20: "an
 * error path counted as success").
 *
 * Every check of the CPU judge, the runner, the supervisor's report handling
 * and the reward formulas has a test that drives its FAILURE path with real
 * parts: candidates compiled by cc through the task's shim and judged by the
 * real crucible-runner, the real supervisor over the real runner, and a fake
 * runner (a shell script) that writes crafted report frames. Each test
 * asserts that the status is not OK and that every reward formula
 * (default@1, kevin@2, drkernel@2, applied with cr_reward_apply as the
 * coordinator does) gives exactly 0 for the record, even with a speedup of 3
 * put into its profile. Where a check could pass by accident, the honest
 * candidate under the same setup gets OK and a positive reward.
 *
 * Check                                               -> test
 * --------------------------------------------------- -> -------------------------------------
 * poisoned outputs: nothing written                   -> judge/output_never_written
 * poisoned outputs: one element left (size 1 too)     -> judge/output_partly_written
 * unwritten where the reference's value is NaN        -> special/unwritten_where_reference_is_nan
 * input hash before/after (verification)              -> judge/input_mutated_in_verification
 * value comparison: atol/rtol exceeded (and within)   -> judge/value_outside_tolerance
 * NaN in candidate where the reference is finite      -> judge/nan_where_reference_finite
 * Inf in candidate where the reference is finite      -> judge/inf_where_reference_finite
 * reference NaN: candidate must be NaN                -> special/finite_where_reference_is_nan
 * reference Inf: same sign, finite is wrong           -> special/wrong_infinity
 * reference NaN/Inf with an honest candidate          -> special/honest_candidate_passes
 * second output wrong (float64 NaN, int32 off by one) -> dtypes/second_output_checked
 * size 1 case wrong only                              -> judge/wrong_only_at_size_one
 * size 0 case                                         -> judge/size_zero_case_is_rejected
 * second run, new inputs at new addresses             -> judge/second_run_catches_replay
 * timed outputs re-verified                           -> judge/timed_output_verified
 * input hash during timing                            -> judge/input_mutated_while_timed
 * threads where the task allows none (audit/sandbox/
 *   thread count, whichever fires first)              -> judge/background_thread
 * threads allowed: parked is fine, late work is timed -> judge/background_thread_allowed_by_task
 * verify_only: verdict kept, timing skipped           -> judge/verify_only_still_verifies
 * cached reference medians absent/garbage             -> judge/cached_medians_garbage_ignored
 * cached medians never bypass verification            -> judge/cached_medians_do_not_skip_verify
 * reference leaves outputs unwritten (broken task)    -> judge/reference_unwritten_is_invalid_task
 * judge out of memory (INFRA, or OOM under sandbox)   -> judge/judge_out_of_memory_is_infra
 * candidate object missing / without cr_entry         -> judge/candidate_not_loadable
 * reference / baseline object missing                 -> judge/reference_missing_is_infra
 * undecodable request, bad seed, bad task             -> judge/bad_request_is_infra
 * runner: candidate crashes                           -> runner_exit/candidate_crash
 * runner: candidate exit(0) before the report         -> runner_exit/candidate_exit_zero
 * runner: candidate _exit(3)                          -> runner_exit/candidate_exit_nonzero
 * runner: candidate hangs                             -> runner_exit/candidate_hang
 * runner: candidate writes a frame to every pipe      -> runner_exit/candidate_forges_report
 * runner: forged frame, then _exit(0)                 -> runner_exit/candidate_forges_report_and_exits_zero
 * runner: honest candidate through the supervisor     -> runner_exit/honest_candidate_paid
 * report: none, exit 0                                -> report/exit_zero_without_report
 * report: truncated frame                             -> report/truncated
 * report: frame that is not a RewardRecord            -> report/undecodable
 * report: frame length over the cap                   -> report/oversized_length
 * report: OK, then the runner crashed                 -> report/ok_then_crash
 * report: OK, exit status nonzero (3, 86 sandbox)     -> report/ok_then_exit_nonzero
 * report: OK, then the runner hung                    -> report/ok_then_hang
 * report: OK, then the runner parked (paid at once)   -> report/ok_then_parked_is_taken_at_once
 * report: no status                                   -> report/no_status
 * report: status outside the enum                     -> report/unknown_status
 * report: a second frame / stray bytes after it       -> report/extra_bytes_after_report
 * report: OK with a hack flag                         -> report/ok_with_hack_flag
 * report: a well-formed OK report                     -> report/honest_report_paid
 * report: well-formed OK without the report token     -> report/report_without_token_is_forged
 * reward: every non-OK status, any speedup            -> reward/every_non_ok_status_scores_zero
 * reward: OK with any hack flag                       -> reward/ok_with_any_hack_flag_scores_zero
 * reward: OK with a broken speedup                    -> reward/broken_speedup_earns_no_speed
 */
#define _GNU_SOURCE
#include "compile.h"
#include "config.h"
#include "error.h"
#include "file.h"
#include "hash.h"
#include "proc.h"
#include "record.h"
#include "reward.h"
#include "supervisor.h"
#include "task.h"
#include "timeutil.h"
#include "runner_io.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define RUNNER CR_TEST_BIN_DIR "/crucible-runner"
#define S_OK CRUCIBLE__STATUS__STATUS_OK
#define S_INCORRECT CRUCIBLE__STATUS__STATUS_INCORRECT
#define S_HACK CRUCIBLE__STATUS__STATUS_HACK_DETECTED
#define S_INFRA CRUCIBLE__STATUS__STATUS_INFRA_ERROR
#define S_RUNTIME CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR
#define S_TIMEOUT CRUCIBLE__STATUS__STATUS_TIMEOUT

/* ------------------------------------------------------------- fixtures */

static char s_dir[64];        /* per-test temp dir */
static cr_task_t *s_task;     /* the task of the test */
static const char *s_json;    /* its text */

static void s_setup(void)
{
    cr_assert_eq(cr_hash_global_init(), 0);
    signal(SIGPIPE, SIG_IGN);
    snprintf(s_dir, sizeof s_dir, "/tmp/cr-test-verifier-XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
}

static void s_teardown(void)
{
    cr_task_destroy(&s_task);
    if (s_dir[0])
        cr_file_rmtree(s_dir);
    s_dir[0] = '\0';
}

static char *s_path(const char *name)
{
    char *p = cr_file_join(s_dir, name);
    cr_assert_not_null(p);
    return p;
}

static void s_write(const char *name, const void *data, size_t len, int mode)
{
    char *p = s_path(name);
    cr_assert_eq(cr_file_write_atomic(p, data, len), 0, "write %s", p);
    chmod(p, (mode_t)mode);
    free(p);
}

/* Builds name.c (text) through the task's shim into name.so. */
static void s_build(const char *name, const char *text)
{
    char src[128], so[128], shim_name[160];
    snprintf(src, sizeof src, "%s.c", name);
    snprintf(so, sizeof so, "%s.so", name);
    snprintf(shim_name, sizeof shim_name, "shim_%s.c", name);
    s_write(src, text, strlen(text), 0644);
    char *shim = cr_task_shim_source(s_task, src);
    cr_assert_not_null(shim);
    s_write(shim_name, shim, strlen(shim), 0644);
    free(shim);
    /* the worker's flags for C candidates (compile.c) */
    char *argv[] = {"cc", "-O2", "-std=gnu11", "-shared", "-fPIC", "-o", so, shim_name, "-lm",
                    NULL};
    cr_proc_opts_t o = {.argv = argv, .cwd = s_dir, .out_cap = 1 << 16, .err_cap = 1 << 16,
                        .merge_stderr = 1, .timeout_ms = 60000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited && r.exit_code == 0, "cc %s failed:\n%s", src, r.out);
    cr_proc_result_close(&r);
}

/* Makes json the task of the test and builds its reference. */
static void s_use_task(const char *json, const char *reference)
{
    char err[512];
    s_json = json;
    cr_assert_eq(cr_task_parse(json, "test task.json", &s_task, err, sizeof err), 0, "%s", err);
    s_build("reference", reference);
}

/* ------------------------------------------------------------- rewards */

static const char *const s_formulas[] = {"default@1", "kevin@2", "drkernel@2"};
#define S_NFORMULAS (sizeof s_formulas / sizeof s_formulas[0])

/* Gives rec a measured speedup of 3 (and keeps a larger one): a formula that
 * forgot to gate its speed term on the verdict would then pay for it. */
static void s_give_speedup(Crucible__RewardRecord *rec)
{
    if (!rec->profile) {
        rec->profile = malloc(sizeof *rec->profile);
        cr_assert_not_null(rec->profile);
        crucible__profile_result__init(rec->profile);
    }
    if (!(rec->profile->speedup_geomean >= 3.0))
        rec->profile->speedup_geomean = 3.0;
}

/* The failure path scored zero: status not OK, and every formula gives
 * exactly 0 (no reward at all for infrastructure outcomes). */
static void s_assert_zero(Crucible__RewardRecord *rec, const char *what)
{
    cr_assert_not_null(rec, "%s: no record", what);
    cr_assert_neq(rec->status, S_OK, "%s: the verifier passed it: %s", what, rec->message);
    cr_assert_neq(rec->status, CRUCIBLE__STATUS__STATUS_UNSPECIFIED, "%s: no status", what);
    s_give_speedup(rec);
    int infra = cr_status_is_infra(rec->status);
    for (size_t i = 0; i < S_NFORMULAS; i++) {
        cr_assert_eq(cr_reward_apply(rec, s_formulas[i]), 0, "%s", s_formulas[i]);
        cr_assert(rec->reward == 0.0, "%s: %s pays %g for %s (%s)", what, s_formulas[i],
                  rec->reward, cr_status_name(rec->status), rec->message);
        cr_assert_eq(rec->has_reward, !infra, "%s: %s has_reward %d for %s", what, s_formulas[i],
                     rec->has_reward, cr_status_name(rec->status));
        cr_assert(rec->components->correct == 0.0 && rec->components->speed == 0.0,
                  "%s: %s components %g + %g", what, s_formulas[i], rec->components->correct,
                  rec->components->speed);
    }
}

/* The reverse: OK, no hack flag, and every formula pays something. */
static void s_assert_paid(Crucible__RewardRecord *rec, const char *what)
{
    cr_assert_not_null(rec, "%s: no record", what);
    cr_assert_eq(rec->status, S_OK, "%s: %s: %s", what, cr_status_name(rec->status),
                 rec->message);
    cr_assert_eq(rec->n_hack_flags, 0, "%s: flag %s", what,
                 rec->n_hack_flags ? rec->hack_flags[0] : "");
    for (size_t i = 0; i < S_NFORMULAS; i++) {
        cr_assert_eq(cr_reward_apply(rec, s_formulas[i]), 0);
        cr_assert(rec->has_reward && rec->reward > 0, "%s: %s pays %g", what, s_formulas[i],
                  rec->reward);
    }
}

static int s_has_flag(const Crucible__RewardRecord *rec, const char *flag)
{
    for (size_t i = 0; rec && i < rec->n_hack_flags; i++)
        if (!strcmp(rec->hack_flags[i], flag))
            return 1;
    return 0;
}

static void s_free_rec(Crucible__RewardRecord **rec)
{
    if (*rec)
        crucible__reward_record__free_unpacked(*rec, NULL);
    *rec = NULL;
}

/* Expects rec to carry status (any when -1), flag and a message naming
 * needle (each when not NULL), and to be paid exactly 0; frees it. */
static void s_expect_zero(Crucible__RewardRecord *rec, int status, const char *flag,
                          const char *needle, const char *what)
{
    cr_assert_not_null(rec, "%s: no record", what);
    if (status >= 0)
        cr_assert_eq(rec->status, status, "%s: got %s: %s", what, cr_status_name(rec->status),
                     rec->message);
    if (flag)
        cr_assert(s_has_flag(rec, flag), "%s: no %s flag: %s", what, flag, rec->message);
    if (needle)
        cr_assert(strstr(rec->message, needle), "%s: message '%s' lacks '%s'", what,
                  rec->message, needle);
    s_assert_zero(rec, what);
    s_free_rec(&rec);
}

/* ------------------------------------------------------------- the runner */

typedef struct {
    const char *candidate;     /* .so in s_dir */
    const char *reference;     /* .so in s_dir; NULL = reference.so */
    const char *baseline;      /* .so in s_dir; NULL = none */
    const char *task_json;     /* NULL = the test's task */
    int verify_only;
    const double *cached;      /* cached reference medians, ncached of them */
    size_t ncached;
    size_t seed_len;           /* 0 = 32 */
    int64_t as_bytes;          /* the runner's RLIMIT_AS; 0 = none */
} s_req_t;

/* Runs the real runner on raw stdin bytes; returns its decoded report (NULL
 * when there is none). A report must be the only thing on stdout. */
static Crucible__RewardRecord *s_runner_raw(const void *in, size_t len, int64_t as_bytes,
                                            cr_proc_result_t *r)
{
    return cr_test_runner_raw(RUNNER, in, len, as_bytes, r);
}

static Crucible__RewardRecord *s_runner(const s_req_t *q)
{
    Crucible__RunnerRequest req = CRUCIBLE__RUNNER_REQUEST__INIT;
    Crucible__JobOptions opt = CRUCIBLE__JOB_OPTIONS__INIT;
    unsigned char seed[32];
    cr_random_bytes(seed, sizeof seed);
    char *cand = s_path(q->candidate);
    char *ref = s_path(q->reference ? q->reference : "reference.so");
    char *base = q->baseline ? s_path(q->baseline) : NULL;
    opt.time_budget_s = 0.1; /* per bench case: enough samples, quick tests */
    req.task_json = (char *)(q->task_json ? q->task_json : s_json);
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
    req.cached_ref_median_us = (double *)q->cached;
    size_t n = crucible__runner_request__get_packed_size(&req);
    uint8_t *buf = malloc(n + 4);
    cr_assert_not_null(buf);
    buf[0] = n & 0xff, buf[1] = (n >> 8) & 0xff, buf[2] = (n >> 16) & 0xff, buf[3] = n >> 24;
    crucible__runner_request__pack(&req, buf + 4);
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_runner_raw(buf, n + 4, q->as_bytes, &r);
    cr_assert(rec || q->as_bytes, "no report (exited %d code %d signal %d); stderr:\n%s",
              r.exited, r.exit_code, r.signal, r.err);
    cr_proc_result_close(&r);
    free(buf);
    free(cand);
    free(ref);
    free(base);
    return rec;
}

/* Builds candidate name from text and judges it with default options. */
static Crucible__RewardRecord *s_judge(const char *name, const char *text)
{
    s_build(name, text);
    char so[128];
    snprintf(so, sizeof so, "%s.so", name);
    s_req_t q = {.candidate = so};
    return s_runner(&q);
}

/* Judges a candidate that must fail: status want (with flag, if any), the
 * message naming needle (if any), and zero reward. */
static void s_expect_fail(const char *name, const char *text, int want, const char *flag,
                          const char *needle)
{
    s_expect_zero(s_judge(name, text), want, flag, needle, name);
}

static void s_expect_paid(const char *name, const char *text)
{
    Crucible__RewardRecord *rec = s_judge(name, text);
    s_assert_paid(rec, name);
    s_free_rec(&rec);
}

/* ------------------------------------------------------------- tasks */

/* x in, y inout (y *= 0.5), z out (z = alpha*x + y): every buffer role. */
static const char s_axpy_json[] =
    "{\"name\": \"axpy_v\", \"language\": \"c\",\n"
    " \"signature\": \"void solve(const float *x, float *y, float *z, int n, float alpha)\",\n"
    " \"params\": {\n"
    "   \"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"],\n"
    "          \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1}},\n"
    "   \"y\": {\"role\": \"inout\", \"dtype\": \"float32\", \"shape\": [\"n\"],\n"
    "          \"init\": {\"dist\": \"uniform\", \"low\": -2, \"high\": 2}},\n"
    "   \"z\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "   \"n\": {\"role\": \"size\"},\n"
    "   \"alpha\": {\"role\": \"scalar\", \"dtype\": \"float32\"}},\n"
    " \"cases\": [{\"n\": 1, \"alpha\": 0.5}, {\"n\": 37, \"alpha\": -1.25},\n"
    "           {\"n\": 1000, \"alpha\": 2.0}],\n"
    " \"bench_cases\": [2],\n"
    " \"tolerance\": {\"atol\": 1e-5, \"rtol\": 1e-5},\n"
    " \"reference\": \"reference.c\"}\n";

/* The same task where threads are allowed. */
static const char s_axpy_threads_json[] =
    "{\"name\": \"axpy_threads\", \"language\": \"c\", \"threads\": true,\n"
    " \"signature\": \"void solve(const float *x, float *y, float *z, int n, float alpha)\",\n"
    " \"params\": {\n"
    "   \"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "   \"y\": {\"role\": \"inout\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "   \"z\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "   \"n\": {\"role\": \"size\"},\n"
    "   \"alpha\": {\"role\": \"scalar\", \"dtype\": \"float32\"}},\n"
    " \"cases\": [{\"n\": 1, \"alpha\": 0.5}, {\"n\": 1000, \"alpha\": 2.0}],\n"
    " \"reference\": \"reference.c\"}\n";

static const char s_axpy_ref[] =
    "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
    "{ for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] = y[i] * 0.5f; } }\n";

static const char s_axpy_honest[] =
    "#include <stddef.h>\n"
    "void solve(const float *restrict x, float *restrict y, float *restrict z, int n,\n"
    "           float alpha)\n"
    "{ for (size_t i = 0; i < (size_t)n; i++) { float yi = y[i];\n"
    "    z[i] = alpha * x[i] + yi; y[i] = 0.5f * yi; } }\n";

/* Axpy candidates are this prologue, a body, and this epilogue. */
#define S_AXPY(body)                                                                     \
    "#include <math.h>\n#include <float.h>\n#include <string.h>\n"                      \
    "void solve(const float *x, float *y, float *z, int n, float alpha)\n{\n" body "\n}\n"
#define S_AXPY_LOOP(zexpr)                                                               \
    "  for (int i = 0; i < n; i++) { z[i] = " zexpr "; y[i] *= 0.5f; }"

/* A reference that yields NaN, +-Inf and finite values. */
static const char s_special_json[] =
    "{\"name\": \"special_v\", \"language\": \"c\",\n"
    " \"signature\": \"void solve(const float *x, float *z, int n)\",\n"
    " \"params\": {\n"
    "   \"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"],\n"
    "          \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1}},\n"
    "   \"z\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "   \"n\": {\"role\": \"size\"}},\n"
    " \"cases\": [{\"n\": 1}, {\"n\": 7}, {\"n\": 300}],\n"
    " \"tolerance\": {\"atol\": 1e-5, \"rtol\": 1e-5},\n"
    " \"reference\": \"reference.c\"}\n";

#define S_SPECIAL(nan_slot, inf_slot, fin_slot)                                          \
    "#include <math.h>\n#include <float.h>\n"                                            \
    "void solve(const float *x, float *z, int n)\n"                                      \
    "{ for (int i = 0; i < n; i++) {\n"                                                  \
    "    if (i % 3 == 0) { " nan_slot " }\n"                                             \
    "    else if (i % 3 == 1) { " inf_slot " }\n"                                        \
    "    else { " fin_slot " } } }\n"
#define S_NAN_SLOT "z[i] = NAN;"
#define S_INF_SLOT "z[i] = x[i] < 0 ? -INFINITY : INFINITY;"
#define S_FIN_SLOT "z[i] = 2.0f * x[i];"

/* Two outputs of other types: float64 and int32, compared exactly. */
static const char s_dtypes_json[] =
    "{\"name\": \"dtypes_v\", \"language\": \"c\",\n"
    " \"signature\": \"void solve(const double *a, double *d, int *k, int n)\",\n"
    " \"params\": {\n"
    "   \"a\": {\"role\": \"in\", \"dtype\": \"float64\", \"shape\": [\"n\"],\n"
    "          \"init\": {\"dist\": \"uniform\", \"low\": -10, \"high\": 10}},\n"
    "   \"d\": {\"role\": \"out\", \"dtype\": \"float64\", \"shape\": [\"n\"]},\n"
    "   \"k\": {\"role\": \"out\", \"dtype\": \"int32\", \"shape\": [\"n\"]},\n"
    "   \"n\": {\"role\": \"size\"}},\n"
    " \"cases\": [{\"n\": 5}, {\"n\": 64}],\n"
    " \"tolerance\": {\"atol\": 0, \"rtol\": 1e-12},\n"
    " \"reference\": \"reference.c\"}\n";

#define S_DTYPES(dexpr, kexpr)                                                           \
    "#include <math.h>\n"                                                                \
    "void solve(const double *a, double *d, int *k, int n)\n"                            \
    "{ for (int i = 0; i < n; i++) { d[i] = " dexpr "; k[i] = " kexpr "; } }\n"

/* ------------------------------------------------------------- judge checks */

TestSuite(judge, .init = s_setup, .fini = s_teardown, .timeout = 60);

Test(judge, output_never_written)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_expect_fail("nowrite", S_AXPY("  for (int i = 0; i < n; i++) y[i] *= 0.5f;"),
                  S_INCORRECT, "output_unwritten", "never written");
    /* the poison is the judge's, not zeros: a candidate writing 0 is compared */
    s_expect_fail("zeros", S_AXPY(S_AXPY_LOOP("0.0f")), S_INCORRECT, NULL, "differ");
    s_expect_paid("honest", s_axpy_honest);
}

Test(judge, output_partly_written)
{
    /* The last element is skipped: in the size-1 case that is all of it. */
    s_use_task(s_axpy_json, s_axpy_ref);
    s_expect_fail("skiplast",
                  S_AXPY("  for (int i = 0; i < n; i++) { if (i < n - 1) z[i] = alpha * x[i] + "
                         "y[i]; y[i] *= 0.5f; }"),
                  S_INCORRECT, "output_unwritten", "case 0");
}

Test(judge, input_mutated_in_verification)
{
    /* Right outputs, but x is changed after use. */
    s_use_task(s_axpy_json, s_axpy_ref);
    Crucible__RewardRecord *rec =
        s_judge("mutate", S_AXPY(S_AXPY_LOOP("alpha * x[i] + y[i]") " ((float *)x)[0] += 1;"));
    cr_assert_eq(rec->status, S_HACK, "%s", rec->message);
    cr_assert(s_has_flag(rec, "input_mutated"), "%s", rec->message);
    cr_assert(strstr(rec->message, "case 0") && strstr(rec->message, "'x'"), "%s", rec->message);
    cr_assert_not(rec->verify->cases[0]->inputs_unchanged, "caught by verification itself");
    cr_assert_null(rec->profile, "not timed");
    s_assert_zero(rec, "mutate");
    s_free_rec(&rec);
}

Test(judge, value_outside_tolerance)
{
    /* atol = rtol = 1e-5: 1e-3 too much is wrong, a relative 1e-7 is not. */
    s_use_task(s_axpy_json, s_axpy_ref);
    s_expect_fail("off", S_AXPY(S_AXPY_LOOP("alpha * x[i] + y[i] + 1e-3f")), S_INCORRECT, NULL,
                  "rtol");
    s_expect_paid("close", S_AXPY(S_AXPY_LOOP("(alpha * x[i] + y[i]) * (1.0f + 1e-7f)")));
}

Test(judge, nan_where_reference_finite)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_expect_fail("nan", S_AXPY(S_AXPY_LOOP("i == n - 1 ? NAN : alpha * x[i] + y[i]")),
                  S_INCORRECT, NULL, "got nan");
    /* a NaN that is not the judge's poison still is no answer */
    s_expect_fail("allnan", S_AXPY(S_AXPY_LOOP("-NAN")), S_INCORRECT, NULL, "differ");
}

Test(judge, inf_where_reference_finite)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_expect_fail("inf", S_AXPY(S_AXPY_LOOP("i == 0 ? INFINITY : alpha * x[i] + y[i]")),
                  S_INCORRECT, NULL, "got inf");
}

Test(judge, wrong_only_at_size_one)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_expect_fail("one",
                  S_AXPY(S_AXPY_LOOP("n == 1 ? alpha * x[i] - y[i] : alpha * x[i] + y[i]")),
                  S_INCORRECT, NULL, "case 0");
}

Test(judge, size_zero_case_is_rejected)
{
    /* A zero-length case would compare nothing: the task is refused and the
     * runner says INFRA_ERROR, for the honest candidate as for any other. */
    s_use_task(s_axpy_json, s_axpy_ref);
    s_build("honest", s_axpy_honest);
    char *json = strdup(s_axpy_json);
    cr_assert_not_null(json);
    char *one = strstr(json, "{\"n\": 1,");
    cr_assert_not_null(one);
    one[6] = '0';
    s_req_t q = {.candidate = "honest.so", .task_json = json};
    Crucible__RewardRecord *rec = s_runner(&q);
    cr_assert_eq(rec->status, S_INFRA, "%s", rec->message);
    cr_assert(strstr(rec->message, "cases[0].n"), "%s", rec->message);
    s_assert_zero(rec, "n = 0");
    s_free_rec(&rec);
    free(json);
}

Test(judge, second_run_catches_replay)
{
    /* Computes once per size, then replays what it remembered. */
    s_use_task(s_axpy_json, s_axpy_ref);
    s_expect_fail("replay",
                  S_AXPY("  static float zc[4096], yc[4096]; static int seen[4096];\n"
                         "  if (seen[n]) { memcpy(z, zc, n * 4); memcpy(y, yc, n * 4); return; }\n"
                         S_AXPY_LOOP("alpha * x[i] + y[i]")
                         "\n  memcpy(zc, z, n * 4); memcpy(yc, y, n * 4); seen[n] = 1;"),
                  S_INCORRECT, "second_run_mismatch", "second run");
}

Test(judge, timed_output_verified)
{
    /* Right for the 6 verification calls and the warm-up, then wrong. */
    s_use_task(s_axpy_json, s_axpy_ref);
    Crucible__RewardRecord *rec =
        s_judge("late", S_AXPY("  static int calls; int bad = ++calls > 12;\n"
                               S_AXPY_LOOP("bad ? alpha * x[i] : alpha * x[i] + y[i]")));
    cr_assert_eq(rec->status, S_INCORRECT, "%s", rec->message);
    cr_assert(s_has_flag(rec, "timed_output_mismatch"), "%s", rec->message);
    cr_assert(rec->verify && rec->verify->ok, "verification alone could not see it");
    s_assert_zero(rec, "late");
    s_free_rec(&rec);
}

Test(judge, input_mutated_while_timed)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    Crucible__RewardRecord *rec = s_judge(
        "latemut", S_AXPY(S_AXPY_LOOP("alpha * x[i] + y[i]")
                          "\n  static int calls; if (++calls > 12) ((float *)x)[n / 2] = 7;"));
    cr_assert_eq(rec->status, S_HACK, "%s", rec->message);
    cr_assert(s_has_flag(rec, "input_mutated"), "%s", rec->message);
    cr_assert(strstr(rec->message, "during timing"), "%s", rec->message);
    s_assert_zero(rec, "latemut");
    s_free_rec(&rec);
}

/* A thread that outlives the call it was started in. */
#define S_THREAD_CAND                                                                    \
    "#include <pthread.h>\n#include <unistd.h>\n"                                        \
    "static void *idle(void *a) { (void)a; for (;;) pause(); return 0; }\n"              \
    "void solve(const float *x, float *y, float *z, int n, float alpha)\n"               \
    "{ static int started; if (!started) { pthread_t t;\n"                               \
    "    pthread_create(&t, 0, idle, 0); pthread_detach(t); started = 1; }\n"            \
    "  for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] *= 0.5f; } }\n"

Test(judge, background_thread)
{
    /* Where the task allows no threads, the link audit (pthread_create),
     * the sandbox (clone) and the judge's thread count each refuse them;
     * whichever fires first, it is a hack that scores nothing. */
    s_use_task(s_axpy_json, s_axpy_ref);
    Crucible__RewardRecord *rec = s_judge("thread", S_THREAD_CAND);
    cr_assert_eq(rec->status, S_HACK, "%s", rec->message);
    cr_assert(s_has_flag(rec, "link_audit") || s_has_flag(rec, "sandbox_violation") ||
                  s_has_flag(rec, "background_thread"),
              "%s", rec->message);
    s_assert_zero(rec, "thread");
    s_free_rec(&rec);
}

#define S_AXPY_PROLOGUE_THREADS_LATE                                                     \
    "#include <pthread.h>\n"                                                              \
    "static void *spin(void *a) /* tens of ms of CPU (no clock: audited) */\n"           \
    "{ (void)a; for (volatile long k = 0; k < 50000000L; k++) ; return 0; }\n"            \
    "void solve(const float *x, float *y, float *z, int n, float alpha)\n"                \
    "{ for (int i = 0; i < n; i++) { z[i] = alpha * x[i] + y[i]; y[i] *= 0.5f; }\n"       \
    "  pthread_t t; if (pthread_create(&t, 0, spin, 0) == 0) pthread_detach(t); }\n"

Test(judge, background_thread_allowed_by_task)
{
    /* Where threads are allowed, a parked one is fine (the reverse), and
     * one still working after the call returned is work the timer missed. */
    s_use_task(s_axpy_threads_json, s_axpy_ref);
    s_expect_paid("thread", S_THREAD_CAND);
    /* A thread still spinning when the call returns is stopped with the
     * executor and spins on inside later calls' windows: timed, never free
     * (docs/judge.md §2). */
    s_build("late", S_AXPY_PROLOGUE_THREADS_LATE);
    s_req_t q = {.candidate = "late.so"};
    Crucible__RewardRecord *rec = s_runner(&q);
    cr_assert_not_null(rec);
    cr_assert_eq(rec->status, S_OK, "late: %s: %s", cr_status_name(rec->status), rec->message);
    cr_assert_not_null(rec->profile);
    cr_assert_lt(rec->profile->speedup_geomean, 0.5,
                 "late: the spinning thread's work was not timed (speedup %g)",
                 rec->profile->speedup_geomean);
    s_free_rec(&rec);
}

Test(judge, verify_only_still_verifies)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_build("wrong", S_AXPY(S_AXPY_LOOP("alpha * x[i] - y[i]")));
    s_build("honest", s_axpy_honest);
    s_req_t q = {.candidate = "wrong.so", .verify_only = 1};
    Crucible__RewardRecord *rec = s_runner(&q);
    cr_assert_eq(rec->status, S_INCORRECT, "%s", rec->message);
    s_assert_zero(rec, "verify_only wrong");
    s_free_rec(&rec);
    q.candidate = "honest.so";
    rec = s_runner(&q);
    cr_assert_null(rec->profile, "verify_only times nothing");
    s_assert_paid(rec, "verify_only honest");
    s_free_rec(&rec);
}

Test(judge, cached_medians_garbage_ignored)
{
    /* Medians that do not fit (NaN, Inf, 0, negative, too many) must not
     * stand in for the reference: it is measured, so no absurd speedup. */
    s_use_task(s_axpy_json, s_axpy_ref);
    s_build("honest", s_axpy_honest);
    const double bad[][2] = {{NAN, 0}, {INFINITY, 0}, {0, 0}, {-5, 0}, {1e9, 1e9}};
    const size_t nbad[] = {1, 1, 1, 1, 2};
    for (size_t i = 0; i < sizeof nbad / sizeof nbad[0]; i++) {
        s_req_t q = {.candidate = "honest.so", .cached = bad[i], .ncached = nbad[i]};
        Crucible__RewardRecord *rec = s_runner(&q);
        cr_assert_eq(rec->status, S_OK, "%zu: %s", i, rec->message);
        cr_assert_not_null(rec->profile);
        cr_assert_str_eq(rec->profile->ref_policy, "interleaved", "garbage %zu was used", i);
        cr_assert_geq(rec->profile->cases[0]->ref_samples, 10, "%zu", i);
        cr_assert(isfinite(rec->profile->speedup_geomean) &&
                      rec->profile->speedup_geomean < 1e3,
                  "%zu: speedup %g", i, rec->profile->speedup_geomean);
        s_free_rec(&rec);
    }
}

Test(judge, cached_medians_do_not_skip_verify)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_build("wrong", S_AXPY(S_AXPY_LOOP("alpha * x[i] - y[i]")));
    const double med[1] = {1e6}; /* a huge cached reference time: a huge speedup */
    s_req_t q = {.candidate = "wrong.so", .cached = med, .ncached = 1};
    Crucible__RewardRecord *rec = s_runner(&q);
    cr_assert_eq(rec->status, S_INCORRECT, "%s", rec->message);
    s_assert_zero(rec, "cached wrong");
    s_free_rec(&rec);
}

Test(judge, reference_unwritten_is_invalid_task)
{
    /* A broken reference that skips its last element. If the judge took its
     * poisoned output as the truth, a candidate with the same bug would pass
     * and the right one fail: the task is broken, for both. */
    s_use_task(s_axpy_json,
               "void solve(const float *x, float *y, float *z, int n, float alpha)\n"
               "{ for (int i = 0; i < n; i++) { if (i < n - 1) z[i] = alpha * x[i] + y[i];\n"
               "    y[i] *= 0.5f; } }\n");
    const char *names[] = {"samebug", "honest"};
    const char *texts[] = {
        S_AXPY("  for (int i = 0; i < n; i++) { if (i < n - 1) z[i] = alpha * x[i] + y[i];\n"
               "    y[i] *= 0.5f; }"),
        s_axpy_honest};
    for (int i = 0; i < 2; i++) {
        Crucible__RewardRecord *rec = s_judge(names[i], texts[i]);
        cr_assert_eq(rec->status, CRUCIBLE__STATUS__STATUS_INVALID_TASK, "%s: %s: %s", names[i],
                     cr_status_name(rec->status),
                     rec->message);
        cr_assert(strstr(rec->message, "reference"), "%s", rec->message);
        s_assert_zero(rec, names[i]);
        s_free_rec(&rec);
    }
}

Test(judge, judge_out_of_memory_is_infra)
{
    /* One 64 Mi-element case (3 x 256 MiB per buffer set) under a 1 GiB
     * address-space limit: the judge's own buffers cannot all exist. */
    static const char json[] =
        "{\"name\": \"big_v\", \"language\": \"c\",\n"
        " \"signature\": \"void solve(const float *x, float *y, float *z, int n, float alpha)\",\n"
        " \"params\": {\n"
        "   \"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
        "   \"y\": {\"role\": \"inout\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
        "   \"z\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
        "   \"n\": {\"role\": \"size\"},\n"
        "   \"alpha\": {\"role\": \"scalar\", \"dtype\": \"float32\"}},\n"
        " \"cases\": [{\"n\": 67108864, \"alpha\": 2.0}],\n"
        " \"reference\": \"reference.c\"}\n";
    s_use_task(json, s_axpy_ref);
    s_build("honest", s_axpy_honest);
    s_req_t q = {.candidate = "honest.so", .as_bytes = 1ll << 30};
    Crucible__RewardRecord *rec = s_runner(&q);
    cr_assert_not_null(rec, "the runner died instead of reporting");
    /* INFRA_ERROR, or OOM where the runner's sandbox caps the address space
     * (runner.c blames an allocation failure under its cap on the candidate) */
    cr_assert(rec->status == S_INFRA || rec->status == CRUCIBLE__STATUS__STATUS_OOM, "%s: %s",
              cr_status_name(rec->status), rec->message);
    cr_assert(strstr(rec->message, "memory"), "%s", rec->message);
    s_assert_zero(rec, "oom");
    s_free_rec(&rec);
}

Test(judge, candidate_not_loadable)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_req_t q = {.candidate = "missing.so"};
    Crucible__RewardRecord *rec = s_runner(&q);
    cr_assert_eq(rec->status, S_RUNTIME, "%s", rec->message);
    s_assert_zero(rec, "missing candidate");
    s_free_rec(&rec);

    static const char noentry[] = "int solve_not(void) { return 1; }\n";
    s_write("noentry.c", noentry, sizeof noentry - 1, 0644);
    char *argv[] = {"cc", "-shared", "-fPIC", "-o", "noentry.so", "noentry.c", NULL};
    cr_proc_opts_t o = {.argv = argv, .cwd = s_dir, .out_cap = 4096, .err_cap = 4096,
                        .timeout_ms = 60000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited && r.exit_code == 0);
    cr_proc_result_close(&r);
    q.candidate = "noentry.so";
    rec = s_runner(&q);
    cr_assert_eq(rec->status, S_RUNTIME, "%s", rec->message);
    cr_assert(strstr(rec->message, "cr_entry"), "%s", rec->message);
    s_assert_zero(rec, "no entry");
    s_free_rec(&rec);
}

Test(judge, reference_missing_is_infra)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_build("honest", s_axpy_honest);
    s_req_t q = {.candidate = "honest.so", .reference = "missing.so"};
    Crucible__RewardRecord *rec = s_runner(&q);
    cr_assert_eq(rec->status, S_INFRA, "%s", rec->message);
    s_assert_zero(rec, "missing reference");
    s_free_rec(&rec);
    q = (s_req_t){.candidate = "honest.so", .baseline = "missing.so"};
    rec = s_runner(&q);
    cr_assert_eq(rec->status, S_INFRA, "%s", rec->message);
    s_assert_zero(rec, "missing baseline");
    s_free_rec(&rec);
}

Test(judge, bad_request_is_infra)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_build("honest", s_axpy_honest);
    cr_proc_result_t r;
    Crucible__RewardRecord *rec = s_runner_raw("\x10\x00", 2, 0, &r); /* ends early */
    cr_proc_result_close(&r);
    s_assert_zero(rec, "short request");
    cr_assert_eq(rec->status, S_INFRA);
    s_free_rec(&rec);
    rec = s_runner_raw("\x03\x00\x00\x00\xff\xff\xff", 7, 0, &r); /* not a RunnerRequest */
    cr_proc_result_close(&r);
    cr_assert_eq(rec->status, S_INFRA);
    s_assert_zero(rec, "undecodable request");
    s_free_rec(&rec);
    s_req_t q = {.candidate = "honest.so", .seed_len = 8};
    rec = s_runner(&q);
    cr_assert_eq(rec->status, S_INFRA, "%s", rec->message);
    s_assert_zero(rec, "short seed");
    s_free_rec(&rec);
    q = (s_req_t){.candidate = "honest.so", .task_json = "{\"name\": \"x\"}"};
    rec = s_runner(&q);
    cr_assert_eq(rec->status, S_INFRA, "%s", rec->message);
    s_assert_zero(rec, "bad task");
    s_free_rec(&rec);
}

/* ------------------------------------------------------------- special values */

TestSuite(special, .init = s_setup, .fini = s_teardown, .timeout = 60);

Test(special, honest_candidate_passes)
{
    s_use_task(s_special_json, S_SPECIAL(S_NAN_SLOT, S_INF_SLOT, S_FIN_SLOT));
    s_expect_paid("honest", S_SPECIAL(S_NAN_SLOT, S_INF_SLOT, S_FIN_SLOT));
}

Test(special, unwritten_where_reference_is_nan)
{
    /* Poison is a NaN too: only the all-written check tells "left alone"
     * from "computed NaN". In the size-1 case the NaN slot is all there is. */
    s_use_task(s_special_json, S_SPECIAL(S_NAN_SLOT, S_INF_SLOT, S_FIN_SLOT));
    s_expect_fail("skipnan", S_SPECIAL("", S_INF_SLOT, S_FIN_SLOT), S_INCORRECT,
                  "output_unwritten", "never written");
}

Test(special, finite_where_reference_is_nan)
{
    s_use_task(s_special_json, S_SPECIAL(S_NAN_SLOT, S_INF_SLOT, S_FIN_SLOT));
    s_expect_fail("zeronan", S_SPECIAL("z[i] = 0;", S_INF_SLOT, S_FIN_SLOT), S_INCORRECT, NULL,
                  "expected nan");
}

Test(special, wrong_infinity)
{
    s_use_task(s_special_json, S_SPECIAL(S_NAN_SLOT, S_INF_SLOT, S_FIN_SLOT));
    s_expect_fail("plusinf", S_SPECIAL(S_NAN_SLOT, "z[i] = INFINITY;", S_FIN_SLOT), S_INCORRECT,
                  NULL, "differ");
    s_expect_fail("fltmax",
                  S_SPECIAL(S_NAN_SLOT, "z[i] = x[i] < 0 ? -FLT_MAX : FLT_MAX;", S_FIN_SLOT),
                  S_INCORRECT, NULL, "differ");
    s_expect_fail("naninf", S_SPECIAL(S_NAN_SLOT, "z[i] = NAN;", S_FIN_SLOT), S_INCORRECT, NULL,
                  "differ");
}

TestSuite(dtypes, .init = s_setup, .fini = s_teardown, .timeout = 60);

Test(dtypes, second_output_checked)
{
    s_use_task(s_dtypes_json, S_DTYPES("a[i] * 3.0", "(int)(a[i] * 100.0)"));
    s_expect_fail("intoff", S_DTYPES("a[i] * 3.0", "(int)(a[i] * 100.0) + (i == n - 1)"),
                  S_INCORRECT, NULL, "'k'");
    s_expect_fail("dnan", S_DTYPES("i == 3 ? NAN : a[i] * 3.0", "(int)(a[i] * 100.0)"),
                  S_INCORRECT, NULL, "'d'");
    s_expect_fail("knowrite", "void solve(const double *a, double *d, int *k, int n)\n"
                              "{ for (int i = 0; i < n; i++) d[i] = a[i] * 3.0; }\n",
                  S_INCORRECT, "output_unwritten", "'k'");
    s_expect_paid("honest", S_DTYPES("a[i] * 3.0", "(int)(a[i] * 100.0)"));
}

/* ------------------------------------------------------------- supervisor */

/* Finished jobs, handed over by the supervisor thread. */
static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_cv = PTHREAD_COND_INITIALIZER;
static cr_wjob_t *s_done;

static void s_deliver(cr_wjob_t *j, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&s_mu);
    j->next = s_done;
    s_done = j;
    pthread_cond_broadcast(&s_cv);
    pthread_mutex_unlock(&s_mu);
}

static const cr_ident_t s_ident = {"wverifier", "testhost", "cpu:test"};

static void s_config(cr_config_t *c, const char *runner)
{
    memset(c, 0, sizeof *c);
    snprintf(c->work_dir, sizeof c->work_dir, "%s/work", s_dir);
    snprintf(c->runner, sizeof c->runner, "%s", runner);
    snprintf(c->cc, sizeof c->cc, "cc");
    snprintf(c->backends, sizeof c->backends, "c");
    snprintf(c->worker_id, sizeof c->worker_id, "wverifier");
    snprintf(c->clock_policy, sizeof c->clock_policy, "observe");
    c->cpu = -1;
    c->run_timeout_s = 30;
    c->time_budget_s = 0.1;
}

/* Runs one compiled-looking job (candidate/reference paths in s_dir)
 * through a supervisor over runner; returns the final record (caller owns). */
static Crucible__RewardRecord *s_supervise(const char *runner, const char *cand,
                                           double run_timeout_s)
{
    cr_config_t cfg;
    s_config(&cfg, runner);
    cr_supervisor_t *sup = cr_supervisor_new(&cfg, &s_ident, s_deliver, NULL);
    cr_assert_not_null(sup);

    Crucible__Job job = CRUCIBLE__JOB__INIT;
    Crucible__JobSpec spec = CRUCIBLE__JOB_SPEC__INIT;
    Crucible__TaskBundle tb = CRUCIBLE__TASK_BUNDLE__INIT;
    Crucible__JobOptions op = CRUCIBLE__JOB_OPTIONS__INIT;
    job.batch_id = "b1";
    job.attempt = 1;
    spec.job_id = "j1";
    spec.task = "axpy_v";
    spec.source = "";
    tb.name = "axpy_v";
    tb.task_json = (char *)s_json;
    tb.reference_source = (char *)s_axpy_ref;
    op.run_timeout_s = run_timeout_s;
    op.time_budget_s = 0.1;
    job.spec = &spec;
    job.task = &tb;
    job.options = &op;
    cr_wjob_t *j = cr_wjob_new(&job);
    cr_assert_not_null(j);
    j->so[CR_SO_CANDIDATE] = s_path(cand);
    j->so[CR_SO_REFERENCE] = s_path("reference.so");
    j->compile_ok = 1;
    j->t_compiled = cr_time_now_ms();
    cr_supervisor_submit(sup, j);

    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    pthread_mutex_lock(&s_mu);
    while (!s_done && pthread_cond_timedwait(&s_cv, &s_mu, &dl) == 0)
        ;
    j = s_done;
    s_done = NULL;
    pthread_mutex_unlock(&s_mu);
    cr_assert_not_null(j, "the supervisor delivered nothing");
    cr_supervisor_destroy(&sup);
    Crucible__RewardRecord *rec = j->rec;
    j->rec = NULL;
    cr_assert_not_null(rec, "delivered without a record: %s", j->message);
    cr_wjob_destroy(&j);
    return rec;
}

/* A stand-in runner: takes its whole request, prints report.bin, then does
 * what the file "mode" says. */
static char *s_fake_runner(void)
{
    char text[1024];
    snprintf(text, sizeof text,
             "#!/bin/sh\n"
             "[ \"$(cat '%s/mode')\" = notoken ] || head -c 16\n" /* the report token */
             "cat >/dev/null\n"
             "cat '%s/report.bin'\n"
             "case \"$(cat '%s/mode')\" in\n"
             "exit3) exit 3 ;;\n"
             "exit86) exit 86 ;;\n"
             "segv) kill -SEGV $$ ;;\n"
             "hang) exec sleep 30 ;;\n"
             "park) exec >&-; sleep 30 ;;\n" /* the real runner's way: asleep after the report */
             "esac\n"
             "exit 0\n",
             s_dir, s_dir, s_dir);
    s_write("fake_runner.sh", text, strlen(text), 0755);
    return s_path("fake_runner.sh");
}

/* Appends rec as one frame to buf (at *len). */
static void s_frame(uint8_t *buf, size_t cap, size_t *len, const Crucible__RewardRecord *rec)
{
    size_t n = crucible__reward_record__get_packed_size(rec);
    cr_assert_leq(*len + 4 + n, cap);
    uint8_t *b = buf + *len;
    b[0] = n & 0xff, b[1] = (n >> 8) & 0xff, b[2] = (n >> 16) & 0xff, b[3] = n >> 24;
    crucible__reward_record__pack(rec, b + 4);
    *len += 4 + n;
}

/* A report as good as a runner can write (OK, verified, 3x faster) in rec,
 * and room for the bytes the fake runner prints (s_frame into buf). */
typedef struct {
    Crucible__RewardRecord rec;
    Crucible__VerifyResult v;
    Crucible__ProfileResult p;
    uint8_t buf[8192];
    size_t len;
} s_report_t;

static void s_good_report(s_report_t *r)
{
    crucible__reward_record__init(&r->rec);
    crucible__verify_result__init(&r->v);
    crucible__profile_result__init(&r->p);
    r->v.ok = 1;
    r->p.speedup_geomean = 3.0;
    r->rec.status = S_OK;
    r->rec.message = "";
    r->rec.verify = &r->v;
    r->rec.profile = &r->p;
    r->len = 0;
}

/* Judges what the fake runner prints (report, len bytes) with mode. */
static Crucible__RewardRecord *s_fake(const char *mode, const void *report, size_t len,
                                      double run_timeout_s)
{
    s_write("mode", mode, strlen(mode), 0644);
    s_write("report.bin", report, len, 0644);
    char *runner = s_fake_runner();
    Crucible__RewardRecord *rec = s_supervise(runner, "candidate.so", run_timeout_s);
    free(runner);
    return rec;
}

static void s_fake_task(void)
{
    char err[512];
    s_json = s_axpy_json;
    cr_assert_eq(cr_task_parse(s_json, "test task.json", &s_task, err, sizeof err), 0, "%s",
                 err);
}

TestSuite(report, .init = s_setup, .fini = s_teardown, .timeout = 60);

/* An OK report followed by how the fake runner ends. */
static Crucible__RewardRecord *s_ok_then(const char *mode, double run_timeout_s)
{
    static s_report_t r;
    s_good_report(&r);
    s_frame(r.buf, sizeof r.buf, &r.len, &r.rec);
    return s_fake(mode, r.buf, r.len, run_timeout_s);
}

Test(report, honest_report_paid)
{
    s_fake_task();
    Crucible__RewardRecord *rec = s_ok_then("ok", 10);
    s_assert_paid(rec, "well-formed report");
    s_free_rec(&rec);
}

Test(report, exit_zero_without_report)
{
    s_fake_task();
    s_expect_zero(s_fake("ok", "", 0, 10), S_RUNTIME, NULL, NULL, "no report");
}

Test(report, truncated)
{
    s_fake_task();
    static s_report_t r;
    s_good_report(&r);
    s_frame(r.buf, sizeof r.buf, &r.len, &r.rec);
    s_expect_zero(s_fake("ok", r.buf, r.len - 1, 10), S_INFRA, NULL, NULL, "truncated");
    /* not even a length */
    s_expect_zero(s_fake("ok", r.buf, 3, 10), S_INFRA, NULL, NULL, "three bytes");
}

Test(report, undecodable)
{
    s_fake_task();
    static const uint8_t junk[] = {5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff};
    s_expect_zero(s_fake("ok", junk, sizeof junk, 10), S_INFRA, NULL, NULL, "undecodable");
}

Test(report, oversized_length)
{
    /* 0x7fffffff bytes announced, an OK status after it. */
    s_fake_task();
    static const uint8_t big[] = {0xff, 0xff, 0xff, 0x7f, 0x48, 1};
    s_expect_zero(s_fake("ok", big, sizeof big, 10), S_INFRA, NULL, NULL, "oversized");
}

Test(report, ok_then_crash)
{
    s_fake_task();
    Crucible__RewardRecord *rec = s_ok_then("segv", 10);
    cr_assert_eq(rec->status, S_RUNTIME, "%s", rec->message);
    cr_assert(strstr(rec->message, "signal 11"), "%s", rec->message);
    s_assert_zero(rec, "OK then SIGSEGV");
    s_free_rec(&rec);
}

/* A runner asleep behind a complete report is done (supervisor.c note 6):
 * the report counts, and the job does not wait for the runner to end. */
Test(report, ok_then_parked_is_taken_at_once)
{
    s_fake_task();
    int64_t t0 = cr_time_mono_ns();
    Crucible__RewardRecord *rec = s_ok_then("park", 60);
    double s = (double)(cr_time_mono_ns() - t0) / 1e9;
    cr_assert_eq(rec->status, S_OK, "%s", rec->message);
    cr_assert_lt(s, 10.0, "the job waited %.1f s for a parked runner (it sleeps 30 s)", s);
    s_free_rec(&rec);
}

Test(report, ok_then_exit_nonzero)
{
    s_fake_task();
    s_expect_zero(s_ok_then("exit3", 10), S_RUNTIME, NULL, NULL, "OK then exit 3");
    /* the sandbox's exit code (sandbox.h: 86) is never a pass either */
    s_expect_zero(s_ok_then("exit86", 10), S_HACK, "sandbox_violation", NULL, "OK then exit 86");
}

Test(report, ok_then_hang)
{
    s_fake_task();
    s_expect_zero(s_ok_then("hang", 1.0), S_TIMEOUT, NULL, NULL, "OK then hang");
}

Test(report, no_status)
{
    s_fake_task();
    static s_report_t r;
    s_good_report(&r);
    r.rec.status = CRUCIBLE__STATUS__STATUS_UNSPECIFIED;
    s_frame(r.buf, sizeof r.buf, &r.len, &r.rec);
    s_expect_zero(s_fake("ok", r.buf, r.len, 10), S_INFRA, NULL, NULL, "no status");
}

Test(report, unknown_status)
{
    s_fake_task();
    static s_report_t r;
    s_good_report(&r);
    r.rec.status = (Crucible__Status)99;
    s_frame(r.buf, sizeof r.buf, &r.len, &r.rec);
    Crucible__RewardRecord *rec = s_fake("ok", r.buf, r.len, 10);
    s_assert_zero(rec, "status 99");
    s_free_rec(&rec);
}

Test(report, extra_bytes_after_report)
{
    /* A runner writes exactly one frame. Whatever else is on the channel was
     * written by someone else (the candidate, which shares the runner's
     * process): a forged OK ahead of the real verdict, or bytes after it. */
    s_fake_task();
    static s_report_t r;
    Crucible__RewardRecord bad = CRUCIBLE__REWARD_RECORD__INIT;
    s_good_report(&r);
    bad.status = S_INCORRECT;
    bad.message = "case 0: output 'z' differs";
    s_frame(r.buf, sizeof r.buf, &r.len, &r.rec);
    s_frame(r.buf, sizeof r.buf, &r.len, &bad);
    Crucible__RewardRecord *rec = s_fake("ok", r.buf, r.len, 10);
    cr_assert_eq(rec->status, S_HACK, "%s", rec->message);
    cr_assert(s_has_flag(rec, "report_forged"), "%s", rec->message);
    cr_assert_null(rec->profile, "nothing of the forged report is kept");
    s_assert_zero(rec, "forged OK, then the real INCORRECT");
    s_free_rec(&rec);

    r.len = 0;
    s_frame(r.buf, sizeof r.buf, &r.len, &r.rec);
    memcpy(r.buf + r.len, "junk", 4);
    rec = s_fake("ok", r.buf, r.len + 4, 10);
    cr_assert_eq(rec->status, S_HACK, "%s", rec->message);
    cr_assert(strstr(rec->message, "4 bytes"), "%s", rec->message);
    s_assert_zero(rec, "OK and stray bytes");
    s_free_rec(&rec);
}

Test(report, ok_with_hack_flag)
{
    s_fake_task();
    static s_report_t r;
    s_good_report(&r);
    char *flags[] = {"input_mutated"};
    r.rec.n_hack_flags = 1;
    r.rec.hack_flags = flags;
    s_frame(r.buf, sizeof r.buf, &r.len, &r.rec);
    Crucible__RewardRecord *rec = s_fake("ok", r.buf, r.len, 10);
    cr_assert(s_has_flag(rec, "input_mutated"), "the flag travels with the record");
    /* OK stays OK here (the runner never writes this): the reward is what
     * must be zero. */
    s_give_speedup(rec);
    for (size_t i = 0; i < S_NFORMULAS; i++) {
        cr_assert_eq(cr_reward_apply(rec, s_formulas[i]), 0);
        cr_assert(rec->reward == 0.0, "%s pays %g for a flagged record", s_formulas[i],
                  rec->reward);
    }
    s_free_rec(&rec);
}

/* ------------------------------------------------------------- the runner's exits */

TestSuite(runner_exit, .init = s_setup, .fini = s_teardown, .timeout = 60);

/* Builds candidate name and judges it through the supervisor and the real
 * runner, as a worker does. */
static Crucible__RewardRecord *s_supervised(const char *name, const char *text,
                                            double run_timeout_s)
{
    s_use_task(s_axpy_json, s_axpy_ref);
    s_build(name, text);
    char so[128];
    snprintf(so, sizeof so, "%s.so", name);
    return s_supervise(RUNNER, so, run_timeout_s);
}

Test(runner_exit, honest_candidate_paid)
{
    Crucible__RewardRecord *rec = s_supervised("honest", s_axpy_honest, 30);
    cr_assert_not_null(rec->profile);
    s_assert_paid(rec, "honest via supervisor");
    s_free_rec(&rec);
}

Test(runner_exit, candidate_crash)
{
    s_expect_zero(s_supervised("crash", S_AXPY("  *(volatile int *)0 = n;"), 30), S_RUNTIME,
                  NULL, NULL, "crash");
}

Test(runner_exit, candidate_exit_zero)
{
    /* exit(0) from inside the call: the process ends "successfully" with
     * no report; atexit handlers and destructors run first. */
    s_expect_zero(s_supervised("exit0",
                               "#include <stdlib.h>\n" S_AXPY(
                                   S_AXPY_LOOP("alpha * x[i] + y[i]") " exit(0);"),
                               30),
                  S_RUNTIME, NULL, NULL, "exit(0)");
}

Test(runner_exit, candidate_exit_nonzero)
{
    s_expect_zero(s_supervised("exit3",
                               "#include <unistd.h>\n" S_AXPY(
                                   S_AXPY_LOOP("alpha * x[i] + y[i]") " _exit(3);"),
                               30),
                  S_RUNTIME, NULL, NULL, "_exit(3)");
}

Test(runner_exit, candidate_hang)
{
    s_expect_zero(s_supervised("hang", S_AXPY("  for (volatile int k = 1; k; ) ;"), 1.5),
                  S_TIMEOUT, NULL, NULL, "hang");
}

Test(runner_exit, candidate_forges_report)
{
    /* Wrong answers, and a forged "status: OK" frame written once to every
     * pipe the process holds beyond stdio. The report descriptor is the
     * judge's, in another process (docs/judge.md): the frame reaches no one
     * and the wrong answers are judged as such. (The worker's check of the
     * report channel, report_forged, stays for a runner that loads candidate
     * code itself: report/extra_bytes_after_report.) */
    s_expect_zero(s_supervised(
        "forge",
        "#include <sys/stat.h>\n#include <unistd.h>\n" S_AXPY(
            "  static int done;\n"
            "  if (!done) { static const unsigned char ok[] = {2, 0, 0, 0, 0x48, 1};\n"
            "    for (int fd = 3; fd < 64; fd++) { struct stat st;\n"
            "      if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))\n"
            "        (void)!write(fd, ok, sizeof ok); }\n"
            "    done = 1; }\n" S_AXPY_LOOP("alpha * x[i] - y[i]")),
        30), CRUCIBLE__STATUS__STATUS_INCORRECT, NULL, NULL, "forged report");
}

Test(runner_exit, candidate_forges_report_and_exits_zero)
{
    /* One forged "status: OK" frame on every pipe beyond stdio, then
     * _exit(0). The report channel is not among them (the judge's process
     * holds it); the executor's early exit is the candidate's RUNTIME_ERROR,
     * reported by the judge. */
    s_expect_zero(s_supervised(
        "forge_exit",
        "#include <sys/stat.h>\n#include <unistd.h>\n" S_AXPY(
            "  static const unsigned char ok[] = {2, 0, 0, 0, 0x48, 1};\n"
            "  for (int fd = 3; fd < 64; fd++) { struct stat st;\n"
            "    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))\n"
            "      (void)!write(fd, ok, sizeof ok); }\n"
            "  _exit(0);\n" S_AXPY_LOOP("alpha * x[i] + y[i]")),
        30), CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR, NULL, "ended its process",
        "forged report, exit 0");
}

/* The fake runner leaves out the token: a well-formed OK report without it
 * is not the runner's. */
Test(report, report_without_token_is_forged)
{
    s_fake_task();
    Crucible__RewardRecord *rec = s_ok_then("notoken", 10);
    cr_assert_eq(rec->status, S_HACK, "%s: %s", cr_status_name(rec->status), rec->message);
    cr_assert(s_has_flag(rec, "report_forged"), "%s", rec->message);
    s_assert_zero(rec, "report without token");
    s_free_rec(&rec);
}

/* ------------------------------------------------------------- reward formulas */

TestSuite(reward, .timeout = 30);

/* A record of status with a large measured speedup and nflags hack flags. */
static Crucible__RewardRecord *s_rec(int status, double speedup, const char *flag)
{
    Crucible__RewardRecord *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    crucible__reward_record__init(r);
    r->status = (Crucible__Status)status;
    r->profile = calloc(1, sizeof *r->profile);
    cr_assert_not_null(r->profile);
    crucible__profile_result__init(r->profile);
    r->profile->speedup_geomean = speedup;
    if (flag) {
        r->hack_flags = calloc(1, sizeof(char *));
        cr_assert_not_null(r->hack_flags);
        r->hack_flags[0] = strdup(flag);
        r->n_hack_flags = 1;
    }
    return r;
}

Test(reward, every_non_ok_status_scores_zero)
{
    const double speedups[] = {0, 0.5, 3.0, 1e6, INFINITY, NAN};
    for (int st = 0; st <= CRUCIBLE__STATUS__STATUS_INVALID_TASK + 2; st++) {
        if (st == S_OK)
            continue;
        for (size_t k = 0; k < sizeof speedups / sizeof speedups[0]; k++) {
            Crucible__RewardRecord *r = s_rec(st, speedups[k], NULL);
            int infra = cr_status_is_infra(st);
            for (size_t i = 0; i < S_NFORMULAS; i++) {
                cr_assert_eq(cr_reward_apply(r, s_formulas[i]), 0);
                cr_assert(r->reward == 0.0, "%s pays %g for status %d, speedup %g",
                          s_formulas[i], r->reward, st, speedups[k]);
                cr_assert_eq(r->has_reward, !infra, "status %d", st);
            }
            crucible__reward_record__free_unpacked(r, NULL);
        }
    }
}

Test(reward, ok_with_any_hack_flag_scores_zero)
{
    /* Every flag name of the contract, and one nobody knows yet. */
    const char *flags[] = {"input_mutated", "output_unwritten", "second_run_mismatch",
                           "timed_output_mismatch", "background_thread", "side_stream",
                           "below_roofline", "link_audit", "sandbox_violation",
                           "fp_env_changed", "no_kernel_launched", "foreign_kernel",
                           "some_future_flag"};
    for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
        for (size_t i = 0; i < S_NFORMULAS; i++) {
            Crucible__RewardRecord *r = s_rec(S_OK, 3.0, flags[f]);
            cr_assert_eq(cr_reward_apply(r, s_formulas[i]), 0);
            cr_assert(r->reward == 0.0, "%s pays %g for OK with flag %s", s_formulas[i],
                      r->reward, flags[f]);
            cr_assert(r->components->correct == 0.0 && r->components->speed == 0.0,
                      "%s: %g + %g", s_formulas[i], r->components->correct,
                      r->components->speed);
            crucible__reward_record__free_unpacked(r, NULL);
        }
    }
    /* the reverse: no flag, paid */
    for (size_t i = 0; i < S_NFORMULAS; i++) {
        Crucible__RewardRecord *r = s_rec(S_OK, 3.0, NULL);
        cr_assert_eq(cr_reward_apply(r, s_formulas[i]), 0);
        cr_assert_gt(r->reward, 0, "%s", s_formulas[i]);
        crucible__reward_record__free_unpacked(r, NULL);
    }
}

Test(reward, broken_speedup_earns_no_speed)
{
    const double broken[] = {NAN, INFINITY, -INFINITY, -2.0};
    for (size_t k = 0; k < sizeof broken / sizeof broken[0]; k++) {
        for (size_t i = 0; i < S_NFORMULAS; i++) {
            Crucible__RewardRecord *r = s_rec(S_OK, broken[k], NULL);
            cr_assert_eq(cr_reward_apply(r, s_formulas[i]), 0);
            cr_assert(isfinite(r->reward) && r->components->speed == 0.0,
                      "%s: speedup %g gives %g (speed %g)", s_formulas[i], broken[k], r->reward,
                      r->components->speed);
            crucible__reward_record__free_unpacked(r, NULL);
        }
    }
}
