/* test_hostile_worker.c — the worker's side of its trust boundaries
 * (docs/security.md): what a candidate, a client's task or a local user can
 * make the worker do.
 *
 * Real processes, files and users throughout: the system C compiler, shell
 * scripts standing in for compilers and runners, the real crucible-runner
 * and crucible binaries from the build dir, a tmpfs mounted in the test's
 * own mount namespace, and uid 65534 as the other user. The tests run as
 * root (here and in CI); each one that needs root or a kernel feature says
 * so when it skips. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include "compile.h"
#include "config.h"
#include "file.h"
#include "hash.h"
#include "proc.h"
#include "record.h"
#include "supervisor.h"
#include "timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUNNER CR_TEST_BIN_DIR "/crucible-runner"
#define CRUCIBLE CR_TEST_BIN_DIR "/crucible"

/* What the secret file holds: no compiler message or record may carry it. */
#define S_SECRET "CR_SECRET_5e2f9a71c0d4"

static char s_dir[128]; /* per-test temp dir, mode 0755: the secret in it is world-readable */

static const char s_task_json[] =
    "{\"name\": \"vadd\", \"language\": \"c\",\n"
    " \"signature\": \"void solve(const float *a, const float *b, float *c, int n)\",\n"
    " \"params\": {\"a\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"b\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"c\": {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "            \"n\": {\"role\": \"size\"}},\n"
    " \"cases\": [{\"n\": 1}, {\"n\": 1000}], \"bench_cases\": [1],\n"
    " \"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-6}, \"reference\": \"reference.c\"}\n";
static const char s_ref[] = "void solve(const float *a, const float *b, float *c, int n)\n"
                            "{ for (int i = 0; i < n; i++) c[i] = a[i] + b[i]; }\n";

/* ---- fixtures ---- */

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_cv = PTHREAD_COND_INITIALIZER;
static cr_wjob_t *s_done; /* finished jobs, a list through next; owned */
static cr_supervisor_t *s_sup; /* the pipeline's second stage, when there is one */

static void s_setup(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cr-test-hostile-XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
    cr_assert_eq(chmod(s_dir, 0755), 0);
    cr_assert_eq(cr_hash_global_init(), 0);
    signal(SIGPIPE, SIG_IGN);
    s_done = NULL;
    s_sup = NULL;
}

static void s_teardown(void)
{
    if (!s_dir[0])
        return;
    char cmd[300];
    /* the cache is read-only on purpose */
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", s_dir, s_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", s_dir);
    s_dir[0] = '\0';
}

static char *s_path(const char *name)
{
    char *p = cr_file_join(s_dir, name);
    cr_assert_not_null(p);
    return p;
}

static void s_write(const char *name, const char *text, int mode)
{
    char *p = s_path(name);
    cr_assert_eq(cr_file_write_atomic(p, text, strlen(text)), 0, "write %s", p);
    chmod(p, (mode_t)mode);
    free(p);
}

static void s_put(cr_wjob_t *j, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&s_mu);
    cr_wjob_t **pp = &s_done;
    while (*pp)
        pp = &(*pp)->next;
    j->next = NULL;
    *pp = j;
    pthread_cond_broadcast(&s_cv);
    pthread_mutex_unlock(&s_mu);
}

/* The pool's hand-off to the supervisor, as the worker makes it. */
static void s_to_supervisor(cr_wjob_t *j, void *arg)
{
    (void)arg;
    cr_supervisor_submit(s_sup, j);
}

static cr_wjob_t *s_get(int timeout_s)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_s;
    pthread_mutex_lock(&s_mu);
    while (!s_done && pthread_cond_timedwait(&s_cv, &s_mu, &dl) == 0)
        ;
    cr_wjob_t *j = s_done;
    if (j)
        s_done = j->next;
    pthread_mutex_unlock(&s_mu);
    cr_assert_not_null(j, "no job finished within %d s", timeout_s);
    j->next = NULL;
    return j;
}

static const cr_ident_t s_ident = {"whostile", "testhost", "cpu:test"};

/* The worker's settings as `crucible worker` would have them by default,
 * with the work dir in the test dir. */
static void s_config(cr_config_t *c)
{
    cr_config_defaults(c);
    snprintf(c->work_dir, sizeof c->work_dir, "%s/work", s_dir);
    snprintf(c->runner, sizeof c->runner, "%s", RUNNER);
    snprintf(c->worker_id, sizeof c->worker_id, "whostile");
    c->compile_jobs = 1;
    c->time_budget_s = 0.05;
}

/* A job of the test task with candidate source src and these options. */
static cr_wjob_t *s_job(const char *id, const char *src, double run_timeout_s,
                        double compile_timeout_s)
{
    Crucible__Job job = CRUCIBLE__JOB__INIT;
    Crucible__JobSpec spec = CRUCIBLE__JOB_SPEC__INIT;
    Crucible__TaskBundle tb = CRUCIBLE__TASK_BUNDLE__INIT;
    Crucible__JobOptions op = CRUCIBLE__JOB_OPTIONS__INIT;
    job.batch_id = "b1";
    job.attempt = 1;
    spec.job_id = (char *)id;
    spec.task = "vadd";
    spec.source = (char *)src;
    tb.name = "vadd";
    tb.task_json = (char *)s_task_json;
    tb.reference_source = (char *)s_ref;
    op.run_timeout_s = run_timeout_s;
    op.compile_timeout_s = compile_timeout_s;
    op.time_budget_s = 0.05;
    job.spec = &spec;
    job.task = &tb;
    job.options = &op;
    cr_wjob_t *j = cr_wjob_new(&job);
    cr_assert_not_null(j);
    return j;
}

/* A candidate that adds, with `extra` in front. */
static char *s_candidate(const char *extra)
{
    char *s = NULL;
    cr_assert(asprintf(&s, "%s\n%s", extra, s_ref) > 0);
    return s;
}

/* Compiles and judges src through a pool and a supervisor over the real
 * runner; returns the job with its record (caller destroys). */
static cr_wjob_t *s_judge(const char *src)
{
    cr_config_t cfg;
    s_config(&cfg);
    s_sup = cr_supervisor_new(&cfg, &s_ident, s_put, NULL);
    cr_assert_not_null(s_sup);
    cr_compile_t *c = cr_compile_new(&cfg, s_to_supervisor, NULL);
    cr_assert_not_null(c);
    cr_compile_submit(c, s_job("j1", src, 0, 0));
    cr_wjob_t *j = s_get(120);
    cr_compile_destroy(&c);
    cr_supervisor_destroy(&s_sup);
    cr_assert_not_null(j->rec, "no record: %s", j->message);
    return j;
}

/* 1 when needle is anywhere in the record's wire bytes or the job's text. */
static int s_leaks(const cr_wjob_t *j, const char *needle)
{
    size_t n = crucible__reward_record__get_packed_size(j->rec);
    uint8_t *buf = malloc(n + 1);
    cr_assert_not_null(buf);
    crucible__reward_record__pack(j->rec, buf);
    int found = memmem(buf, n, needle, strlen(needle)) != NULL ||
                strstr(j->message, needle) != NULL ||
                (j->compile_log && strstr(j->compile_log, needle) != NULL);
    free(buf);
    return found;
}

/* ---- (a) a candidate reads a host file through the compiler ---- */

/* A readable file outside the build dir, named by #include and by .incbin:
 * the compile fails cleanly and its content is nowhere in the record. */
Test(hostile, host_files_stay_out_of_the_compile_log, .init = s_setup, .fini = s_teardown,
     .timeout = 240)
{
    s_write("secret.h", S_SECRET " x = 1;\n" S_SECRET " y = 2;\n", 0644);
    char *secret = s_path("secret.h"), *inc = NULL, *bin = NULL;
    cr_assert(asprintf(&inc, "#include \"%s\"", secret) > 0);
    cr_assert(asprintf(&bin,
                       "__asm__(\".section .rodata\\n.globl cr_stolen\\ncr_stolen:\\n"
                       ".incbin \\\"%s\\\"\\n.byte 0\\n.previous\");",
                       secret) > 0);
    const char *how[] = {"#include", ".incbin"};
    char *srcs[] = {s_candidate(inc), s_candidate(bin)};
    for (int i = 0; i < 2; i++) {
        cr_wjob_t *j = s_judge(srcs[i]);
        cr_expect_eq(j->rec->status, CRUCIBLE__STATUS__STATUS_COMPILE_ERROR,
                     "%s of a host file: %s: %s", how[i], cr_status_name(j->rec->status),
                     j->rec->message);
        cr_expect_not(s_leaks(j, S_SECRET), "%s: the secret is in the record: %s\n%s", how[i],
                      j->rec->message, j->compile_log ? j->compile_log : "");
        cr_wjob_destroy(&j);
        free(srcs[i]);
    }
    free(inc);
    free(bin);
    free(secret);
}

/* ---- (b) the compiler's identity ---- */

/* A compiler (the worker's cc setting) that says its uid in its log and
 * refuses to build as root: every part of the job builds, and the log
 * names the sandbox uid. */
Test(hostile, compilers_do_not_run_as_root, .init = s_setup, .fini = s_teardown, .timeout = 120)
{
    if (geteuid() != 0)
        cr_skip_test("the test runs as uid %u, not root: there is no root to drop",
                     (unsigned)geteuid());
    s_write("uidcc",
            "#!/bin/sh\n"
            "if [ \"$1\" = --version ]; then echo 'uidcc 1.0'; exit 0; fi\n"
            "u=$(id -u)\n"
            "echo \"CR_COMPILER_UID=$u\"\n"
            "if [ \"$u\" = 0 ]; then echo 'error: compiling as root'; exit 1; fi\n"
            "exec cc \"$@\"\n",
            0755);
    cr_config_t cfg;
    s_config(&cfg);
    char *cc = s_path("uidcc");
    snprintf(cfg.cc, sizeof cfg.cc, "%s", cc);
    free(cc);
    cr_compile_t *c = cr_compile_new(&cfg, s_put, NULL);
    cr_assert_not_null(c);
    char *src = s_candidate("/* a candidate, not the reference */");
    cr_compile_submit(c, s_job("j1", src, 0, 0));
    cr_wjob_t *j = s_get(60);
    cr_expect_eq(j->status, 0, "%s: %s", cr_status_name(j->status), j->message);
    char want[64];
    snprintf(want, sizeof want, "CR_COMPILER_UID=%lld", (long long)cfg.compile_uid);
    cr_expect(j->compile_log && strstr(j->compile_log, want), "log: %s",
              j->compile_log ? j->compile_log : "(none)");
    cr_wjob_destroy(&j);
    cr_compile_destroy(&c);
    free(src);
}

/* A compiler that leaves a process behind in a session of its own: it is
 * gone once the compile is (the box's PID namespace), so nothing of the
 * box's uid can touch the build dir while the worker removes it. */
Test(hostile, compilers_leave_nothing_behind, .init = s_setup, .fini = s_teardown,
     .timeout = 120)
{
    s_write("leavecc",
            "#!/bin/sh\n"
            "if [ \"$1\" = --version ]; then echo 'leavecc 1.0'; exit 0; fi\n"
            "setsid sleep 97.25 </dev/null >/dev/null 2>&1 &\n"
            "exec cc \"$@\"\n",
            0755);
    cr_config_t cfg;
    s_config(&cfg);
    char *cc = s_path("leavecc");
    snprintf(cfg.cc, sizeof cfg.cc, "%s", cc);
    free(cc);
    cr_compile_t *c = cr_compile_new(&cfg, s_put, NULL);
    cr_assert_not_null(c);
    cr_compile_submit(c, s_job("j1", s_ref, 0, 0));
    cr_wjob_t *j = s_get(60);
    cr_expect_eq(j->status, 0, "%s: %s", cr_status_name(j->status), j->message);
    cr_wjob_destroy(&j);
    cr_compile_destroy(&c);
    int left = 1;
    for (int i = 0; i < 50 && left; i++) { /* the kernel reaps the namespace at once; allow 5 s */
        left = system("pgrep -f 'sleep 97[.]25' >/dev/null") == 0;
        if (left)
            cr_time_sleep_ms(100);
    }
    cr_expect_not(left, "a process the compiler left behind is still running");
    if (left && system("pkill -f 'sleep 97[.]25'") != 0)
        fprintf(stderr, "could not stop the leftover sleep\n");
}

/* ---- (c) the work dir ---- */

/* Starts `crucible worker` on work dir wd; 1 when it refused to start
 * within 20 s, with its stderr in out. */
static int s_worker_refuses(const char *wd, char *out, size_t len)
{
    char a_wd[512], a_ep[512];
    snprintf(a_wd, sizeof a_wd, "--work-dir=%s", wd);
    snprintf(a_ep, sizeof a_ep, "--workers-endpoint=ipc://%s/workers.ipc", s_dir);
    char *const argv[] = {CRUCIBLE, "worker", a_wd, a_ep, "--backends=c", NULL};
    cr_proc_opts_t o = {.argv = argv, .merge_stderr = 1, .out_cap = 16384, .timeout_ms = 20000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    snprintf(out, len, "%s", r.out);
    int refused = !r.timed_out && r.exited && r.exit_code != 0;
    cr_proc_result_close(&r);
    return refused;
}

/* A work dir another user made first, one anyone may write, and a symlink
 * to a directory: refused at start, the message naming path, owner, mode
 * and the problem. */
Test(hostile, foreign_work_dirs_are_refused, .init = s_setup, .fini = s_teardown, .timeout = 120)
{
    if (geteuid() != 0)
        cr_skip_test("the test runs as uid %u, not root: it cannot make a dir of another user",
                     (unsigned)geteuid());
    char out[16384];
    char *theirs = s_path("theirs"), *open_dir = s_path("open"), *target = s_path("target"),
         *link = s_path("link");
    cr_assert_eq(mkdir(theirs, 0700), 0);
    cr_assert_eq(chown(theirs, 65534, 65534), 0);
    cr_assert_eq(mkdir(open_dir, 0700), 0);
    cr_assert_eq(chmod(open_dir, 0777), 0);
    cr_assert_eq(mkdir(target, 0700), 0);
    cr_assert_eq(symlink(target, link), 0);

    cr_expect(s_worker_refuses(theirs, out, sizeof out), "started on a dir of uid 65534: %s",
              out);
    cr_expect(strstr(out, theirs) && strstr(out, "owned by another user") &&
                  strstr(out, "uid 65534"),
              "%s", out);
    cr_expect(s_worker_refuses(open_dir, out, sizeof out), "started on a 0777 dir: %s", out);
    cr_expect(strstr(out, open_dir) && strstr(out, "writable by group or others") &&
                  strstr(out, "0777"),
              "%s", out);
    cr_expect(s_worker_refuses(link, out, sizeof out), "started on a symlink: %s", out);
    cr_expect(strstr(out, link) && strstr(out, "symlink"), "%s", out);
    free(theirs);
    free(open_dir);
    free(target);
    free(link);
}

/* ---- (d) the cache's bound ---- */

/* Bytes of the objects in the cache, and how many entries. */
static long long s_cache_bytes(const char *work, int *entries)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "find '%s/cache' -name lib.so -printf '%%s\\n'", work);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    long long total = 0, v;
    *entries = 0;
    while (fscanf(p, "%lld", &v) == 1) {
        total += v;
        (*entries)++;
    }
    pclose(p);
    return total;
}

/* With cache-bytes set to about four objects, ten candidates leave the
 * cache under the bound: the least recently used go, but never the one a
 * job still holds, even though it is the oldest. */
Test(hostile, cache_stays_under_its_bound, .init = s_setup, .fini = s_teardown, .timeout = 240)
{
    cr_config_t cfg;
    s_config(&cfg);
    /* one object's size, from a pool without a bound */
    cr_assert_eq(cr_config_set(&cfg, "cache-bytes", "0", NULL, 0), 0, "no cache-bytes setting");
    cr_compile_t *c = cr_compile_new(&cfg, s_put, NULL);
    cr_assert_not_null(c);
    char *src = s_candidate("/* size probe */");
    cr_compile_submit(c, s_job("probe", src, 0, 0));
    cr_wjob_t *j = s_get(60);
    cr_assert_eq(j->status, 0, "%s", j->message);
    struct stat st;
    cr_assert_eq(stat(j->so[CR_SO_CANDIDATE], &st), 0);
    cr_wjob_destroy(&j);
    cr_compile_destroy(&c);
    free(src);
    long long bound = 4 * (long long)st.st_size + st.st_size / 2;

    char num[32];
    snprintf(num, sizeof num, "%lld", bound);
    cr_assert_eq(cr_config_set(&cfg, "cache-bytes", num, NULL, 0), 0);
    c = cr_compile_new(&cfg, s_put, NULL);
    cr_assert_not_null(c);
    char *held_src = s_candidate("/* held */");
    cr_compile_submit(c, s_job("held", held_src, 0, 0));
    cr_wjob_t *held = s_get(60);
    cr_assert_eq(held->status, 0, "%s", held->message);
    char *held_so = strdup(held->so[CR_SO_CANDIDATE]);
    char *first_so = NULL;
    int entries = 0;
    for (int i = 0; i < 10; i++) {
        char mark[64], id[16];
        snprintf(mark, sizeof mark, "/* candidate %d */", i);
        snprintf(id, sizeof id, "c%d", i);
        src = s_candidate(mark);
        cr_compile_submit(c, s_job(id, src, 0, 0));
        j = s_get(60);
        cr_expect_eq(j->status, 0, "%s", j->message);
        if (i == 0 && j->so[CR_SO_CANDIDATE])
            first_so = strdup(j->so[CR_SO_CANDIDATE]);
        cr_wjob_destroy(&j);
        free(src);
        long long bytes = s_cache_bytes(cfg.work_dir, &entries);
        cr_expect_leq(bytes, bound, "after %d: %lld bytes in %d entries, bound %lld", i, bytes,
                      entries, bound);
        cr_expect(cr_file_exists(held_so), "the held object was evicted after %d", i);
    }
    cr_expect_lt(entries, 10, "nothing was evicted");
    cr_expect(first_so && !cr_file_exists(first_so), "the least recently used one is still there");
    cr_wjob_destroy(&held);
    /* the held entry is still a hit */
    cr_compile_submit(c, s_job("again", held_src, 0, 0));
    j = s_get(60);
    cr_expect_eq(j->status, 0, "%s", j->message);
    cr_expect_eq(j->cache_hit, 1, "the held object was rebuilt");
    cr_wjob_destroy(&j);
    cr_compile_destroy(&c);
    free(held_src);
    free(held_so);
    free(first_so);
}

/* ---- (e) a full disk ---- */

/* The work dir on a small tmpfs (in this test's own mount namespace) that
 * is then filled: the job is INFRA_ERROR, not a compile error or a broken
 * task, and the pool stays drained after the space comes back. */
Test(hostile, full_disk_is_infra_error, .init = s_setup, .fini = s_teardown, .timeout = 120)
{
    if (geteuid() != 0)
        cr_skip_test("the test runs as uid %u, not root: it cannot mount a tmpfs",
                     (unsigned)geteuid());
    if (unshare(CLONE_NEWNS) != 0)
        cr_skip_test("no mount namespace for the test (%s)", strerror(errno));
    cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "%s", strerror(errno));
    char *disk = s_path("disk");
    cr_assert_eq(mkdir(disk, 0700), 0);
    cr_assert_eq(mount("cr-test-disk", disk, "tmpfs", 0, "size=4m,mode=0700"), 0, "%s",
                 strerror(errno));
    cr_config_t cfg;
    s_config(&cfg);
    snprintf(cfg.work_dir, sizeof cfg.work_dir, "%s/work", disk);
    cr_compile_t *c = cr_compile_new(&cfg, s_put, NULL);
    cr_assert_not_null(c);

    /* fill it, then give back three pages: room for the sources, not for
     * the compiler's temporaries and object */
    char *fill = cr_file_join(disk, "fill");
    int fd = open(fill, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    static char block[65536];
    off_t size = 0;
    for (ssize_t w; (w = write(fd, block, sizeof block)) > 0;)
        size += w;
    for (ssize_t w; (w = write(fd, block, 512)) > 0;)
        size += w;
    cr_assert_eq(ftruncate(fd, size > 12288 ? size - 12288 : 0), 0);
    close(fd);

    char *src = s_candidate("/* on a full disk */");
    cr_compile_submit(c, s_job("full", src, 0, 0));
    cr_wjob_t *j = s_get(60);
    cr_expect_eq(j->status, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s: %s",
                 cr_status_name(j->status), j->message);
    cr_wjob_destroy(&j);

    /* space again: the pool stays drained until the worker restarts */
    cr_assert_eq(unlink(fill), 0);
    char *src2 = s_candidate("/* after the disk was full */");
    cr_compile_submit(c, s_job("after", src2, 0, 0));
    j = s_get(60);
    cr_expect_eq(j->status, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s: %s",
                 cr_status_name(j->status), j->message);
    cr_expect(strstr(j->message, "drained") && strstr(j->message, "full"), "%s", j->message);
    cr_wjob_destroy(&j);
    cr_compile_destroy(&c);
    umount2(disk, MNT_DETACH);
    free(src);
    free(src2);
    free(fill);
    free(disk);
}

/* ---- (f) caps, not defaults ---- */

/* A runner that never answers: the job asks for 30 s, the worker's cap is
 * 1 s, and the runner is killed after about 1 s: TIMEOUT. */
Test(hostile, run_timeout_is_a_cap, .init = s_setup, .fini = s_teardown, .timeout = 60)
{
    s_write("sleepy_runner", "#!/bin/sh\nexec sleep 60\n", 0755);
    cr_config_t cfg;
    s_config(&cfg);
    char *runner = s_path("sleepy_runner");
    snprintf(cfg.runner, sizeof cfg.runner, "%s", runner);
    free(runner);
    cfg.run_timeout_s = 1;
    s_sup = cr_supervisor_new(&cfg, &s_ident, s_put, NULL);
    cr_assert_not_null(s_sup);
    cr_wjob_t *j = s_job("slow", s_ref, 30, 0);
    j->so[CR_SO_CANDIDATE] = s_path("candidate.so");
    j->so[CR_SO_REFERENCE] = s_path("reference.so");
    j->compile_ok = 1;
    j->t_compiled = cr_time_now_ms();
    int64_t t0 = cr_time_mono_ms();
    cr_supervisor_submit(s_sup, j);
    j = s_get(50);
    int64_t ms = cr_time_mono_ms() - t0;
    cr_expect_eq(j->status, CRUCIBLE__STATUS__STATUS_TIMEOUT, "%s: %s",
                 cr_status_name(j->status), j->message);
    cr_expect_lt(ms, 10000, "the runner ran %lld ms: the job's 30 s beat the worker's 1 s",
                 (long long)ms);
    cr_wjob_destroy(&j);
    cr_supervisor_destroy(&s_sup);
}

/* The same for the compile timeout: a compiler that sleeps on a marked
 * candidate is killed at the worker's 1 s, not the job's 30 s. */
Test(hostile, compile_timeout_is_a_cap, .init = s_setup, .fini = s_teardown, .timeout = 60)
{
    s_write("sleepycc",
            "#!/bin/sh\n"
            "if [ \"$1\" = --version ]; then echo 'sleepycc 1.0'; exit 0; fi\n"
            "if grep -q SLEEP kernel.c 2>/dev/null; then exec sleep 60; fi\n"
            "exec cc \"$@\"\n",
            0755);
    cr_config_t cfg;
    s_config(&cfg);
    char *cc = s_path("sleepycc");
    snprintf(cfg.cc, sizeof cfg.cc, "%s", cc);
    free(cc);
    cfg.compile_timeout_s = 1;
    cr_compile_t *c = cr_compile_new(&cfg, s_put, NULL);
    cr_assert_not_null(c);
    char *src = s_candidate("/* SLEEP */");
    int64_t t0 = cr_time_mono_ms();
    cr_compile_submit(c, s_job("slow", src, 0, 30));
    cr_wjob_t *j = s_get(50);
    int64_t ms = cr_time_mono_ms() - t0;
    cr_expect_eq(j->status, CRUCIBLE__STATUS__STATUS_COMPILE_TIMEOUT, "%s: %s",
                 cr_status_name(j->status), j->message);
    cr_expect_lt(ms, 10000, "the compiler ran %lld ms: the job's 30 s beat the worker's 1 s",
                 (long long)ms);
    cr_wjob_destroy(&j);
    cr_compile_destroy(&c);
    free(src);
}
