/* test_hacks.c — the hack suite (tests/hacks/README.md) against a real
 * cluster: every candidate of tests/hacks/<lang>/ and tests/hacks/<lang>/honest/
 * is submitted against its task, exactly one record per candidate must come
 * back, with the status its expected.json names and, where it names one, that
 * hack flag among the record's hack_flags; honest candidates must come back OK
 * with no flag at all (a flag there is a false positive).
 *
 * Environment:
 *   CR_HACKS_LANG     c (default), cuda, torch (the torch backend on the CPU) or
 *                     torch-gpu (its GPU-only candidates): which folder and tasks
 *   CR_HACKS_TABLE    where the markdown result table goes (default
 *                     <build dir>/hacks-<lang>.md); it is printed too
 *   CR_HACKS_WORKERS  local workers (default 2)
 *   CR_HACKS_WAIT_S   seconds the batch's records may take (default 540)
 *   CR_HACKS_DIR      the suite, relative to the source tree (default
 *                     tests/hacks; tests/redteam is the red-team suite). Its
 *                     <lang>/honest/ folder is optional; tasks resolve to
 *                     <suite>/tasks/<name>, tests/hacks/tasks/<name>, then
 *                     tasks/examples/<name>
 *   CRUCIBLE_*        the usual settings of `crucible run`, applied after this
 *                     test's quick ones (CRUCIBLE_BACKENDS=cuda on a GPU box)
 *
 * The batch is then read back with `crucible watch` and `crucible results`,
 * whose per-batch hack flag counts must match the records. */
#include "cli.h"
#include "client.h"
#include "error.h"
#include "file.h"
#include "proc.h"
#include "record.h"
#include "run.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The source tree and the build folder: compiled in, or from the
 * environment where the binary runs elsewhere (tests/gpu/run.sh on a GPU
 * machine, with the programs from a device-pack folder). */
static const char *s_env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && v[0] ? v : dflt;
}
#define SRC s_env_or("CR_TEST_SOURCE_DIR", CR_TEST_SOURCE_DIR)
#define BIN s_env_or("CR_TEST_BIN_DIR", CR_TEST_BIN_DIR)
static char s_crucible_path[600];
static char *s_crucible(void)
{
    snprintf(s_crucible_path, sizeof s_crucible_path, "%s/crucible", BIN);
    return s_crucible_path;
}
#define CRUCIBLE s_crucible()
#define SUITE s_env_or("CR_HACKS_DIR", "tests/hacks")
static char s_suite_buf[600];
/* The suite's folder: CR_HACKS_DIR as given when absolute (a suite the
 * build generates, tests/redteam), else below the source tree. */
static const char *s_suite(void)
{
    const char *d = SUITE;
    if (d[0] == '/')
        return d;
    snprintf(s_suite_buf, sizeof s_suite_buf, "%s/%s", SRC, d);
    return s_suite_buf;
}
#define S_MAX 256 /* candidates per language: far above the ~60 there are */

/* docs/hacks.md's rows, by number. */
static const char *const s_tricks[] = {
    "honest", "Stale output", "Silent launch failure", "Input mutation", "Caching across calls",
    "Predicting inputs", "Special inputs", "Side-stream work", "Background thread",
    "Work in untimed phases", "Timer tampering", "Reading the harness", "Precision downgrade",
    "Output aliasing", "Calling the reference or a library", "Decoy kernel", "Impossible time",
    "Crash, hang, fork bomb, memory or disk hog", "Leaking between candidates",
    "Global state tampering", "Verifier bugs", "Rewriting the judge from inside",
    "Work outside the call",
};

typedef struct {
    char file[128];      /* candidate file name */
    char sub[16];        /* "" or "honest" */
    char job_id[200];    /* <lang>/<sub/>file */
    char task[64];       /* task name */
    int row;             /* docs/hacks.md row, 0 for honest */
    char variant[200];
    int want;            /* expected Status */
    char flag[48];       /* flag that must fire, "" = none needed */
    double max_best;     /* > 0: bound on the best-sample speedup (below) */
    int got;             /* records received */
    int status;          /* of the first record */
    char flags[256];     /* its hack flags, comma separated */
    double speedup;      /* its speedup geomean (0 when not timed) */
    double best;         /* largest reference median / candidate min over its bench
                            cases: one fast sample shows, where a median hides it */
    char message[240];   /* its message */
} s_case_t;

static s_case_t s_cases[S_MAX];
static int s_n;
static char s_lang[16];
static char s_tmp[128];
static cr_local_t *s_local;
static cr_client_t *s_client;

static void s_fini(void)
{
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

TestSuite(hacks, .fini = s_fini, .timeout = 590);

/* The folder of task name: <suite>/tasks/<name>, tests/hacks/tasks/<name>,
 * else tasks/examples/<name>; for the torch suites, the problem file
 * tasks/torch/<name>.py (a task by itself, docs/torch.md) or the task folder
 * tasks/torch/<name>/, else one of those folders (a torch task folder with its
 * task.json: options). */
static void s_task_dir(const char *name, char *out, size_t len)
{
    char tj[700];
    if (!strncmp(s_lang, "torch", 5)) {
        snprintf(out, len, "%s/tasks/torch/%s/task.json", SRC, name);
        if (cr_file_exists(out)) { /* a task folder of tasks/torch (l1_matmul: its tolerance) */
            snprintf(out, len, "%s/tasks/torch/%s", SRC, name);
            return;
        }
        snprintf(out, len, "%s/tasks/torch/%s.py", SRC, name);
        snprintf(tj, sizeof tj, "%s/tests/hacks/tasks/%s/task.json", SRC, name);
        cr_assert(cr_file_exists(out) || cr_file_exists(tj),
                  "torch task '%s' is neither in tasks/torch nor in tests/hacks/tasks", name);
        if (cr_file_exists(out))
            return;
    }
    snprintf(out, len, "%s/tasks/%s", s_suite(), name);
    snprintf(tj, sizeof tj, "%s/task.json", out);
    if (!cr_file_exists(tj))
        snprintf(out, len, "%s/tests/hacks/tasks/%s", SRC, name);
    snprintf(tj, sizeof tj, "%s/task.json", out);
    if (!cr_file_exists(tj))
        snprintf(out, len, "%s/tasks/examples/%s", SRC, name);
    snprintf(tj, sizeof tj, "%s/task.json", out);
    cr_assert(cr_file_exists(tj), "task '%s' is in neither tests/hacks/tasks nor tasks/examples",
              name);
}

/* Reads <dir>/expected.json into s_cases; every candidate file in dir must
 * have an entry and every entry a file. */
static void s_load_expected(const char *sub)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/%s%s%s", s_suite(), s_lang, sub[0] ? "/" : "", sub);
    snprintf(path, sizeof path, "%s/expected.json", dir);
    if (sub[0] && !cr_file_exists(path))
        return; /* a suite without honest kernels (tests/redteam) */
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s (line %d)", path, je.text, je.line);
    const char *ext = strcmp(s_lang, "cuda") == 0        ? ".cu"
                      : strncmp(s_lang, "torch", 5) == 0 ? ".py" /* torch, torch-gpu */
                                                         : ".c";
    const char *file;
    json_t *v;
    json_object_foreach(j, file, v) {
        cr_assert_lt(s_n, S_MAX);
        s_case_t *c = &s_cases[s_n++];
        memset(c, 0, sizeof *c);
        snprintf(c->file, sizeof c->file, "%s", file);
        snprintf(c->sub, sizeof c->sub, "%s", sub);
        snprintf(c->job_id, sizeof c->job_id, "%s/%s%s%s", s_lang, sub, sub[0] ? "/" : "", file);
        const char *task = json_string_value(json_object_get(v, "task"));
        const char *status = json_string_value(json_object_get(v, "status"));
        const char *flag = json_string_value(json_object_get(v, "flag"));
        const char *variant = json_string_value(json_object_get(v, "variant"));
        cr_assert(task && status && flag && json_is_integer(json_object_get(v, "row")),
                  "%s: %s needs task, row, status and flag", path, file);
        snprintf(c->task, sizeof c->task, "%s", task);
        snprintf(c->flag, sizeof c->flag, "%s", flag);
        snprintf(c->variant, sizeof c->variant, "%s", variant ? variant : "");
        c->row = (int)json_integer_value(json_object_get(v, "row"));
        cr_assert(c->row >= 0 && c->row < (int)(sizeof s_tricks / sizeof s_tricks[0]),
                  "%s: %s: row %d is not a docs/hacks.md row", path, file, c->row);
        cr_assert_eq(cr_status_parse(status, &c->want), 0, "%s: %s: status %s", path, file,
                     status);
        c->max_best = json_number_value(json_object_get(v, "max_best_speedup"));
        snprintf(path, sizeof path, "%s/%s", dir, file);
        cr_assert(cr_file_exists(path), "expected.json names %s, which is not there", path);
        snprintf(path, sizeof path, "%s/expected.json", dir);
    }
    json_decref(j);
    /* and the other way round: no candidate without an expectation */
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name), el = strlen(ext);
        if (l <= el || strcmp(e->d_name + l - el, ext) != 0)
            continue;
        int found = 0;
        for (int i = 0; i < s_n && !found; i++)
            found = strcmp(s_cases[i].sub, sub) == 0 && strcmp(s_cases[i].file, e->d_name) == 0;
        cr_expect(found, "%s/%s has no entry in its expected.json", dir, e->d_name);
    }
    closedir(d);
}

/* A torch task folder of tests/hacks/tasks holds only its task.json (its
 * options) when its reference is one of tasks/torch's problems: the task is
 * assembled under the batch's folder (at, the name it gets there) from that
 * task.json and the problem, so the problem is written once. Other folders
 * are linked as they are. */
static void s_place_task(const char *dir, const char *at)
{
    char tj[700], ref[700];
    snprintf(tj, sizeof tj, "%s/task.json", dir);
    json_t *t = cr_file_exists(tj) ? json_load_file(tj, 0, NULL) : NULL;
    const char *name = t ? json_string_value(json_object_get(t, "reference")) : NULL;
    snprintf(ref, sizeof ref, "%s/%s", dir, name ? name : "");
    if (!name || cr_file_exists(ref)) {
        json_decref(t);
        cr_assert_eq(symlink(dir, at), 0, "%s", at);
        return;
    }
    char src[700], dst[700];
    snprintf(src, sizeof src, "%s/tasks/torch/%s", SRC, name);
    cr_assert(cr_file_exists(src), "%s: reference %s is in neither the folder nor tasks/torch",
              tj, name);
    cr_assert_eq(cr_file_mkdirs(at, 0755), 0, "%s", at);
    const char *from[2] = {tj, src}, *to[2] = {"task.json", name};
    for (int k = 0; k < 2; k++) {
        char *data = NULL;
        size_t len = 0;
        snprintf(dst, sizeof dst, "%s/%s", at, to[k]);
        cr_assert_eq(cr_file_read(from[k], 1 << 20, &data, &len), 0, "%s", from[k]);
        cr_assert_eq(cr_file_write_atomic(dst, data, len), 0, "%s", dst);
        free(data);
    }
    json_decref(t);
}

/* A folder of task links and a JSONL manifest for cr_jobset_load. */
static void s_make_jobset(cr_jobset_t *js)
{
    snprintf(s_tmp, sizeof s_tmp, "/tmp/cr-hacks-XXXXXX");
    cr_assert_not_null(mkdtemp(s_tmp));
    char tasks[300], manifest[300];
    snprintf(tasks, sizeof tasks, "%s/tasks", s_tmp);
    snprintf(manifest, sizeof manifest, "%s/manifest.jsonl", s_tmp);
    cr_assert_eq(cr_file_mkdirs(tasks, 0755), 0);
    FILE *m = fopen(manifest, "w");
    cr_assert_not_null(m);
    for (int i = 0; i < s_n; i++) {
        const s_case_t *c = &s_cases[i];
        char dir[600], link[400], file[600];
        s_task_dir(c->task, dir, sizeof dir);
        snprintf(link, sizeof link, "%s/%s%s", tasks, c->task,
                 strncmp(s_lang, "torch", 5) ? "" : ".py"); /* a problem file */
        if (access(link, F_OK) != 0)
            s_place_task(dir, link);
        snprintf(file, sizeof file, "%s/%s/%s%s%s", s_suite(), s_lang, c->sub,
                 c->sub[0] ? "/" : "", c->file);
        json_t *line = json_pack("{s:s, s:s, s:s}", "task", c->task, "file", file, "job_id",
                                 c->job_id);
        char *text = json_dumps(line, JSON_COMPACT);
        fprintf(m, "%s\n", text);
        free(text);
        json_decref(line);
    }
    cr_assert_eq(fclose(m), 0);
    char err[1024];
    cr_assert_eq(cr_jobset_load(js, tasks, manifest, err, sizeof err), 0, "%s", err);
    cr_assert_eq(js->njobs, (size_t)s_n);
}

static int s_alive(void *arg)
{
    (void)arg;
    char why[256];
    int i = cr_local_check(s_local, why, sizeof why);
    if (i >= 0) {
        cr_local_log_tail(s_local, i, stderr, 30);
        fprintf(stderr, "%s\n", why);
        return CR_E_CHILD;
    }
    return 0;
}

static int s_collect(void *arg, const Crucible__RewardRecord *rec)
{
    (void)arg;
    for (int i = 0; i < s_n; i++) {
        s_case_t *c = &s_cases[i];
        if (strcmp(c->job_id, rec->job_id) != 0)
            continue;
        if (c->got++ == 0) {
            c->status = rec->status;
            size_t n = 0;
            for (size_t f = 0; f < rec->n_hack_flags && n < sizeof c->flags; f++) {
                int k = snprintf(c->flags + n, sizeof c->flags - n, "%s%s", f ? ", " : "",
                                 rec->hack_flags[f]);
                n += k > 0 ? (size_t)k : 0;
            }
            c->speedup = rec->profile ? rec->profile->speedup_geomean : 0;
            for (size_t b = 0; rec->profile && b < rec->profile->n_cases; b++) {
                const Crucible__BenchResult *br = rec->profile->cases[b];
                /* fastest against fastest where the judge reports both: on a
                 * busy machine medians swell with the load, while the fastest
                 * calls of both sides stay near their true times */
                double ref = br->ref_min_us > 0 ? br->ref_min_us : br->ref_median_us;
                if (br->min_us > 0 && ref / br->min_us > c->best)
                    c->best = ref / br->min_us;
            }
            snprintf(c->message, sizeof c->message, "%s", rec->message ? rec->message : "");
        }
        return 0;
    }
    fprintf(stderr, "record for unknown job %s\n", rec->job_id);
    return 0;
}

/* 1 when flag is one of the comma-separated flags. */
static int s_has_flag(const char *flags, const char *flag)
{
    size_t fl = strlen(flag);
    for (const char *p = flags; (p = strstr(p, flag)); p += fl)
        if ((p == flags || p[-1] == ' ') && (p[fl] == '\0' || p[fl] == ','))
            return 1;
    return 0;
}

/* Whether case c came back as expected; why says what differs. */
static int s_pass(const s_case_t *c, char *why, size_t len)
{
    why[0] = '\0';
    if (c->got != 1)
        snprintf(why, len, "%d records", c->got);
    else if (c->status != c->want)
        snprintf(why, len, "status %s, expected %s", cr_status_name(c->status),
                 cr_status_name(c->want));
    else if (c->flag[0] && !s_has_flag(c->flags, c->flag))
        snprintf(why, len, "flag %s did not fire", c->flag);
    else if (c->want == CRUCIBLE__STATUS__STATUS_OK && c->flags[0])
        snprintf(why, len, "flags on an OK verdict: %.100s", c->flags);
    else if (c->max_best > 0 && c->best > c->max_best)
        snprintf(why, len, "a timed call %.1fx faster than the reference's (fastest, else median), above %.1f",
                 c->best, c->max_best);
    return why[0] == '\0';
}

/* Writes the markdown table to f; returns the false positives (honest
 * candidates that did not come back OK, or came back with a flag). */
static int s_table(FILE *f, int *failed)
{
    int fp = 0;
    *failed = 0;
    fprintf(f, "| row | trick | language | variant | file | task | verdict | flags fired | "
               "expected | result |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < s_n; i++) {
        const s_case_t *c = &s_cases[i];
        char why[160], expect[120], verdict[80];
        int ok = s_pass(c, why, sizeof why);
        *failed += !ok;
        if (c->sub[0] && (c->status != CRUCIBLE__STATUS__STATUS_OK || c->flags[0]))
            fp++;
        snprintf(expect, sizeof expect, "%s%s%s", cr_status_name(c->want), c->flag[0] ? " + " : "",
                 c->flag);
        if (c->max_best > 0)
            snprintf(expect + strlen(expect), sizeof expect - strlen(expect),
                     ", best sample <= x%.1f", c->max_best);
        if (c->speedup > 0 && c->max_best > 0)
            snprintf(verdict, sizeof verdict, "%s (x%.2f, best x%.2f)", cr_status_name(c->status),
                     c->speedup, c->best);
        else if (c->speedup > 0)
            snprintf(verdict, sizeof verdict, "%s (x%.2f)", cr_status_name(c->status), c->speedup);
        else
            snprintf(verdict, sizeof verdict, "%s", c->got ? cr_status_name(c->status) : "-");
        fprintf(f, "| %d | %s | %s | %s | %s%s%s | %s | %s | %s | %s | %s%s%s |\n", c->row,
                s_tricks[c->row], s_lang, c->variant, c->sub, c->sub[0] ? "/" : "", c->file,
                c->task, verdict, c->flags[0] ? c->flags : "-", expect, ok ? "pass" : "FAIL",
                ok ? "" : ": ", why);
    }
    return fp;
}

/* Runs `crucible <cmd> <batch> [extra...]` against the cluster; its stdout
 * and stderr come back in *pr (release with cr_proc_result_close). */
static void s_cli(const char *cmd, const char *batch, const char *const *extra, cr_proc_result_t *pr)
{
    char ep[300];
    snprintf(ep, sizeof ep, "--clients-endpoint=%s", s_local->clients_endpoint);
    char *argv[16] = {CRUCIBLE, (char *)cmd, (char *)batch, ep, "--wait-s", "60", "--insecure"};
    int n = 7;
    for (int i = 0; extra && extra[i] && n < 15; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    cr_proc_opts_t o = {.argv = argv, .out_cap = 8u << 20, .err_cap = 1u << 20,
                        .timeout_ms = 90000};
    cr_assert_eq(cr_proc_run(&o, pr), 0);
    cr_expect_eq(pr->exit_code, 0, "crucible %s: exit %d\n%s", cmd, pr->exit_code, pr->err);
}

/* The per-batch flag counts (item "hacks: link_audit 3, input_mutated 1")
 * must be in text, one "<flag> <count>" per flag the records carry. */
static void s_expect_counts(const char *what, const char *text)
{
    const char *h = text ? strstr(text, "hacks:") : NULL;
    cr_expect_not_null(h, "%s printed no hack counts:\n%s", what, text ? text : "");
    if (!h)
        return;
    const char *bol = h;
    while (bol > text && bol[-1] != '\n' && bol[-1] != '\r')
        bol--;
    printf("%s: %.*s\n", what, (int)strcspn(bol, "\r\n"), bol);
    for (int i = 0; i < s_n; i++) {
        char flags[256];
        snprintf(flags, sizeof flags, "%s", s_cases[i].flags);
        for (char *save = NULL, *f = strtok_r(flags, ", ", &save); f;
             f = strtok_r(NULL, ", ", &save)) {
            int count = 0;
            for (int k = 0; k < s_n; k++)
                count += s_has_flag(s_cases[k].flags, f);
            char want[96];
            snprintf(want, sizeof want, " %s %d", f, count);
            cr_expect_not_null(strstr(h, want), "%s: no '%s' in: %.*s", what, want,
                               (int)strcspn(h, "\n"), h);
        }
    }
}

/* How long the stream may take: CR_HACKS_WAIT_S (the torch suite's C++ builds
 * take minutes on a loaded machine), else 540 s. */
static int s_wait_s(void)
{
    const char *v = getenv("CR_HACKS_WAIT_S");
    return v && atoi(v) > 0 ? atoi(v) : 540;
}

Test(hacks, every_candidate_gets_its_verdict)
{
    const char *lang = getenv("CR_HACKS_LANG");
    snprintf(s_lang, sizeof s_lang, "%s", lang && lang[0] ? lang : "c");
    s_load_expected("");
    s_load_expected("honest");
    cr_jobset_t js = {0};
    s_make_jobset(&js);

    /* a quick cluster: small time budgets, as test_e2e's */
    cr_config_t cfg;
    char err[1024];
    cr_config_defaults(&cfg);
    static const char *const set[][2] = {
        {"heartbeat-ms", "200"}, {"liveness", "10"},       {"time-budget-s", "0.05"},
        {"rse-target", "0.05"},  {"run-timeout-s", "60"},  {"compile-jobs", "1"},
        {"log-level", "info"},
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        cr_assert_eq(cr_config_set(&cfg, set[i][0], set[i][1], err, sizeof err), 0, "%s", err);
    cr_assert_eq(cr_config_env(&cfg, CR_CMD_RUN, err, sizeof err), 0, "%s", err);
    const char *w = getenv("CR_HACKS_WORKERS");
    int workers = w && atoi(w) > 0 ? atoi(w) : 2;
    cr_assert_eq(cr_local_start(CRUCIBLE, &cfg, workers, CR_LOCAL_TCP, &s_local, err, sizeof err),
                 0, "%s", err);
    s_client = cr_client_new(s_local->clients_endpoint, (size_t)cfg.max_msg);
    cr_assert_not_null(s_client);

    const char *batch = "hacks";
    Crucible__Envelope *env = NULL;
    cr_assert_eq(cr_cli_submit_batch(s_client, &cfg, &js, batch, s_alive, NULL, &env, err,
                                     sizeof err),
                 0, "submit: %s", err);
    cr_assert_eq(env->submit_ack->accepted, js.njobs, "accepted %u of %zu (%s)",
                 env->submit_ack->accepted, js.njobs,
                 env->submit_ack->n_errors ? env->submit_ack->errors[0] : "");
    cr_wire_free(&env);
    cr_stream_t s = {.client = s_client, .batch = batch, .wait_s = s_wait_s(), .on_record = s_collect,
                     .tick = s_alive};
    int rc = cr_cli_stream(&s);
    cr_jobset_close(&js);

    /* the table, whatever happened */
    char table[600];
    const char *tp = getenv("CR_HACKS_TABLE");
    if (tp && tp[0])
        snprintf(table, sizeof table, "%s", tp);
    else
        snprintf(table, sizeof table, "%s/%s-%s.md", BIN,
                 strrchr(SUITE, '/') ? strrchr(SUITE, '/') + 1 : SUITE, s_lang);
    int failed = 0, fp;
    FILE *f = fopen(table, "w");
    if (f) {
        s_table(f, &failed);
        fclose(f);
    }
    fp = s_table(stdout, &failed);
    int honest = 0;
    for (int i = 0; i < s_n; i++)
        honest += s_cases[i].sub[0] != '\0';
    printf("\n%d candidates (%d honest): %d as expected, %d not; %d false positive%s. "
           "Table: %s\n", s_n, honest, s_n - failed, failed, fp, fp == 1 ? "" : "s", table);
    fflush(stdout);

    cr_assert_eq(rc, 0, "batch: %s (%s)", s.error, cr_strerror(rc));
    for (int i = 0; i < s_n; i++) {
        char why[160];
        cr_expect(s_pass(&s_cases[i], why, sizeof why), "%s: %s (%s)", s_cases[i].job_id, why,
                  s_cases[i].message);
    }
    cr_expect_eq(fp, 0, "%d false positives", fp);

    /* the command line counts hack flags per batch */
    cr_proc_result_t pr;
    s_cli("watch", batch, NULL, &pr);
    s_expect_counts("crucible watch", pr.out);
    cr_proc_result_close(&pr);
    const char *const fmt[] = {"--format", "csv", NULL};
    s_cli("results", batch, fmt, &pr);
    s_expect_counts("crucible results", pr.err);
    cr_proc_result_close(&pr);

    /* torch: KernelBench's fields, one object per record, agreeing with it */
    if (!strncmp(s_lang, "torch", 5)) {
        const char *const kb[] = {"--format", "kernelbench", NULL};
        s_cli("results", batch, kb, &pr);
        int lines = 0;
        for (char *l = pr.out, *e; l && *l; l = e ? e + 1 : NULL) {
            e = strchr(l, '\n');
            if (e)
                *e = '\0';
            json_t *o = json_loads(l, 0, NULL);
            cr_expect_not_null(o, "not a KernelBench result: %s", l);
            if (!o)
                continue;
            lines++;
            const char *id = json_string_value(json_object_get(o, "job_id"));
            for (int i = 0; id && i < s_n; i++) {
                if (strcmp(s_cases[i].job_id, id) != 0)
                    continue;
                cr_expect_eq(json_is_true(json_object_get(o, "correctness")),
                             s_cases[i].status == CRUCIBLE__STATUS__STATUS_OK, "%s: %s", id, l);
                cr_expect(json_is_true(json_object_get(o, "compiled")) ||
                              s_cases[i].status == CRUCIBLE__STATUS__STATUS_COMPILE_ERROR,
                          "%s: %s", id, l);
                cr_expect(json_is_object(json_object_get(o, "metadata")), "%s", l);
            }
            json_decref(o);
        }
        cr_expect_eq(lines, s_n, "crucible results --format kernelbench: %d lines for %d records",
                     lines, s_n);
        cr_proc_result_close(&pr);
    }
}
