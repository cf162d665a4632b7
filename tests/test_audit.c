/* test_audit.c — the ELF reader (common/elfsym.c) and the link audit
 * (worker/runner/audit.c) on real shared objects.
 *
 * Every rule is shown firing on an object the system compiler builds from a
 * few lines that use the forbidden call, and every honest example candidate
 * (tasks/examples) is built by the worker's own compile pool, with the
 * worker's flags, and must pass. Malformed inputs are real objects with
 * chosen fields broken, then a sweep of random byte changes: each must be
 * refused with a negative code and a message, never a crash. CUDA tests
 * need nvcc (CUDA_NVCC, else /usr/local/cuda/bin/nvcc) and skip without it;
 * nothing here needs a GPU. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include "../worker/runner/audit.h"
#include "compile.h"
#include "config.h"
#include "elfsym.h"
#include "error.h"
#include "file.h"
#include "hash.h"
#include "proc.h"
#include "task.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_EXAMPLES CR_TEST_SOURCE_DIR "/tasks/examples"
#define S_CUDA_LIB "/usr/local/cuda/lib64"

static char s_dir[64];

static const char s_task_c[] =
    "{\"name\": \"t\", \"language\": \"c\",\n"
    " \"signature\": \"void solve(const float *x, float *y, int n)\",\n"
    " \"params\": {\"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"y\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"n\": {\"role\": \"size\"}},\n"
    " \"cases\": [{\"n\": 4}], \"reference\": \"reference.c\"%s}\n";

static void s_make_writable(void);

static void s_setup(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cr-test-audit-XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
}

static void s_teardown(void)
{
    if (!s_dir[0])
        return;
    s_make_writable();
    cr_file_rmtree(s_dir);
    s_dir[0] = '\0';
}

TestSuite(audit, .init = s_setup, .fini = s_teardown, .timeout = 60);

/* A task whose JSON gets extra ("threads": true, "allow": [...]) appended. */
static cr_task_t *s_task(const char *extra)
{
    char json[2048], err[512];
    snprintf(json, sizeof json, s_task_c, extra ? extra : "");
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(json, "test task", &t, err, sizeof err), 0, "%s", err);
    return t;
}

static char *s_path(const char *name)
{
    char *p = cr_file_join(s_dir, name);
    cr_assert_not_null(p);
    return p;
}

/* Runs argv in s_dir; fails the test with the output when it fails. */
static void s_run(char *const *argv)
{
    cr_proc_opts_t o = {.argv = argv, .cwd = s_dir, .out_cap = 1 << 16, .merge_stderr = 1,
                        .timeout_ms = 120000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0, "cannot start %s", argv[0]);
    cr_assert(r.exited && r.exit_code == 0, "%s failed:\n%s", argv[0], r.out);
    cr_proc_result_close(&r);
}

/* Builds text (file name src, which picks the language: .c, .cc) into
 * name.so with the worker's C flags and up to three extra arguments. */
static char *s_build(const char *name, const char *src, const char *text, const char *x1,
                     const char *x2, const char *x3)
{
    char so[128];
    snprintf(so, sizeof so, "%s.so", name);
    char *sp = s_path(src);
    cr_assert_eq(cr_file_write_atomic(sp, text, strlen(text)), 0);
    free(sp);
    int cxx = strstr(src, ".cc") != NULL;
    char *argv[16];
    int k = 0;
    argv[k++] = cxx ? "c++" : "cc";
    argv[k++] = "-O2";
    argv[k++] = cxx ? "-std=c++17" : "-std=gnu11";
    argv[k++] = "-shared";
    argv[k++] = "-fPIC";
    argv[k++] = "-Wl,-Bsymbolic";
    argv[k++] = "-o";
    argv[k++] = so;
    argv[k++] = (char *)src;
    argv[k++] = "-lm";
    for (const char *x[] = {x1, x2, x3}, **p = x; p < x + 3; p++)
        if (*p)
            argv[k++] = (char *)*p;
    argv[k] = NULL;
    s_run(argv);
    return s_path(so);
}

/* Audits so for a task with extra; asserts the verdict and, unless it is 0,
 * that why names 'sym' and says word. */
static void s_expect(const char *so, const char *extra, int verdict, const char *sym,
                     const char *word)
{
    cr_task_t *t = s_task(extra);
    char why[1024] = "";
    int rc = cr_audit_check(so, t, why, sizeof why);
    cr_assert_eq(rc, verdict, "%s (task%s): verdict %d, expected %d: %s", so,
                 extra ? extra : "", rc, verdict, why);
    if (verdict != 0) {
        char quoted[256];
        snprintf(quoted, sizeof quoted, "'%s'", sym);
        cr_assert(strstr(why, quoted), "why does not name %s: %s", quoted, why);
        cr_assert(!word || strstr(why, word), "why does not say '%s': %s", word, why);
    } else {
        cr_assert_str_empty(why, "a clean verdict has no why: %s", why);
    }
    cr_log_info("%s: %s", so, why);
    cr_task_destroy(&t);
}

static void s_verdict(const char *name, const char *text, int verdict, const char *sym,
                      const char *word)
{
    char src[128];
    snprintf(src, sizeof src, "%s.c", name);
    char *so = s_build(name, src, text, NULL, NULL, NULL);
    s_expect(so, NULL, verdict, sym, word);
    free(so);
}

static void s_rule(const char *name, const char *text, const char *sym, const char *word)
{
    s_verdict(name, text, 1, sym, word);
}

/* ------------------------------------------------------------- the rules */

Test(audit, table_is_consistent)
{
    char why[512] = "";
    cr_assert_eq(cr_audit_selfcheck(why, sizeof why), 0, "%s", why);
}

Test(audit, allow_names_are_the_task_libraries)
{
    /* Every library cr_task_libs knows is a valid "allow"; anything else is
     * refused by the task parser, naming the ones it knows. */
    for (const cr_task_lib_t *l = cr_task_libs; l->name; l++) {
        if (l->ranked) /* nccl: tasks with "gpus" only (nccl_imports_only_in_ranked_tasks) */
            continue;
        char extra[128];
        snprintf(extra, sizeof extra, ", \"allow\": [\"%s\"]", l->name);
        cr_task_t *t = s_task(extra);
        cr_assert_str_eq(t->allow[0], l->name);
        cr_assert_eq(strncmp(l->link_flag, "-l", 2), 0, "%s", l->link_flag);
        cr_assert_eq(strncmp(l->soname, "lib", 3), 0, "%s", l->soname);
        cr_task_destroy(&t);
    }
    char json[2048], err[512] = "";
    snprintf(json, sizeof json, s_task_c, ", \"allow\": [\"cudnn\"]");
    cr_task_t *t = NULL;
    cr_assert_neq(cr_task_parse(json, "test task", &t, err, sizeof err), 0);
    cr_assert_null(t);
    cr_assert(strstr(err, "allow[0]") && strstr(err, "cudnn") && strstr(err, "cublas"), "%s",
              err);
}

/* libnccl versions none of its symbols: a candidate's unversioned NCCL
 * imports pass for a task with "gpus" (docs/multigpu.md) and are unresolved
 * imports anywhere else. */
Test(audit, nccl_imports_only_in_ranked_tasks)
{
    char *so = s_build("nccl_user", "nccl_user.c",
                       "typedef struct ncclComm *ncclComm_t;\n"
                       "int ncclAllReduce(const void *, void *, unsigned long, int, int, "
                       "ncclComm_t, void *);\n"
                       "int f(ncclComm_t c, float *x) { return ncclAllReduce(x, x, 1, 7, 0, c, "
                       "0); }\n",
                       NULL, NULL, NULL);
    cr_task_t *one = s_task(NULL);
    char why[1024] = "";
    cr_assert_neq(cr_audit_check(so, one, why, sizeof why), 0);
    cr_assert(strstr(why, "'ncclAllReduce'"), "%s", why);
    cr_task_destroy(&one);
    static const char ranked[] =
        "{\"name\": \"t\", \"language\": \"cuda\", \"gpus\": 2,\n"
        " \"signature\": \"void solve(ncclComm_t comm, const float *x, float *y, int n)\",\n"
        " \"params\": {\"comm\": {\"role\": \"comm\"},\n"
        "            \"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
        "            \"y\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
        "            \"n\": {\"role\": \"size\"}},\n"
        " \"cases\": [{\"n\": 4}], \"reference\": \"r.cu\", \"baseline\": \"b.cu\"}\n";
    char err[512];
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(ranked, "ranked task", &t, err, sizeof err), 0, "%s", err);
    why[0] = '\0';
    cr_assert_eq(cr_audit_check(so, t, why, sizeof why), 0, "%s", why);
    cr_task_destroy(&t);
    free(so);
}

Test(audit, imports_a_timer)
{
    s_rule("timer",
           "#include <time.h>\n"
           "long f(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);\n"
           "  return t.tv_nsec; }\n",
           "clock_gettime", "timer");
    s_rule("gtod", "#include <sys/time.h>\n"
                   "long f(void) { struct timeval t; gettimeofday(&t, 0); return t.tv_usec; }\n",
           "gettimeofday", "timer");
}

Test(audit, defines_a_timer_or_a_cuda_event)
{
    s_rule("defclock", "int clock_gettime(int c, void *ts) { (void)c; (void)ts; return 0; }\n",
           "clock_gettime", "timer");
    s_rule("defevent",
           "int cudaEventElapsedTime(float *ms, void *a, void *b)\n"
           "{ (void)a; (void)b; *ms = 0.001f; return 0; }\n",
           "cudaEventElapsedTime", "CUDA events");
}

Test(audit, dynamic_loading)
{
    s_rule("dlsym",
           "#include <dlfcn.h>\nvoid *f(void) { return dlsym(RTLD_DEFAULT, \"clock_gettime\"); }\n",
           "dlsym", "dynamic loading");
    s_rule("phdr",
           "#define _GNU_SOURCE\n#include <link.h>\n"
           "static int cb(struct dl_phdr_info *i, size_t n, void *a) { (void)i; (void)n; (void)a;\n"
           "  return 0; }\nint f(void) { return dl_iterate_phdr(cb, 0); }\n",
           "dl_iterate_phdr", "dynamic loading");
}

Test(audit, threads_unless_the_task_allows_them)
{
    char *so = s_build("thread", "thread.c",
                       "#include <pthread.h>\n"
                       "static void *run(void *a) { return a; }\n"
                       "int f(void) { pthread_t t; return pthread_create(&t, 0, run, 0); }\n",
                       NULL, NULL, NULL);
    s_expect(so, NULL, 1, "pthread_create", "\"threads\": true");
    s_expect(so, ", \"threads\": false", 1, "pthread_create", NULL);
    s_expect(so, ", \"threads\": true", 0, NULL, NULL);
    free(so);
}

Test(audit, cxx_thread_and_chrono)
{
    char *so = s_build("cxxthread", "cxxthread.cc",
                       "#include <thread>\n"
                       "extern \"C\" void f(int *x) { std::thread t([x] { *x = 1; }); t.join(); }\n",
                       NULL, NULL, NULL);
    s_expect(so, NULL, 1, "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_"
                          "deleteIS1_EEPFvvE", "threads");
    s_expect(so, ", \"threads\": true", 0, NULL, NULL);
    free(so);
    so = s_build("chrono", "chrono.cc",
                 "#include <chrono>\n"
                 "extern \"C\" long f(void) {\n"
                 "  return std::chrono::steady_clock::now().time_since_epoch().count(); }\n",
                 NULL, NULL, NULL);
    s_expect(so, NULL, 1, "_ZNSt6chrono3_V212steady_clock3nowEv", "chrono");
    free(so);
}

Test(audit, processes_network_signals_syscalls_memory)
{
    s_rule("fork", "#include <unistd.h>\nint f(void) { return (int)fork(); }\n", "fork",
           "processes");
    s_rule("popen", "#include <stdio.h>\nvoid *f(void) { return popen(\"true\", \"r\"); }\n",
           "popen", "processes");
    s_rule("socket", "#include <sys/socket.h>\nint f(void) { return socket(AF_INET, "
                     "SOCK_STREAM, 0); }\n",
           "socket", "network");
    s_rule("kill", "#include <signal.h>\n#include <unistd.h>\n"
                   "int f(void) { return kill(getppid(), SIGSTOP); }\n",
           "kill", "signalling");
    s_rule("syscall", "#define _GNU_SOURCE\n#include <unistd.h>\n#include <sys/syscall.h>\n"
                      "long f(void) { return syscall(SYS_getpid); }\n",
           "syscall", "raw system calls");
    s_rule("mprotect", "#include <sys/mman.h>\n"
                       "int f(void *p) { return mprotect(p, 4096, PROT_READ | PROT_EXEC); }\n",
           "mprotect", "memory protection");
}

Test(audit, imports_from_no_linked_library)
{
    /* Declared, never linked: the loader would bind it to whatever the
     * runner has loaded. The judge's own libraries by name are a hack... */
    s_rule("zmq", "extern void zmq_version(int *, int *, int *);\n"
                  "void f(int *v) { zmq_version(v, v + 1, v + 2); }\n",
           "zmq_version", "judge's own libraries");
    /* ...any other such name is an object that cannot be loaded honestly
     * (often a helper declared and never defined): an error, not a hack. */
    s_verdict("unversioned", "extern int hidden_helper(void);\nint f(void) { return hidden_helper(); }\n",
              CR_E_NOT_FOUND, "hidden_helper", "no library the object links provides it");
    s_verdict("weak", "extern int hidden_weak(void) __attribute__((weak));\n"
                      "int f(void) { return hidden_weak ? hidden_weak() : 0; }\n",
              CR_E_NOT_FOUND, "hidden_weak", "undefined symbol");
    /* a forbidden import beside it decides */
    s_rule("both", "#include <time.h>\nextern int hidden_helper(void);\n"
                   "long f(void) { return hidden_helper() + time(0); }\n",
           "time", "timer");
}

Test(audit, needed_library_outside_the_allow_list)
{
    char *lib = s_build("libevil", "evil.c", "int evil(void) { return 1; }\n", NULL, NULL, NULL);
    free(lib);
    /* nothing imported from it: only the DT_NEEDED entry can show it */
    char *so = s_build("needs", "needs.c", "int f(void) { return 0; }\n", "-Wl,--no-as-needed",
                       "-L.", "-levil");
    s_expect(so, NULL, 1, "libevil.so", "may be linked");
    free(so);
}

Test(audit, cublas_only_when_allowed)
{
    if (access(S_CUDA_LIB "/libcublas.so", R_OK) != 0)
        cr_skip_test("no " S_CUDA_LIB "/libcublas.so");
    /* linked as the worker links it for a task that allows it (-lcublas) */
    char *so = s_build("blas", "blas.c",
                       "int cublasCreate_v2(void **h);\n"
                       "int f(void) { void *h; return cublasCreate_v2(&h); }\n",
                       "-L" S_CUDA_LIB, "-lcublas", NULL);
    s_expect(so, NULL, 1, "cublasCreate_v2", "\"allow\" does not list \"cublas\"");
    s_expect(so, ", \"allow\": [\"cublasLt\"]", 1, "cublasCreate_v2", "cublas");
    s_expect(so, ", \"allow\": [\"cublas\"]", 0, NULL, NULL);
    free(so);
}

Test(audit, honest_small_object_is_clean)
{
    char *so = s_build("honest", "honest.c",
                       "#include <math.h>\n#include <stdlib.h>\n#include <string.h>\n"
                       "void solve(const float *x, float *y, int n) {\n"
                       "  float *t = malloc(sizeof *t * (size_t)n); if (!t) return;\n"
                       "  for (int i = 0; i < n; i++) t[i] = expf(x[i]) + sqrtf(fabsf(x[i]));\n"
                       "  memcpy(y, t, sizeof *t * (size_t)n); free(t); }\n",
                       NULL, NULL, NULL);
    s_expect(so, NULL, 0, NULL, NULL);
    free(so);
}

/* ------------------------------------------ honest examples, as the worker builds them */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cr_wjob_t *head; /* finished jobs; owned */
    int n;
} s_sink_t;

static s_sink_t s_sink = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static void s_sink_put(cr_wjob_t *j, void *arg)
{
    s_sink_t *s = arg;
    pthread_mutex_lock(&s->mu);
    j->next = s->head;
    s->head = j;
    s->n++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* The cache is read-only on purpose: make it writable before removing. */
static int s_writable_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag == FTW_D || flag == FTW_DNR)
        chmod(path, 0700);
    else if (flag == FTW_F)
        chmod(path, (st->st_mode & 0777) | 0200);
    return 0;
}

static void s_make_writable(void)
{
    nftw(s_dir, s_writable_cb, 16, FTW_PHYS);
}

static char *s_read(const char *dir, const char *name)
{
    char *p = cr_file_join(dir, name), *text = NULL;
    cr_assert_eq(cr_file_read(p, 1 << 20, &text, NULL), 0, "read %s", p);
    free(p);
    return text;
}

/* Hands the pool one job as the coordinator would assign it (base may be
 * NULL). */
static void s_submit(cr_compile_t *c, const char *id, const char *task, const char *task_json,
                     const char *ref, const char *base, const char *src)
{
    Crucible__Job m = CRUCIBLE__JOB__INIT;
    Crucible__JobSpec sp = CRUCIBLE__JOB_SPEC__INIT;
    Crucible__TaskBundle tb = CRUCIBLE__TASK_BUNDLE__INIT;
    Crucible__JobOptions op = CRUCIBLE__JOB_OPTIONS__INIT;
    m.batch_id = "audit";
    m.attempt = 1;
    sp.job_id = (char *)id;
    sp.task = (char *)task;
    sp.source = (char *)src;
    tb.name = (char *)task;
    tb.task_json = (char *)task_json;
    tb.reference_source = (char *)ref;
    tb.baseline_source = (char *)(base ? base : "");
    op.compile_timeout_s = 120;
    m.spec = &sp;
    m.task = &tb;
    m.options = &op;
    cr_wjob_t *j = cr_wjob_new(&m);
    cr_assert_not_null(j);
    cr_compile_submit(c, j);
}

/* Waits up to secs for n finished jobs; returns all that finished (a list
 * through next, caller destroys) and their count in *got. */
static cr_wjob_t *s_collect(int n, int secs, int *got)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += secs;
    pthread_mutex_lock(&s_sink.mu);
    while (s_sink.n < n && pthread_cond_timedwait(&s_sink.cv, &s_sink.mu, &dl) == 0)
        ;
    cr_wjob_t *list = s_sink.head;
    *got = s_sink.n;
    s_sink.head = NULL;
    s_sink.n = 0;
    pthread_mutex_unlock(&s_sink.mu);
    return list;
}

/* Submits every candidate of every example task of language lang that its
 * expected.json does not mark COMPILE_ERROR; returns how many. */
static int s_submit_examples(cr_compile_t *c, const char *lang)
{
    DIR *d = opendir(S_EXAMPLES);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char tdir[1024], cdir[1100], err[512];
        snprintf(tdir, sizeof tdir, "%s/%s", S_EXAMPLES, de->d_name);
        snprintf(cdir, sizeof cdir, "%s/candidates", tdir);
        cr_task_t *t = NULL;
        if (access(cdir, R_OK) != 0 || cr_task_load_dir(tdir, &t, err, sizeof err) != 0)
            continue;
        if (strcmp(t->language, lang) != 0) {
            cr_task_destroy(&t);
            continue;
        }
        char *tj = s_read(tdir, "task.json"), *ref = s_read(tdir, t->reference);
        char *base = t->baseline ? s_read(tdir, t->baseline) : NULL;
        char *ej = s_read(cdir, "expected.json");
        json_t *expected = json_loads(ej, 0, NULL);
        cr_assert_not_null(expected, "%s/expected.json", cdir);
        const char *file;
        json_t *status;
        json_object_foreach(expected, file, status) {
            if (!strcmp(json_string_value(status), "COMPILE_ERROR"))
                continue;
            char *src = s_read(cdir, file);
            char id[600];
            snprintf(id, sizeof id, "%s/%s", de->d_name, file);
            s_submit(c, id, t->name, tj, ref, base, src);
            free(src);
            n++;
        }
        json_decref(expected);
        free(ej);
        free(tj);
        free(ref);
        free(base);
        cr_task_destroy(&t);
    }
    closedir(d);
    return n;
}

/* Waits for n jobs, then audits each one's candidate, reference and
 * baseline objects against its task: all must be clean. */
static void s_audit_examples(int n)
{
    int got;
    /* ~40 s on two idle cores; much more when they are shared */
    cr_wjob_t *list = s_collect(n, 520, &got);
    cr_assert_eq(got, n, "%d of %d builds finished", got, n);
    int audited = 0;
    for (cr_wjob_t *j = list, *next; j; j = next) {
        next = j->next;
        cr_assert_eq(j->status, 0, "%s: %s\n%s", j->job->spec->job_id, j->message,
                     j->compile_log ? j->compile_log : "");
        for (int k = 0; k < CR_SO__COUNT; k++) {
            if (!j->so[k])
                continue;
            char why[1024] = "";
            int rc = cr_audit_check(j->so[k], j->task, why, sizeof why);
            cr_expect_eq(rc, 0, "%s (object %d): %s", j->job->spec->job_id, k, why);
            audited++;
        }
        j->next = NULL;
        cr_wjob_destroy(&j);
    }
    cr_log_info("%d objects of %d jobs audited clean", audited, n);
    cr_assert_geq(audited, 2 * n, "candidate and reference of every job");
}

static void s_pool_config(cr_config_t *cfg, const char *backends)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->work_dir, sizeof cfg->work_dir, "%s/work", s_dir);
    snprintf(cfg->cc, sizeof cfg->cc, "cc");
    snprintf(cfg->backends, sizeof cfg->backends, "%s", backends);
    cfg->compile_jobs = 2; /* the machine's two cores */
    cfg->compile_timeout_s = 120;
}

static const char *s_nvcc(void)
{
    const char *e = getenv("CUDA_NVCC");
    const char *nvcc = e && e[0] ? e : "/usr/local/cuda/bin/nvcc";
    return access(nvcc, X_OK) == 0 ? nvcc : NULL;
}

Test(audit, honest_c_examples_pass, .timeout = 120)
{
    cr_assert_eq(cr_hash_global_init(), 0);
    cr_config_t cfg;
    s_pool_config(&cfg, "c");
    cr_compile_t *c = cr_compile_new(&cfg, s_sink_put, &s_sink);
    cr_assert_not_null(c);
    int n = s_submit_examples(c, "c");
    cr_assert_gt(n, 20, "the examples hold dozens of C candidates, found %d", n);
    s_audit_examples(n);
    cr_compile_destroy(&c);
}

/* A compile pool serving cuda as a worker on an H200 would (cfg must
 * outlive it); skips the test without nvcc. */
static cr_compile_t *s_cuda_pool(cr_config_t *cfg)
{
    const char *nvcc = s_nvcc();
    if (!nvcc)
        cr_skip_test("no nvcc");
    cr_assert_eq(cr_hash_global_init(), 0);
    s_pool_config(cfg, "cuda");
    snprintf(cfg->nvcc, sizeof cfg->nvcc, "%s", nvcc);
    snprintf(cfg->cuda_arch, sizeof cfg->cuda_arch, "sm_90"); /* the H200's: one arch is quick */
    cr_compile_t *c = cr_compile_new(cfg, s_sink_put, &s_sink);
    cr_assert_not_null(c);
    return c;
}

Test(audit, honest_cuda_examples_pass, .timeout = 540)
{
    cr_config_t cfg;
    cr_compile_t *c = s_cuda_pool(&cfg);
    int n = s_submit_examples(c, "cuda");
    cr_assert_gt(n, 10, "the examples hold dozens of CUDA candidates, found %d", n);
    s_audit_examples(n);
    cr_compile_destroy(&c);
}

/* One CUDA candidate through the pool for the vector_add_cuda task. */
static char *s_cuda_build(cr_compile_t *c, const char *id, const char *src, cr_task_t **task)
{
    char *tdir = S_EXAMPLES "/vector_add_cuda";
    char *tj = s_read(tdir, "task.json"), *ref = s_read(tdir, "reference.cu");
    s_submit(c, id, "vector_add_cuda", tj, ref, NULL, src);
    free(tj);
    free(ref);
    int got;
    cr_wjob_t *j = s_collect(1, 120, &got);
    cr_assert_eq(got, 1, "%s: no build within 120 s", id);
    cr_assert_eq(j->status, 0, "%s: %s\n%s", id, j->message, j->compile_log ? j->compile_log : "");
    char *so = strdup(j->so[CR_SO_CANDIDATE]);
    *task = j->task;
    j->task = NULL;
    j->next = NULL;
    cr_wjob_destroy(&j);
    return so;
}

Test(audit, cuda_events_and_driver_entry_points, .timeout = 240)
{
    cr_config_t cfg;
    cr_compile_t *c = s_cuda_pool(&cfg);
    static const struct {
        const char *id, *sym, *word, *src;
    } cases[] = {
        {"event", "cudaEvent", "CUDA events",
         "__global__ void k(const float *a, const float *b, float *c, int n)\n"
         "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n"
         "void solve(const float *a, const float *b, float *c, int n) {\n"
         "  static float ms; cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);\n"
         "  cudaEventRecord(e0); k<<<(n + 255) / 256, 256>>>(a, b, c, n); cudaEventRecord(e1);\n"
         "  cudaEventSynchronize(e1); cudaEventElapsedTime(&ms, e0, e1); }\n"},
        {"entry", "cudaGetDriverEntryPoint", "dynamic loading",
         "__global__ void k(const float *a, const float *b, float *c, int n)\n"
         "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n"
         "void solve(const float *a, const float *b, float *c, int n) {\n"
         "  void *fn = 0; cudaDriverEntryPointQueryResult q;\n"
         "  cudaGetDriverEntryPoint(\"cuEventElapsedTime\", &fn, cudaEnableDefault, &q);\n"
         "  k<<<(n + 255) / 256, 256>>>(a, b, c, n); }\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_task_t *t = NULL;
        char *so = s_cuda_build(c, cases[i].id, cases[i].src, &t);
        char why[1024] = "", quoted[128];
        snprintf(quoted, sizeof quoted, "'%s", cases[i].sym); /* the first of several */
        cr_assert_eq(cr_audit_check(so, t, why, sizeof why), 1, "%s: %s", cases[i].id, why);
        cr_assert(strstr(why, quoted) && strstr(why, cases[i].word), "%s: %s", cases[i].id, why);
        cr_log_info("%s: %s", cases[i].id, why);
        free(so);
        cr_task_destroy(&t);
    }
    /* Events that only order work (fork/join across streams) are honest. */
    cr_task_t *t = NULL;
    char *so = s_cuda_build(
        c, "forkjoin",
        "__global__ void k(const float *a, const float *b, float *c, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n"
        "void solve(const float *a, const float *b, float *c, int n) {\n"
        "  cudaStream_t s; cudaEvent_t go, done;\n"
        "  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n"
        "  cudaEventCreateWithFlags(&go, cudaEventDisableTiming);\n"
        "  cudaEventCreateWithFlags(&done, cudaEventDisableTiming);\n"
        "  cudaEventRecord(go, 0); cudaStreamWaitEvent(s, go, 0);\n"
        "  k<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);\n"
        "  cudaEventRecord(done, s); cudaStreamWaitEvent(0, done, 0);\n"
        "  cudaEventDestroy(go); cudaEventDestroy(done); cudaStreamDestroy(s); }\n",
        &t);
    char why[1024] = "";
    cr_assert_eq(cr_audit_check(so, t, why, sizeof why), 0, "fork/join events: %s", why);
    free(so);
    cr_task_destroy(&t);
    cr_compile_destroy(&c);
}

/* ------------------------------------------------------------ malformed input */

typedef struct {
    uint8_t *b;
    size_t n;
} s_buf_t;

/* A small real object: two imports, two definitions. */
static s_buf_t s_sample(const char *name, const char *hash_style)
{
    char src[128];
    snprintf(src, sizeof src, "%s.c", name);
    char *so = s_build(name, src,
                       "#include <stdlib.h>\n#include <string.h>\n"
                       "void *sample_copy(const void *p, size_t n) { void *q = malloc(n);\n"
                       "  return q ? memcpy(q, p, n) : q; }\n"
                       "int sample_value = 3;\n",
                       hash_style, NULL, NULL);
    s_buf_t b = {NULL, 0};
    char *text = NULL;
    cr_assert_eq(cr_file_read(so, 1 << 24, &text, &b.n), 0);
    b.b = (uint8_t *)text;
    free(so);
    return b;
}

static s_buf_t s_copy(s_buf_t a)
{
    s_buf_t b = {malloc(a.n), a.n};
    cr_assert_not_null(b.b);
    memcpy(b.b, a.b, a.n);
    return b;
}

/* The bytes must be refused by the reader and, as a file, by the audit,
 * both with a message containing what. */
static void s_bad(s_buf_t b, const char *what, const char *label)
{
    cr_elfsym_t *e = (cr_elfsym_t *)&b; /* must come back NULL */
    char err[512] = "";
    int rc = cr_elfsym_open_mem(b.b, b.n, &e, err, sizeof err);
    cr_assert_lt(rc, 0, "%s: accepted", label);
    cr_assert_null(e, "%s", label);
    cr_assert(strstr(err, what), "%s: message '%s' does not say '%s'", label, err, what);
    char *p = s_path("bad.so");
    cr_assert_eq(cr_file_write_atomic(p, b.b, b.n), 0);
    cr_task_t *t = s_task(NULL);
    char why[1024] = "";
    rc = cr_audit_check(p, t, why, sizeof why);
    cr_assert_lt(rc, 0, "%s: audit gave %d", label, rc);
    cr_assert(strstr(why, what) && strstr(why, "bad.so"), "%s: %s", label, why);
    cr_log_info("%s: %s", label, why);
    cr_task_destroy(&t);
    free(p);
}

static Elf64_Ehdr *s_eh(s_buf_t b)
{
    return (Elf64_Ehdr *)b.b;
}

/* The section header of type type (first), in place. */
static Elf64_Shdr *s_sh(s_buf_t b, uint32_t type)
{
    Elf64_Ehdr *eh = s_eh(b);
    for (int i = 0; i < eh->e_shnum; i++) {
        Elf64_Shdr *sh = (Elf64_Shdr *)(b.b + eh->e_shoff + (size_t)i * sizeof *sh);
        if (sh->sh_type == type)
            return sh;
    }
    cr_assert_fail("no section of type %u", type);
    return NULL;
}

/* The dynamic entry with tag (first), in place. */
static Elf64_Dyn *s_dyn(s_buf_t b, int64_t tag)
{
    Elf64_Shdr *ds = s_sh(b, SHT_DYNAMIC);
    for (size_t i = 0; i < ds->sh_size / sizeof(Elf64_Dyn); i++) {
        Elf64_Dyn *d = (Elf64_Dyn *)(b.b + ds->sh_offset + i * sizeof *d);
        if (d->d_tag == tag)
            return d;
    }
    cr_assert_fail("no dynamic tag %lld", (long long)tag);
    return NULL;
}

/* Names of all symbols, joined, for comparing two readings. */
static char *s_names(const uint8_t *b, size_t n, size_t *count)
{
    cr_elfsym_t *e = NULL;
    char err[512];
    cr_assert_eq(cr_elfsym_open_mem(b, n, &e, err, sizeof err), 0, "%s", err);
    size_t cap = 1, len = 0;
    for (size_t i = 0; i < cr_elfsym_count(e); i++) {
        cr_elfsym_sym_t s;
        cr_assert_eq(cr_elfsym_symbol(e, i, &s), 0);
        cap += strlen(s.name) + 4;
    }
    char *out = calloc(1, cap);
    for (size_t i = 0; i < cr_elfsym_count(e); i++) {
        cr_elfsym_sym_t s;
        cr_elfsym_symbol(e, i, &s);
        len += (size_t)sprintf(out + len, "%s%c%d%d,", s.name, s.defined ? 'D' : 'U', s.bind,
                               s.versioned);
    }
    *count = cr_elfsym_count(e);
    cr_elfsym_destroy(&e);
    cr_assert_null(e);
    return out;
}

Test(audit, reader_sees_what_readelf_sees)
{
    s_buf_t b = s_sample("sample", NULL);
    size_t n = 0;
    char *names = s_names(b.b, b.n, &n);
    cr_log_info("%zu symbols: %s", n, names);
    cr_assert(strstr(names, "mallocU1" "1,"), "malloc: an import, global, versioned: %s", names);
    cr_assert(strstr(names, "sample_copyD1" "0,"), "%s", names);
    cr_assert(strstr(names, "sample_valueD1" "0,"), "%s", names);
    cr_elfsym_t *e = NULL;
    char err[256];
    cr_assert_eq(cr_elfsym_open_mem(b.b, b.n, &e, err, sizeof err), 0);
    int libc = 0;
    for (size_t i = 0; i < cr_elfsym_needed_count(e); i++)
        libc |= !strcmp(cr_elfsym_needed(e, i), "libc.so.6");
    cr_assert(libc, "DT_NEEDED libc.so.6");
    cr_assert_null(cr_elfsym_needed(e, cr_elfsym_needed_count(e)));
    cr_elfsym_sym_t s;
    cr_assert_eq(cr_elfsym_symbol(e, n, &s), -ERANGE);
    cr_elfsym_destroy(&e);
    cr_elfsym_destroy(&e); /* safe on NULL */
    free(names);
    free(b.b);
}

Test(audit, without_section_headers_the_loader_view_gives_the_same_table)
{
    /* GNU hash (the default) and SysV hash: each must count every symbol */
    const char *styles[] = {"-Wl,--hash-style=gnu", "-Wl,--hash-style=sysv"};
    for (int k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "style%d", k);
        s_buf_t b = s_sample(name, styles[k]);
        size_t n1, n2;
        char *with = s_names(b.b, b.n, &n1);
        Elf64_Ehdr *eh = s_eh(b);
        eh->e_shoff = 0;
        eh->e_shnum = 0;
        eh->e_shstrndx = 0;
        char *without = s_names(b.b, b.n, &n2);
        cr_assert_eq(n1, n2, "%s: %zu symbols with sections, %zu without", styles[k], n1, n2);
        cr_assert_str_eq(with, without, "%s", styles[k]);
        free(with);
        free(without);
        free(b.b);
    }
}

Test(audit, malformed_objects_are_refused_with_a_message)
{
    s_buf_t good = s_sample("sample", NULL), b;

    s_buf_t text = {(uint8_t *)strdup("#!/bin/sh\necho not a library\n"), 30};
    s_bad(text, "not an ELF file", "text file");
    free(text.b);
    s_buf_t empty = {good.b, 0};
    s_bad(empty, "not an ELF file", "empty");
    s_buf_t trunc = {good.b, 40};
    s_bad(trunc, "truncated", "40 bytes");
    trunc.n = good.n / 2;
    s_bad(trunc, "past the end", "half the file");

    b = s_copy(good);
    b.b[EI_CLASS] = ELFCLASS32;
    s_bad(b, "32-bit", "ELFCLASS32");
    b.b[EI_CLASS] = ELFCLASS64;
    b.b[EI_DATA] = ELFDATA2MSB;
    s_bad(b, "little-endian", "big-endian");
    free(b.b);

    b = s_copy(good);
    s_eh(b)->e_type = ET_EXEC;
    s_bad(b, "not a shared object", "ET_EXEC");
    free(b.b);

    b = s_copy(good);
    s_eh(b)->e_phoff = (uint64_t)-16;
    s_bad(b, "program headers", "e_phoff near 2^64");
    free(b.b);

    b = s_copy(good);
    s_sh(b, SHT_DYNSYM)->sh_size = 24ull << 40; /* a huge count */
    s_bad(b, ".dynsym", "huge .dynsym");
    free(b.b);

    b = s_copy(good);
    s_sh(b, SHT_DYNSYM)->sh_offset += 24; /* a table the loader never reads */
    s_bad(b, "DT_SYMTAB", ".dynsym moved");
    free(b.b);

    b = s_copy(good);
    s_sh(b, SHT_DYNSYM)->sh_size -= 24; /* hides the last symbol from readers of sections */
    s_bad(b, "holds", ".dynsym shortened");
    free(b.b);

    b = s_copy(good);
    s_dyn(b, DT_STRSZ)->d_un.d_val = 1ull << 40;
    s_bad(b, "DT_STRTAB/DT_STRSZ", "huge DT_STRSZ");
    free(b.b);

    b = s_copy(good);
    Elf64_Dyn *d = s_dyn(b, DT_STRSZ);
    d->d_tag = DT_STRTAB; /* a second DT_STRTAB */
    s_bad(b, "a second DT_STRTAB", "duplicate tag");
    free(b.b);

    b = s_copy(good);
    Elf64_Shdr *ss = s_sh(b, SHT_DYNSYM);
    Elf64_Sym *sym = (Elf64_Sym *)(b.b + ss->sh_offset + sizeof *sym);
    sym->st_name = 0x7fffffff;
    s_bad(b, "name offset", "symbol name out of range");
    free(b.b);

    b = s_copy(good);
    s_dyn(b, DT_NEEDED)->d_un.d_val = 1ull << 33;
    s_bad(b, "DT_NEEDED", "DT_NEEDED name out of range");
    free(b.b);

    b = s_copy(good);
    uint32_t *gh = (uint32_t *)(b.b + s_sh(b, SHT_GNU_HASH)->sh_offset);
    gh[0] = 0xffffffffu; /* nbuckets */
    s_bad(b, "DT_GNU_HASH", "huge nbuckets");
    free(b.b);

    b = s_copy(good);
    Elf64_Ehdr *eh = s_eh(b);
    for (int i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr *ph = (Elf64_Phdr *)(b.b + eh->e_phoff + (size_t)i * sizeof *ph);
        if (ph->p_type == PT_DYNAMIC)
            ph->p_type = PT_NULL;
    }
    s_bad(b, "PT_DYNAMIC", "no PT_DYNAMIC");
    free(b.b);

    b = s_copy(good);
    s_dyn(b, DT_SYMTAB)->d_un.d_val = 0x7fff00000000ull;
    s_bad(b, "PT_LOAD", "DT_SYMTAB outside every segment");
    free(b.b);

    free(good.b);
}

Test(audit, random_damage_never_crashes, .timeout = 60)
{
    /* Every input either reads (and audits) or is refused with a message;
     * a fault ends this test's process, which fails it. Deterministic. */
    s_buf_t good = s_sample("sample", NULL);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int refused = 0, read = 0;
    cr_task_t *t = s_task(NULL);
    for (int it = 0; it < 20000; it++) {
        s_buf_t b = s_copy(good);
        int flips = 1 + (int)(x % 4);
        for (int f = 0; f < flips; f++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
            /* most of the structure is in the first 16 KiB; the tail is code */
            size_t at = (size_t)(x >> 16) % (b.n < 16384 ? b.n : 16384);
            b.b[at] = (uint8_t)(x >> 8);
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (x % 16 == 0)
            b.n = (size_t)(x >> 20) % b.n;
        cr_elfsym_t *e = NULL;
        char err[512] = "";
        int rc = cr_elfsym_open_mem(b.b, b.n, &e, err, sizeof err);
        if (rc == 0) {
            for (size_t i = 0; i < cr_elfsym_count(e); i++) {
                cr_elfsym_sym_t s;
                cr_assert_eq(cr_elfsym_symbol(e, i, &s), 0);
                (void)strlen(s.name);
            }
            char why[512];
            int v = cr_audit_check_elf(e, t, why, sizeof why);
            cr_assert(v == 0 || ((v == 1 || v == CR_E_NOT_FOUND) && why[0]), "%d %s", v, why);
            cr_elfsym_destroy(&e);
            read++;
        } else {
            cr_assert(rc < 0 && err[0] && !e, "iteration %d: rc %d, message '%s'", it, rc, err);
            refused++;
        }
        free(b.b);
    }
    cr_log_info("random damage: %d read, %d refused", read, refused);
    cr_assert_gt(refused, 1000, "the damage reached the structure");
    cr_task_destroy(&t);
    free(good.b);
}
