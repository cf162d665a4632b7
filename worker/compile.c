/* compile.c — see compile.h.
 *
 * Design notes.
 *  1. A job is in exactly one place: the queue, a thread's active slot, or
 *     handed to done. Moving it out of a slot and calling done happen under
 *     the pool's lock, so cr_compile_cancel sees every job still here.
 *  2. A cache entry is a directory holding lib.so. It is built elsewhere and
 *     appears under cache/ by one rename(2); an entry that exists is whole.
 *     When two builders race, the second rename fails (EEXIST/ENOTEMPTY) and
 *     the second builder uses the first one's entry: same key, same bytes.
 *  3. A compiler that cannot be started, or a work dir that cannot be
 *     written, is the worker's fault: INFRA_ERROR, never COMPILE_ERROR, so a
 *     candidate is not punished for a broken machine.
 *  4. One key is built by one thread of the pool at a time. A GRPO batch
 *     assigns a task's samples together, so its first compile wave had
 *     every thread build the task's reference (and baseline) beside its own
 *     candidate: eight matmul_bf16 jobs built reference, cuBLAS baseline and
 *     candidate, three nvcc runs each, 7 s per job on a 16-core H200 host
 *     whose 12 threads all compiled, while the GPU waited (bench/RESULTS.md,
 *     session 11). A thread whose key another thread is building
 *     (building[], under mu) builds the job's other parts first and then
 *     waits on built_cv for that build to end: the entry it published is
 *     then a cache hit, and a compile error or timeout is the waiter's too
 *     (failed[], with the compiler's message and output), so N jobs of a
 *     task whose reference does not build wait one build, not N in a row.
 *     A build ended by a cancel or by stop is not shared: the waiter builds
 *     again. Waiting ends on stop or on the job's cancel (both broadcast),
 *     and neither starts a build. Workers that share a work dir (--gpus)
 *     each have their own pool: there the cache's rename (note 2) is what
 *     keeps their builds apart.
 *  5. Every compiler run (`--version` too) is in the box (box.h). Its
 *     build dir build/<key><rnd> is handed to the box's uid; what the
 *     compiler wrote is read back from there with O_NOFOLLOW, copied into
 *     build/<key><rnd>.pub, a dir only the worker can write, and that copy
 *     is published: a process the compiler left behind cannot reach it.
 *  6. Pins and eviction. A job holds each of its objects open under a
 *     shared flock (cr_wjob_t.so_fd). The evictor takes an entry only with
 *     an exclusive flock that does not wait, renames it away under the
 *     lock, then removes it; a reader that took its shared lock after that
 *     finds the path gone or another file there (s_pin) and builds again.
 *     flock works across processes, so workers sharing a work dir (--gpus)
 *     never evict each other's objects in use. Recency is the entry dir's
 *     mtime, set on every hit. */
#define _GNU_SOURCE
#include "compile.h"

#include "box.h"
#include "error.h"
#include "file.h"
#include "hash.h"
#include "log.h"
#include "proc.h"
#include "record.h"
#include "timeutil.h"
#include "workdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* ---- the language table: everything language-specific lives here ---- */

typedef struct {
    const char *language;      /* task.json "language" */
    const char *ext;           /* of the written sources: the compiler picks its front end by it */
    size_t cc_offset;          /* offset of the compiler setting in cr_config_t */
    const char *const *flags;  /* before "-o lib.so" */
    const char *const *libs;   /* after the translation unit */
    int gpu_arch;              /* 1: add -arch=<the worker's GPU architecture> */
} s_lang_t;

/* -Bsymbolic: the candidate's own symbols bind inside its object, so a
 * candidate and a reference that both define solve() cannot interpose. */
static const char *const s_c_flags[] = {"-O2", "-std=gnu11", "-shared", "-fPIC",
                                        "-Wl,-Bsymbolic", NULL};
static const char *const s_c_libs[] = {"-lm", NULL};
/* CR_CUDA_COMPILE_FLAGS (worker/runner/cuda_judge.h), split into words.
 * -cudart shared: the object imports the runtime API from libcudart.so
 * instead of carrying a static copy, so its dynamic symbol table lists
 * exactly what the candidate calls (the link audit reads it), and candidate,
 * reference and baseline share one runtime instance. -DCCCL_DISABLE_NVTX:
 * CUB and Thrust otherwise import dlopen/dlsym/getenv for NVTX tool
 * injection (a library named in the environment), which the audit refuses. */
static const char *const s_cuda_flags[] = {"-O3", "-std=c++17", "-Xcompiler", "-fPIC",
                                           "-shared", "-cudart", "shared", "-Xlinker",
                                           "-Bsymbolic", "-DCCCL_DISABLE_NVTX", NULL};
static const char *const s_cuda_libs[] = {NULL};

/* torch (docs/torch.md): the "compiler" is crucible-torch beside this
 * program; it checks the problem or candidate and builds a candidate's
 * load_inline extensions, and its lib.so is a JSON object the Python
 * executor loads. */
static const char *const s_torch_flags[] = {"compile", NULL};
static const char *const s_torch_libs[] = {NULL};
#define S_CC_BESIDE_SELF ((size_t)-1) /* cc_offset: a program beside this one */

static const s_lang_t s_langs[] = {
    {"c", ".c", offsetof(cr_config_t, cc), s_c_flags, s_c_libs, 0},
    {"cuda", ".cu", offsetof(cr_config_t, nvcc), s_cuda_flags, s_cuda_libs, 1},
    {"torch", ".py", S_CC_BESIDE_SELF, s_torch_flags, s_torch_libs, 0},
};
#define S_NLANGS (sizeof s_langs / sizeof s_langs[0])

/* 10 s for `<cc> --version`: a compiler that cannot say its version in that
 * time will not compile anything either. */
#define S_VERSION_TIMEOUT_MS 10000

static const s_lang_t *s_lang_find(const char *language)
{
    for (size_t i = 0; i < S_NLANGS; i++)
        if (language && strcmp(s_langs[i].language, language) == 0)
            return &s_langs[i];
    return NULL;
}

static const char *s_lang_cc(const cr_config_t *cfg, const s_lang_t *l)
{
    if (l->cc_offset == S_CC_BESIDE_SELF) {
        /* written once, before the pool's threads start (cr_compile_new) */
        static char path[PATH_MAX];
        if (!path[0]) {
            char self[PATH_MAX - 32];
            ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
            self[n > 0 ? n : 0] = '\0';
            char *slash = strrchr(self, '/');
            if (slash)
                *slash = '\0';
            snprintf(path, sizeof path, "%s/crucible-%s", n > 0 ? self : ".", l->language);
        }
        return path;
    }
    const char *cc = (const char *)cfg + l->cc_offset;
    return cc[0] ? cc : "cc";
}

/* 1 when cmd is a path to a program or a program on PATH. */
static int s_on_path(const char *cmd)
{
    if (strchr(cmd, '/'))
        return access(cmd, X_OK) == 0;
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, cmd);
        if (n && access(buf, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

/* ---- jobs ---- */

cr_wjob_t *cr_wjob_new(const Crucible__Job *job)
{
    if (!job || !job->spec || !job->task)
        return NULL;
    cr_wjob_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    /* deep copy through pack/unpack: the Assign envelope is freed right after */
    size_t n = crucible__job__get_packed_size(job);
    uint8_t *buf = malloc(n ? n : 1);
    if (buf) {
        crucible__job__pack(job, buf);
        j->job = crucible__job__unpack(NULL, n, buf);
        free(buf);
    }
    if (!j->job || !j->job->spec || !j->job->task) {
        if (j->job)
            crucible__job__free_unpacked(j->job, NULL);
        free(j);
        return NULL;
    }
    for (int i = 0; i < CR_SO__COUNT; i++)
        j->so_fd[i] = -1;
    j->t_assigned = cr_time_now_ms();
    return j;
}

void cr_wjob_destroy(cr_wjob_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_wjob_t *j = *self_p;
    if (j->job)
        crucible__job__free_unpacked(j->job, NULL);
    cr_task_destroy(&j->task);
    for (int i = 0; i < CR_SO__COUNT; i++) {
        free(j->so[i]);
        if (j->so_fd[i] >= 0)
            close(j->so_fd[i]); /* the pin ends with it (note 6) */
    }
    free(j->compile_log);
    if (j->report)
        crucible__reward_record__free_unpacked(j->report, NULL);
    if (j->rec)
        crucible__reward_record__free_unpacked(j->rec, NULL);
    free(j);
    *self_p = NULL;
}

void cr_wjob_fail(cr_wjob_t *j, int status, const char *fmt, ...)
{
    if (j->status != 0)
        return;
    j->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->message, sizeof j->message, fmt, ap);
    va_end(ap);
}

const char *cr_wjob_name(const cr_wjob_t *j, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", j->job->batch_id, j->job->spec->job_id);
    return buf;
}

int cr__wjob_matches(const cr_wjob_t *j, const char *batch_id, const char *job_id)
{
    if (!batch_id || strcmp(j->job->batch_id, batch_id) != 0)
        return 0;
    return !job_id || !job_id[0] || strcmp(j->job->spec->job_id, job_id) == 0;
}

double cr__wjob_cap(const cr_wjob_t *j, const char *what, double asked, double cap,
                    double fallback)
{
    if (!(cap > 0))
        cap = fallback;
    if (asked > 0 && asked <= cap)
        return asked;
    if (asked > cap) {
        char name[300];
        cr_debug("job %s: %s of %g s asked, held to the worker's cap of %g s",
                 cr_wjob_name(j, name, sizeof name), what, asked, cap);
    }
    return cap;
}

void cr__note_pid(void *arg)
{
    __atomic_store_n((pid_t *)arg, getpid(), __ATOMIC_SEQ_CST);
}

void cr__kill_slot(pid_t *slot)
{
    pid_t pid = slot ? __atomic_load_n(slot, __ATOMIC_SEQ_CST) : 0;
    if (pid > 0)
        kill(-pid, SIGKILL);
}

void cr__wqueue_push(cr__wqueue_t *q, cr_wjob_t *j)
{
    j->next = NULL;
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
}

cr_wjob_t *cr__wqueue_pop(cr__wqueue_t *q)
{
    cr_wjob_t *j = q->head;
    if (j) {
        q->head = j->next;
        if (!q->head)
            q->tail = NULL;
        j->next = NULL;
    }
    return j;
}

cr_wjob_t *cr__wqueue_pop_near(cr__wqueue_t *q, const char *ref)
{
    cr_wjob_t *head = q->head;
    if (!head || !ref || head->passed_over >= CR_WQUEUE_NEAR_PASSES)
        return cr__wqueue_pop(q);
    cr_wjob_t *prev = NULL, *j = head;
    int found = 0;
    for (int n = 0; j && n < CR_WQUEUE_NEAR_LOOK && !found; n++)
        if (j->so[CR_SO_REFERENCE] && strcmp(j->so[CR_SO_REFERENCE], ref) == 0)
            found = 1;
        else
            prev = j, j = j->next;
    if (!found || j == head)
        return cr__wqueue_pop(q);
    for (cr_wjob_t *k = head; k != j; k = k->next)
        k->passed_over++;
    prev->next = j->next;
    if (q->tail == j)
        q->tail = prev;
    j->next = NULL;
    return j;
}

cr_wjob_t *cr__wqueue_take(cr__wqueue_t *q, const char *batch_id, const char *job_id, int *n)
{
    cr__wqueue_t keep = {NULL, NULL}, gone = {NULL, NULL};
    *n = 0;
    for (cr_wjob_t *j; (j = cr__wqueue_pop(q));) {
        if (cr__wjob_matches(j, batch_id, job_id)) {
            cr__wqueue_push(&gone, j);
            (*n)++;
        } else {
            cr__wqueue_push(&keep, j);
        }
    }
    *q = keep;
    return gone.head;
}

/* ---- the pool ---- */

/* S_BUILD_BUSY: another thread is building the key and the caller would
 * rather not wait now (note 4). */
typedef enum { S_BUILD_OK, S_BUILD_ERROR, S_BUILD_TIMEOUT, S_BUILD_INFRA, S_BUILD_BUSY } s_build_t;

/* A build that failed, kept for the threads that waited for it (note 4).
 * Should 64 more builds fail before a waiter wakes, it finds no entry and
 * builds again: slower, not wrong. */
#define S_FAILED_KEEP 64
typedef struct {
    char key[CR_HASH_HEX_LEN + 1]; /* "" = empty */
    s_build_t st;                  /* S_BUILD_ERROR or S_BUILD_TIMEOUT */
    char msg[700];
    char *log; /* compiler output; owned, may be NULL */
} s_failed_t;

typedef struct {
    cr_compile_t *pool; /* not owned */
    int index;          /* into active[] and pids[] */
} s_thread_arg_t;

struct cr_compile {
    const cr_config_t *cfg;      /* not owned; outlives the pool */
    cr_compile_done_fn done;     /* where finished jobs go */
    void *done_arg;              /* passed to done */
    char *build_dir;             /* <work_dir>/build; owned */
    char *cache_dir;             /* <work_dir>/cache; owned */
    char *ident[S_NLANGS];       /* `<cc> --version` per language; owned; NULL = not served */
    char compiler[256];          /* first line of the first served identity, for Ready */
    char arch_flag[64];          /* "-arch=sm_90" for GPU languages; "" = none */
    char rpath_flag[CR_CONFIG_STR + 32]; /* "-Xlinker=-rpath,<toolkit lib>"; "" = none */
    cr_box_t *box;               /* where every compiler runs (box.h); owned */
    cpu_set_t cpus;              /* compilers' cores: the worker's less the runner's */
    int have_cpus;               /* cpus is set (the worker has a core to spare) */
    /* --- shared state, under mu --- */
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* signalled when a job is queued or on stop */
    pthread_cond_t built_cv;     /* broadcast when a build ends, on cancel and on stop */
    char (*building)[CR_HASH_HEX_LEN + 1]; /* per thread: key it is building, "" = none (note 4) */
    s_failed_t failed[S_FAILED_KEEP]; /* builds that failed while others waited (note 4), a ring */
    int failed_next;                  /* the ring's next slot */
    int drained;                 /* a full disk: every job ends INFRA_ERROR from now on */
    char drained_why[512];       /* what was full, for the log and every job's message */
    pthread_mutex_t evict_mu;    /* one eviction pass at a time (note 6) */
    cr__wqueue_t queue;          /* jobs waiting for a thread */
    int npending;                /* queued + being compiled */
    int stop;                    /* threads leave when set */
    int nthreads;                /* threads running */
    int nslots;                  /* length of threads, targs, active, pids */
    pthread_t *threads;          /* owned */
    s_thread_arg_t *targs;       /* owned */
    cr_wjob_t **active;          /* per thread: job being compiled; not owned */
    pid_t *pids;                 /* per thread: compiler pid, 0 = none; MAP_SHARED */
};

static void s_box_child(void *arg);

/* Reads `<cc> --version` once, in the box (note 5): part of every cache
 * key, so a compiler upgrade never serves objects built by the old one. */
static char *s_compiler_ident(cr_compile_t *c, const char *cc)
{
    char *const argv[] = {(char *)cc, "--version", NULL};
    char dir[PATH_MAX], rnd[32];
    cr_random_id(".version-", rnd, sizeof rnd);
    snprintf(dir, sizeof dir, "%s/%s", c->build_dir, rnd);
    cr_box_run_t run = {.ruleset = -1};
    char *s = NULL;
    int rc = mkdir(dir, 0700) == 0
                 ? cr_box_prepare(c->box, dir, S_VERSION_TIMEOUT_MS / 1000, &run)
                 : -errno;
    if (rc == 0) {
        cr_proc_opts_t o = {.argv = argv, .envp = run.envp, .cwd = dir, .merge_stderr = 1,
                            .out_cap = 4096, .timeout_ms = S_VERSION_TIMEOUT_MS,
                            .limits = &run.limits, .child_setup = s_box_child, .child_arg = &run};
        cr_proc_result_t r;
        if (cr_proc_run(&o, &r) == 0) {
            if (r.exited && r.exit_code == 0 && r.out_len > 0)
                s = strdup(r.out);
            cr_proc_result_close(&r);
        }
    }
    cr_box_run_close(&run);
    cr_file_rmtree(dir);
    if (!s) {
        cr_warn("compiler '%s' did not answer --version: its compiles will fail as INFRA_ERROR",
                cc);
        size_t n = strlen(cc) + 16;
        s = malloc(n);
        if (s)
            snprintf(s, n, "%s (unknown)", cc);
    }
    return s;
}

/* The line of a compiler log a person wants first: the first one that says
 * "error", else the first non-empty one. Copied, one line, into out. */
static void s_first_error(const char *log, char *out, size_t len)
{
    const char *pick = NULL;
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (!pick && n > 0)
            pick = p;
        if (memmem(p, n, "error", 5)) {
            pick = p;
            break;
        }
        p = e ? e + 1 : NULL;
    }
    if (!pick) {
        snprintf(out, len, "(no compiler output)");
        return;
    }
    size_t n = strcspn(pick, "\n");
    if (n >= len)
        n = len - 1;
    memcpy(out, pick, n);
    out[n] = '\0';
}

/* What a compiler child does before exec (async-signal-safe calls only). */
typedef struct {
    pid_t *slot;              /* cr__note_pid's */
    const cpu_set_t *cpus;    /* its cores, or NULL: the worker's */
    const cr_box_run_t *run;  /* its box (note 5) */
} s_child_t;

/* The runner's timing thread is pinned to one core (config "cpu", or the
 * first of the worker's: cr_topo_pin_self), and a compiler sharing that
 * core stretches every sample's host side (polls, syncs, launches) while a
 * batch still compiles. So compilers run on the worker's other cores, at
 * nice S_COMPILE_NICE, and whatever is left of a timing run's core is the
 * runner's. */
#define S_COMPILE_NICE 10 /* below the runner, above idle work */
static void s_compile_child(void *arg)
{
    const s_child_t *a = arg;
    cr__note_pid(a->slot);
    if (a->cpus)
        sched_setaffinity(0, sizeof *a->cpus, a->cpus);
    setpriority(PRIO_PROCESS, 0, S_COMPILE_NICE);
    if (cr_box_enter(a->run) != 0)
        _exit(126); /* the step is in the box's shared word: cr_box_failed */
}

/* `--version`'s child: the box only. */
static void s_box_child(void *arg)
{
    if (cr_box_enter(arg) != 0)
        _exit(126);
}

/* The worker's cores less the runner's (cfg cpu, or the first one), into
 * c->cpus; none when that would leave no core. */
static void s_compile_cpus(cr_compile_t *c, int runner_cpu)
{
    cpu_set_t cur;
    c->have_cpus = 0;
    if (sched_getaffinity(0, sizeof cur, &cur) != 0)
        return;
    int cpu = runner_cpu;
    if (cpu < 0)
        for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &cur); cpu++) {
        }
    if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &cur) || CPU_COUNT(&cur) < 2)
        return;
    c->cpus = cur;
    CPU_CLR(cpu, &c->cpus);
    c->have_cpus = 1;
}

/* The runner must find the libcudart.so that nvcc linked against without
 * LD_LIBRARY_PATH: the object gets an rpath to the toolkit's lib64 (next to
 * nvcc's bin/, symlinks resolved). Leaves out "" when that folder has no
 * libcudart.so; the dynamic loader's search path must then provide it. */
static void s_cudart_rpath(const char *nvcc, char *out, size_t len)
{
    out[0] = '\0';
    char found[PATH_MAX] = "", real[PATH_MAX];
    if (strchr(nvcc, '/')) {
        snprintf(found, sizeof found, "%s", nvcc);
    } else {
        const char *path = getenv("PATH");
        char dirs[4096];
        snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
        char *save = NULL;
        for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            snprintf(found, sizeof found, "%s/%s", d, nvcc);
            if (access(found, X_OK) == 0)
                break;
            found[0] = '\0';
        }
    }
    if (!found[0] || !realpath(found, real))
        return;
    char *slash = strrchr(real, '/'); /* .../bin/nvcc -> .../bin */
    if (slash)
        *slash = '\0';
    if ((slash = strrchr(real, '/'))) /* .../bin -> toolkit root */
        *slash = '\0';
    char lib[PATH_MAX + 32];
    snprintf(lib, sizeof lib, "%s/lib64/libcudart.so", real);
    if (access(lib, R_OK) == 0)
        snprintf(out, len, "-Xlinker=-rpath,%.*s/lib64", (int)(len - 32), real);
}

/* Flags that depend on the worker or the task: the GPU architecture and the
 * libraries the task allows. Fills out (at most max), returns the count. */
static int s_extra_flags(const cr_compile_t *c, const s_lang_t *l, const cr_task_t *task,
                         const char **out, int max)
{
    int n = 0;
    if (l->gpu_arch && c->arch_flag[0] && n < max)
        out[n++] = c->arch_flag;
    if (l->gpu_arch && c->rpath_flag[0] && n < max)
        out[n++] = c->rpath_flag;
    /* cr_task_libs: the link audit accepts exactly what is linked here */
    for (int i = 0; i < task->nallow; i++) {
        const cr_task_lib_t *lib = cr_task_lib_find(task->allow[i]);
        if (lib && n < max)
            out[n++] = lib->link_flag;
    }
    return n;
}

/* The failed[] entry for key, or NULL; under c->mu. */
static s_failed_t *s_failed_find(cr_compile_t *c, const char *key)
{
    for (int i = 0; i < S_FAILED_KEEP; i++)
        if (!strcmp(c->failed[i].key, key))
            return &c->failed[i];
    return NULL;
}

/* Claims key for thread ti (note 4). 1: claimed, the caller builds; 0: *out
 * says why not: S_BUILD_OK with *hit, the entry is there; S_BUILD_ERROR or
 * S_BUILD_TIMEOUT, the build this thread waited for failed (msg, *log_out);
 * S_BUILD_BUSY, another thread builds it and wait is 0; S_BUILD_INFRA, the
 * pool stops or the job is cancelled. */
static int s_claim(cr_compile_t *c, int ti, const char *key, const char *so, int wait,
                   const int *cancelled, s_build_t *out, int *hit, char **log_out, char *msg,
                   size_t msglen)
{
    int claimed = 0, waited = 0;
    s_failed_t *f;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        if (c->stop || __atomic_load_n(cancelled, __ATOMIC_SEQ_CST)) {
            snprintf(msg, msglen, "compile not started: the worker stops or the job was cancelled");
            *out = S_BUILD_INFRA;
            break;
        }
        if (cr_file_exists(so)) {
            *hit = 1;
            *out = S_BUILD_OK;
            break;
        }
        if (waited && (f = s_failed_find(c, key))) {
            snprintf(msg, msglen, "%s", f->msg);
            *log_out = f->log ? strdup(f->log) : NULL;
            *out = f->st;
            break;
        }
        int other = 0;
        for (int i = 0; i < c->nslots && !other; i++)
            other = i != ti && strcmp(c->building[i], key) == 0;
        if (!other) {
            memcpy(c->building[ti], key, sizeof c->building[ti]);
            if ((f = s_failed_find(c, key))) /* an older failure: this build decides now */
                f->key[0] = '\0';
            claimed = 1;
            break;
        }
        if (!wait) {
            *out = S_BUILD_BUSY;
            break;
        }
        waited = 1;
        pthread_cond_wait(&c->built_cv, &c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return claimed;
}

/* Ends thread ti's claim (note 4): a compile error or timeout of a build
 * that neither a cancel nor stop ended is kept for its waiters. */
static void s_release(cr_compile_t *c, int ti, s_build_t st, const int *cancelled,
                      const char *msg, const char *log)
{
    pthread_mutex_lock(&c->mu);
    if ((st == S_BUILD_ERROR || st == S_BUILD_TIMEOUT) && !c->stop &&
        !__atomic_load_n(cancelled, __ATOMIC_SEQ_CST)) {
        s_failed_t *f = &c->failed[c->failed_next];
        c->failed_next = (c->failed_next + 1) % S_FAILED_KEEP;
        free(f->log);
        memcpy(f->key, c->building[ti], sizeof f->key);
        f->st = st;
        snprintf(f->msg, sizeof f->msg, "%s", msg);
        f->log = log ? strdup(log) : NULL;
    }
    c->building[ti][0] = '\0';
    pthread_cond_broadcast(&c->built_cv);
    pthread_mutex_unlock(&c->mu);
}

/* ---- the cache's files (notes 5 and 6) ---- */

/* 16 MiB: less than one build needs (sources, temporaries, an object). */
#define S_DISK_MIN_FREE (16ll << 20)
/* Inodes a build makes at most, about: sources, tmp/, temporaries. */
#define S_DISK_MIN_INODES 64
/* 1 GiB: no compiler's object is larger (the box caps files at 512 MiB). */
#define S_OBJECT_MAX (1ll << 30)

/* 1 with why filled when the file system of dir has no room for a build. */
static int s_disk_full(const char *dir, char *why, size_t len)
{
    struct statvfs v;
    if (statvfs(dir, &v) != 0)
        return 0;
    unsigned long long bytes = (unsigned long long)v.f_bavail * v.f_frsize;
    int no_inodes = v.f_files > 0 && v.f_favail < S_DISK_MIN_INODES;
    if (bytes >= (unsigned long long)S_DISK_MIN_FREE && !no_inodes)
        return 0;
    snprintf(why, len, "the file system of %s is full (%llu KiB and %llu inodes free)", dir,
             bytes >> 10, (unsigned long long)v.f_favail);
    return 1;
}

/* Drains the pool (compile.h): said once in the log, then in every job. */
static void s_drain(cr_compile_t *c, const char *why)
{
    pthread_mutex_lock(&c->mu);
    int first = !c->drained;
    if (first) {
        c->drained = 1;
        snprintf(c->drained_why, sizeof c->drained_why, "%s", why);
    }
    pthread_mutex_unlock(&c->mu);
    if (first)
        cr_error("compile pool drained: %s; every job from now on ends INFRA_ERROR without "
                 "compiling (the coordinator stops assigning after drain-after of them); free "
                 "space and restart the worker",
                 why);
}

/* Opens so under a shared flock and checks the path still names that file
 * (note 6). Returns the descriptor, or -errno (-ENOENT: evicted). */
static int s_pin(const char *so)
{
    int fd = open(so, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat held, now;
    if (flock(fd, LOCK_SH) != 0 || fstat(fd, &held) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (stat(so, &now) != 0 || now.st_ino != held.st_ino || now.st_dev != held.st_dev) {
        close(fd);
        return -ENOENT;
    }
    return fd;
}

/* Copies the compiler's output from into a new file to (mode 0555) that
 * the worker owns: a regular file only, never through a symlink. Returns 0
 * or -errno. */
static int s_copy_object(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0)
        return -errno;
    struct stat st;
    int rc = fstat(in, &st) == 0 ? 0 : -errno;
    if (rc == 0 && (!S_ISREG(st.st_mode) || st.st_size > S_OBJECT_MAX))
        rc = -EINVAL;
    int out = rc == 0 ? open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
    if (rc == 0 && out < 0)
        rc = -errno;
    if (rc == 0)
        rc = cr_file_copy_fd(in, out);
    if (out >= 0) {
        if (rc == 0 && fchmod(out, 0555) != 0)
            rc = -errno;
        if (close(out) != 0 && rc == 0)
            rc = -errno; /* a delayed ENOSPC surfaces here */
    }
    close(in);
    return rc;
}

typedef struct {
    char name[CR_HASH_HEX_LEN + 1];
    int64_t bytes;
    struct timespec mtime;
} s_entry_t;

static int s_entry_older(const void *a, const void *b)
{
    const s_entry_t *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec > y->mtime.tv_nsec;
}

/* Removes one entry unless a job holds it (note 6). Returns 0 or -errno
 * (-EWOULDBLOCK: in use). */
static int s_evict_one(cr_compile_t *c, const char *name)
{
    char entry[PATH_MAX], so[PATH_MAX + 8], trash[PATH_MAX + 64], rnd[32];
    snprintf(entry, sizeof entry, "%s/%s", c->cache_dir, name);
    snprintf(so, sizeof so, "%s/lib.so", entry);
    int fd = open(so, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    cr_random_id(".evicted-", rnd, sizeof rnd);
    snprintf(trash, sizeof trash, "%s/%s%s", c->build_dir, name, rnd);
    /* moving a directory needs write access to it (its ".." changes) */
    chmod(entry, 0700);
    int rc = rename(entry, trash) == 0 ? 0 : -errno;
    if (rc != 0)
        chmod(entry, 0555);
    close(fd);
    if (rc == 0)
        cr_file_rmtree(trash);
    return rc;
}

/* Keeps the cache under cfg->cache_bytes: removes the least recently used
 * entries no job holds, oldest first (note 6). */
static void s_evict(cr_compile_t *c)
{
    if (c->cfg->cache_bytes <= 0)
        return;
    pthread_mutex_lock(&c->evict_mu);
    DIR *d = opendir(c->cache_dir);
    s_entry_t *es = NULL;
    size_t n = 0, cap = 0;
    int64_t total = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        if (strlen(de->d_name) != CR_HASH_HEX_LEN ||
            strspn(de->d_name, "0123456789abcdef") != CR_HASH_HEX_LEN)
            continue;
        char so[CR_HASH_HEX_LEN + 16];
        snprintf(so, sizeof so, "%s/lib.so", de->d_name);
        struct stat dst, fst;
        if (fstatat(dirfd(d), de->d_name, &dst, AT_SYMLINK_NOFOLLOW) != 0 ||
            fstatat(dirfd(d), so, &fst, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            s_entry_t *m = realloc(es, ncap * sizeof *es);
            if (!m)
                break;
            es = m;
            cap = ncap;
        }
        memcpy(es[n].name, de->d_name, CR_HASH_HEX_LEN + 1);
        es[n].bytes = (int64_t)fst.st_size;
        es[n].mtime = dst.st_mtim;
        total += es[n].bytes;
        n++;
    }
    if (d)
        closedir(d);
    int64_t before = total;
    size_t removed = 0, held = 0;
    if (total > c->cfg->cache_bytes && n > 0) {
        qsort(es, n, sizeof *es, s_entry_older);
        for (size_t i = 0; i < n && total > c->cfg->cache_bytes; i++) {
            int rc = s_evict_one(c, es[i].name);
            if (rc == 0) {
                total -= es[i].bytes;
                removed++;
            } else if (rc == -EWOULDBLOCK) {
                held++;
            }
        }
    }
    pthread_mutex_unlock(&c->evict_mu);
    free(es);
    if (removed || held)
        cr_debug("cache: %zu entr%s (%lld bytes) removed, %zu in use kept; %lld bytes of %lld",
                 removed, removed == 1 ? "y" : "ies", (long long)(before - total), held,
                 (long long)total, (long long)c->cfg->cache_bytes);
}

/* Builds one source into a cached shared object. On S_BUILD_OK *so_out is
 * the entry's lib.so path (caller frees), *fd_out holds it pinned (note 6;
 * caller closes) and *hit tells whether the cache had it. *log_out (caller
 * frees, may be NULL) gets the compiler output of a real compile. msg
 * describes an ERROR / TIMEOUT / INFRA outcome; a full disk is INFRA and
 * drains the pool. When another thread is building the same key (note 4):
 * wait 0 returns S_BUILD_BUSY at once; wait 1 waits for that build to end,
 * then takes its entry, or its failure, or builds again. A stopping pool
 * or a cancelled job (*cancelled) starts no build: S_BUILD_INFRA. */
static s_build_t s_build(cr_compile_t *c, int ti, const s_lang_t *l, const char *ident,
                         const cr_task_t *task, const char *source, double timeout_s,
                         int wait, const int *cancelled, char **so_out, int *fd_out, int *hit,
                         char **log_out, char *msg, size_t msglen)
{
    char src_name[32], shim_name[32], key[CR_HASH_HEX_LEN + 1], rnd[64];
    snprintf(src_name, sizeof src_name, "kernel%s", l->ext);
    snprintf(shim_name, sizeof shim_name, "shim%s", l->ext);
    *so_out = NULL;
    *fd_out = -1;
    *hit = 0;
    *log_out = NULL;
    s_build_t out = S_BUILD_INFRA;
    int claimed = 0, full = 0, tries = 0;
    char *shim = NULL, *entry = NULL, *so = NULL, *bdir = NULL, *pub = NULL, *p = NULL;
    cr_box_run_t run = {.ruleset = -1};

    shim = cr_task_shim_source(task, src_name);
    if (!shim) {
        snprintf(msg, msglen, "could not generate the call shim (out of memory)");
        goto done;
    }
    cr_hash_t h;
    cr_hash_init(&h);
    cr_hash_update_str(&h, l->language);
    cr_hash_update_str(&h, ident);
    for (const char *const *f = l->flags; *f; f++)
        cr_hash_update_str(&h, *f);
    for (const char *const *f = l->libs; *f; f++)
        cr_hash_update_str(&h, *f);
    const char *extra[8];
    int nextra = s_extra_flags(c, l, task, extra, 8);
    for (int i = 0; i < nextra; i++)
        cr_hash_update_str(&h, extra[i]);
    cr_hash_update_str(&h, shim);
    cr_hash_update_str(&h, source);
    cr_hash_final_hex(&h, key);

    entry = cr_file_join(c->cache_dir, key);
    so = entry ? cr_file_join(entry, "lib.so") : NULL;
    if (!so) {
        snprintf(msg, msglen, "out of memory");
        goto done;
    }
again:
    *hit = 0;
    out = S_BUILD_INFRA;
    if (!(claimed = s_claim(c, ti, key, so, wait, cancelled, &out, hit, log_out, msg, msglen)))
        goto pin;

    cr_random_id(".", rnd, sizeof rnd);
    size_t n = strlen(key) + strlen(rnd) + 1;
    char *leaf = malloc(n);
    if (leaf) {
        snprintf(leaf, n, "%s%s", key, rnd);
        bdir = cr_file_join(c->build_dir, leaf);
        free(leaf);
    }
    int rc = !bdir ? -ENOMEM : mkdir(bdir, 0700) == 0 ? 0 : -errno;
    if (rc == 0) {
        p = cr_file_join(bdir, src_name);
        rc = p ? cr_file_write_atomic(p, source, strlen(source)) : -ENOMEM;
        free(p);
    }
    if (rc == 0) {
        p = cr_file_join(bdir, shim_name);
        rc = p ? cr_file_write_atomic(p, shim, strlen(shim)) : -ENOMEM;
        free(p);
    }
    p = NULL;
    if (rc == 0)
        rc = cr_box_prepare(c->box, bdir, (int64_t)ceil(timeout_s), &run);
    if (rc != 0) {
        full = cr_workdir_full(rc);
        snprintf(msg, msglen, "cannot write the build dir under %s: %s", c->build_dir,
                 cr_strerror(rc));
        goto done;
    }

    /* argv: cc flags... -o lib.so shim libs... */
    const char *argv[32];
    int k = 0;
    argv[k++] = s_lang_cc(c->cfg, l);
    for (const char *const *f = l->flags; *f; f++)
        argv[k++] = *f;
    argv[k++] = "-o";
    argv[k++] = "lib.so";
    argv[k++] = shim_name;
    for (const char *const *f = l->libs; *f; f++)
        argv[k++] = *f;
    for (int i = 0; i < nextra; i++)
        argv[k++] = extra[i];
    argv[k] = NULL;
    s_child_t child = {&c->pids[ti], c->have_cpus ? &c->cpus : NULL, &run};
    cr_proc_opts_t o = {.argv = (char *const *)argv, .envp = run.envp, .cwd = bdir,
                        .merge_stderr = 1, .out_cap = CR_COMPILE_LOG_CAP,
                        .timeout_ms = (int64_t)(timeout_s * 1000), .limits = &run.limits,
                        .child_setup = s_compile_child, .child_arg = &child};
    cr_proc_result_t r;
    __atomic_store_n(&c->pids[ti], 0, __ATOMIC_SEQ_CST);
    rc = cr_proc_run(&o, &r);
    pthread_mutex_lock(&c->mu);
    c->pids[ti] = 0; /* reaped: from now on its pid may belong to someone else */
    pthread_mutex_unlock(&c->mu);
    if (rc != 0) {
        snprintf(msg, msglen, "cannot start the compiler: %s", cr_strerror(rc));
        goto done;
    }
    char why[256];
    if (cr_box_failed(&run, why, sizeof why)) {
        snprintf(msg, msglen, "%s", why);
        cr_proc_result_close(&r);
        goto done;
    }
    *log_out = strdup(r.out);
    if (r.timed_out) {
        snprintf(msg, msglen, "compiler killed after %.1f s (compile timeout)", timeout_s);
        out = S_BUILD_TIMEOUT;
    } else if (r.exited && r.exit_code == 127 && r.out_len == 0) {
        snprintf(msg, msglen, "compiler '%s' could not be started", argv[0]);
    } else if (!r.exited || r.exit_code != 0) {
        char how[64], line[512];
        s_first_error(r.out, line, sizeof line);
        snprintf(msg, msglen, "%s (compiler %s)", line, cr_proc_describe(&r, how, sizeof how));
        out = S_BUILD_ERROR;
    } else {
        out = S_BUILD_OK;
    }
    cr_proc_result_close(&r);
    if (out != S_BUILD_OK)
        goto done;

    /* publish (note 5): a copy in bdir.pub, then one rename into the cache */
    size_t pn = strlen(bdir) + 8;
    pub = malloc(pn);
    if (pub)
        snprintf(pub, pn, "%s.pub", bdir);
    char *built = cr_file_join(bdir, "lib.so");
    char *pub_so = pub ? cr_file_join(pub, "lib.so") : NULL;
    rc = (built && pub_so) ? 0 : -ENOMEM;
    if (rc == 0 && mkdir(pub, 0700) != 0)
        rc = -errno;
    if (rc == 0)
        rc = s_copy_object(built, pub_so);
    free(built);
    free(pub_so);
    if (rc == 0 && rename(pub, entry) != 0) {
        if (errno == EEXIST || errno == ENOTEMPTY)
            *hit = 1; /* another builder published the same key first: note 2 */
        else
            rc = -errno;
    } else if (rc == 0) {
        /* read-only after the rename: moving a directory needs write access to it */
        chmod(entry, 0555);
    }
    if (rc != 0) {
        full = cr_workdir_full(rc);
        snprintf(msg, msglen, "cannot publish %s: %s", entry, cr_strerror(rc));
        out = S_BUILD_INFRA;
    }

pin:
    if (out == S_BUILD_OK) {
        int fd = s_pin(so);
        if (fd == -ENOENT && !claimed && tries++ < 3)
            goto again; /* evicted since s_claim saw it: build it again */
        if (fd < 0) {
            snprintf(msg, msglen, "cannot open %s: %s", so, cr_strerror(fd));
            out = S_BUILD_INFRA;
        } else {
            *fd_out = fd;
            if (*hit)
                utimensat(AT_FDCWD, entry, NULL, 0); /* recency for the evictor: note 6 */
        }
    }
done:
    cr_box_run_close(&run);
    if (bdir)
        cr_file_rmtree(bdir);
    if (pub)
        cr_file_rmtree(pub);
    /* A compiler that failed on a full disk says "No space left on device"
     * in a log the candidate can also fill with that text: the disk is
     * asked instead, once our own build dir is gone. */
    if (out == S_BUILD_ERROR && s_disk_full(c->build_dir, msg, msglen))
        full = 1;
    if (full) {
        s_drain(c, msg);
        out = S_BUILD_INFRA;
    }
    if (claimed)
        s_release(c, ti, out, cancelled, msg, *log_out);
    if (out == S_BUILD_OK) {
        *so_out = so;
        so = NULL;
        if (claimed && !*hit)
            s_evict(c);
    }
    free(shim);
    free(entry);
    free(so);
    free(bdir);
    free(pub);
    return out;
}

static int s_cancelled(cr_wjob_t *j)
{
    return __atomic_load_n(&j->cancelled, __ATOMIC_SEQ_CST);
}

/* Builds the reference, the baseline (when the task has one) and the
 * candidate. Any failure sets the job's status (compile.h). */
static void s_compile_job(cr_compile_t *c, int ti, cr_wjob_t *j)
{
    int64_t t0 = cr_time_mono_ns();
    const Crucible__TaskBundle *b = j->job->task;
    const Crucible__JobOptions *opt = j->job->options;
    char err[512], origin[300];
    snprintf(origin, sizeof origin, "%s/task.json", b->name);
    pthread_mutex_lock(&c->mu);
    if (c->drained)
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "worker drained: %s",
                     c->drained_why);
    pthread_mutex_unlock(&c->mu);
    if (j->status)
        goto out;
    if (cr_task_parse(b->task_json, origin, &j->task, err, sizeof err) != 0) {
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INVALID_TASK, "%s", err);
        goto out;
    }
    const s_lang_t *l = s_lang_find(j->task->language);
    if (!l || !c->ident[l - s_langs]) {
        /* the coordinator schedules by backend: this is a scheduling fault */
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                     "worker does not serve language '%s'", j->task->language);
        goto out;
    }
    const char *ident = c->ident[l - s_langs];
    /* The job's compile timeout bounds the candidate's build, and may only
     * lower the worker's (a cap); the task's own reference and baseline get
     * the worker's, so that a tight per-job limit (or a loaded machine) does
     * not turn into INVALID_TASK. */
    const double worker_tmo =
        c->cfg->compile_timeout_s > 0 ? c->cfg->compile_timeout_s : CR_COMPILE_DEFAULT_TIMEOUT_S;
    const double tmo = cr__wjob_cap(j, "compile timeout", opt ? opt->compile_timeout_s : 0,
                                    worker_tmo, CR_COMPILE_DEFAULT_TIMEOUT_S);
    /* Reference first: if it does not build, the candidate cannot be
     * judged. A part another thread is building is left for a second pass,
     * after the others (note 4); the outcomes are then read in the same
     * order, so a broken reference still makes the job INVALID_TASK. */
    struct {
        int which;
        const char *src;
        const char *file; /* task's file name, for messages */
        s_build_t st;
        char msg[700];
    } parts[3] = {
        {CR_SO_REFERENCE, b->reference_source, j->task->reference, S_BUILD_BUSY, ""},
        {CR_SO_BASELINE, b->baseline_source, j->task->baseline, S_BUILD_BUSY, ""},
        {CR_SO_CANDIDATE, j->job->spec->source, NULL, S_BUILD_BUSY, ""},
    };
    int broken = 0; /* a task part did not build: the rest cannot be judged */
    for (int pass = 0; pass < 2 && !broken; pass++) {
        for (int i = 0; i < 3 && !broken; i++) {
            if (s_cancelled(j))
                goto out;
            if (parts[i].st != S_BUILD_BUSY)
                continue; /* built in the first pass */
            if (parts[i].which == CR_SO_BASELINE && (!j->task->baseline || !parts[i].src[0])) {
                parts[i].st = S_BUILD_OK;
                continue;
            }
            char *log = NULL;
            int hit = 0;
            const double t = parts[i].which == CR_SO_CANDIDATE ? tmo : worker_tmo;
            parts[i].st = s_build(c, ti, l, ident, j->task, parts[i].src, t, pass, &j->cancelled,
                                  &j->so[parts[i].which], &j->so_fd[parts[i].which], &hit,
                                  &log, parts[i].msg, sizeof parts[i].msg);
            if (parts[i].which == CR_SO_CANDIDATE && parts[i].st != S_BUILD_BUSY) {
                j->cache_hit = hit;
                j->compile_log = log;
                log = NULL;
            }
            free(log);
            broken = parts[i].which != CR_SO_CANDIDATE && parts[i].st != S_BUILD_OK &&
                     parts[i].st != S_BUILD_BUSY;
        }
    }
    for (int i = 0; i < 3; i++) {
        const s_build_t st = parts[i].st;
        const char *msg = parts[i].msg;
        if (s_cancelled(j))
            goto out;
        if (st == S_BUILD_BUSY)
            continue; /* left when a task part did not build: that part decides */
        if (st == S_BUILD_INFRA) {
            cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s", msg);
        } else if (st != S_BUILD_OK && parts[i].which != CR_SO_CANDIDATE) {
            cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                         "task %s: %s '%s' does not compile: %s", b->name,
                         parts[i].which == CR_SO_REFERENCE ? "reference" : "baseline",
                         parts[i].file ? parts[i].file : "?", msg);
        } else if (st == S_BUILD_ERROR) {
            cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_COMPILE_ERROR, "compile error: %s", msg);
        } else if (st == S_BUILD_TIMEOUT) {
            cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_COMPILE_TIMEOUT, "%s", msg);
        }
        if (st != S_BUILD_OK)
            goto out;
    }
    j->compile_ok = 1;
out:
    if (s_cancelled(j))
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_CANCELLED, "cancelled while compiling");
    j->compile_s = (double)(cr_time_mono_ns() - t0) / 1e9;
    j->t_compiled = cr_time_now_ms();
    char name[300];
    cr_debug("job %s attempt %u: compiled in %.2f s%s%s%s", cr_wjob_name(j, name, sizeof name),
             j->job->attempt, j->compile_s, j->cache_hit ? " (cache hit)" : "",
             j->status ? ": " : "", j->status ? cr_status_name(j->status) : "");
}

static void *s_thread(void *arg)
{
    s_thread_arg_t *ta = arg;
    cr_compile_t *c = ta->pool;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->stop && !c->queue.head)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->stop)
            break;
        cr_wjob_t *j = cr__wqueue_pop(&c->queue);
        c->active[ta->index] = j;
        pthread_mutex_unlock(&c->mu);

        s_compile_job(c, ta->index, j);

        pthread_mutex_lock(&c->mu);
        c->active[ta->index] = NULL;
        c->npending--;
        if (c->stop)
            cr_wjob_destroy(&j);
        else
            c->done(j, c->done_arg); /* under the lock: note 1 */
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

cr_compile_t *cr_compile_new(const cr_config_t *cfg, cr_compile_done_fn done, void *arg)
{
    cr_compile_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = cfg;
    c->done = done;
    c->done_arg = arg;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_cond_init(&c->built_cv, NULL);
    pthread_mutex_init(&c->evict_mu, NULL);
    c->nslots = cfg->compile_jobs > 0 ? (int)cfg->compile_jobs : 1;
    s_compile_cpus(c, (int)cfg->cpu); /* after the worker's hwloc binding (worker.c) */
    c->build_dir = cr_file_join(cfg->work_dir, "build");
    c->cache_dir = cr_file_join(cfg->work_dir, "cache");
    c->threads = calloc((size_t)c->nslots, sizeof *c->threads);
    c->targs = calloc((size_t)c->nslots, sizeof *c->targs);
    c->active = calloc((size_t)c->nslots, sizeof *c->active);
    c->building = calloc((size_t)c->nslots, sizeof *c->building);
    c->pids = mmap(NULL, (size_t)c->nslots * sizeof(pid_t), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (c->pids == MAP_FAILED)
        c->pids = NULL;
    if (!c->build_dir || !c->cache_dir || !c->threads || !c->targs || !c->active ||
        !c->building || !c->pids)
        goto fail;
    char err[512];
    int rc = cr_workdir_open(cfg->work_dir, err, sizeof err);
    if (rc == 0 && (rc = cr_workdir_subdir(c->build_dir, err, sizeof err)) == 0)
        rc = cr_workdir_subdir(c->cache_dir, err, sizeof err);
    if (rc != 0) {
        cr_error("compile pool: %s", err);
        goto fail;
    }
    /* the served languages first: the box exposes their compilers */
    int served[S_NLANGS] = {0}, order[S_NLANGS];
    const char *ccs[S_NLANGS + 1];
    int ncc = 0;
    char list[CR_CONFIG_STR], *save = NULL;
    snprintf(list, sizeof list, "%s", cfg->backends[0] ? cfg->backends : "c");
    for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        const s_lang_t *l = s_lang_find(t);
        if (!l) {
            cr_warn("backend '%s' is not built into this worker: not served", t);
            continue;
        }
        if (served[l - s_langs])
            continue;
        if (l->gpu_arch) {
            if (!cfg->cuda_arch[0]) {
                cr_warn("backend '%s' needs a GPU architecture (--cuda-arch, or a GPU NVML "
                        "can see): not served", t);
                continue;
            }
            snprintf(c->arch_flag, sizeof c->arch_flag, "-arch=%.56s", cfg->cuda_arch);
            s_cudart_rpath(s_lang_cc(cfg, l), c->rpath_flag, sizeof c->rpath_flag);
        }
        served[l - s_langs] = 1;
        order[ncc] = (int)(l - s_langs);
        ccs[ncc++] = s_lang_cc(cfg, l);
    }
    /* A torch candidate's load_inline with cuda_sources runs nvcc: the box
     * holds the CUDA toolkit too where the worker has one (docs/torch.md). */
    int nbox = ncc;
    const s_lang_t *torch = s_lang_find("torch");
    if (torch && served[torch - s_langs] && s_on_path(cfg->nvcc[0] ? cfg->nvcc : "nvcc"))
        ccs[nbox++] = cfg->nvcc[0] ? cfg->nvcc : "nvcc";
    if (!(c->box = cr_box_new(cfg, cfg->work_dir, ccs, nbox)))
        goto fail;
    for (int k = 0; k < ncc; k++) { /* in the order of cfg->backends: Ready names the first */
        char **id = &c->ident[order[k]];
        if (!(*id = s_compiler_ident(c, ccs[k])))
            goto fail;
        if (!c->compiler[0])
            snprintf(c->compiler, sizeof c->compiler, "%.*s", (int)strcspn(*id, "\n"), *id);
    }
    if (!c->compiler[0]) {
        cr_error("compile pool: no servable backend in '%s'", cfg->backends);
        goto fail;
    }
    for (; c->nthreads < c->nslots; c->nthreads++) {
        c->targs[c->nthreads] = (s_thread_arg_t){c, c->nthreads};
        if (pthread_create(&c->threads[c->nthreads], NULL, s_thread, &c->targs[c->nthreads]) !=
            0) {
            cr_error("compile pool: could only start %d of %d threads", c->nthreads, c->nslots);
            goto fail;
        }
    }
    return c;
fail:
    cr_compile_destroy(&c);
    return NULL;
}

void cr_compile_submit(cr_compile_t *c, cr_wjob_t *job)
{
    pthread_mutex_lock(&c->mu);
    cr__wqueue_push(&c->queue, job);
    c->npending++;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

int cr_compile_cancel(cr_compile_t *c, const char *batch_id, const char *job_id)
{
    int found = 0;
    pthread_mutex_lock(&c->mu);
    cr_wjob_t *gone = cr__wqueue_take(&c->queue, batch_id, job_id, &found);
    c->npending -= found;
    while (gone) {
        cr_wjob_t *j = gone;
        gone = j->next;
        j->t_compiled = cr_time_now_ms();
        cr_wjob_fail(j, CRUCIBLE__STATUS__STATUS_CANCELLED, "cancelled before compiling");
        c->done(j, c->done_arg); /* under the lock, as from a thread (note 1) */
    }
    for (int i = 0; i < c->nthreads; i++) {
        cr_wjob_t *j = c->active[i];
        if (!j || !cr__wjob_matches(j, batch_id, job_id))
            continue;
        found++;
        __atomic_store_n(&j->cancelled, 1, __ATOMIC_SEQ_CST);
        cr__kill_slot(&c->pids[i]);
    }
    pthread_cond_broadcast(&c->built_cv); /* a thread waiting on another's build: note 4 */
    pthread_mutex_unlock(&c->mu);
    return found;
}

int cr_compile_drained(cr_compile_t *c, char *why, size_t len)
{
    pthread_mutex_lock(&c->mu);
    int d = c->drained;
    if (d)
        snprintf(why, len, "%s", c->drained_why);
    pthread_mutex_unlock(&c->mu);
    return d;
}

int cr_compile_pending(cr_compile_t *c)
{
    pthread_mutex_lock(&c->mu);
    int n = c->npending;
    pthread_mutex_unlock(&c->mu);
    return n;
}

const char *cr_compile_compiler(const cr_compile_t *c)
{
    return c->compiler;
}

int cr_compile_backends(const cr_compile_t *c, char **out, int max)
{
    int n = 0;
    for (size_t i = 0; i < S_NLANGS && n < max; i++)
        if (c->ident[i])
            out[n++] = (char *)s_langs[i].language;
    return n;
}

void cr_compile_destroy(cr_compile_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_compile_t *c = *self_p;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    for (int i = 0; c->pids && i < c->nthreads; i++)
        cr__kill_slot(&c->pids[i]); /* shutdown must not wait for a slow compile */
    pthread_cond_broadcast(&c->cv);
    pthread_cond_broadcast(&c->built_cv);
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < c->nthreads; i++)
        pthread_join(c->threads[i], NULL);
    for (cr_wjob_t *j; (j = cr__wqueue_pop(&c->queue));)
        cr_wjob_destroy(&j);
    for (size_t i = 0; i < S_NLANGS; i++)
        free(c->ident[i]);
    if (c->pids)
        munmap(c->pids, (size_t)c->nslots * sizeof(pid_t));
    free(c->threads);
    free(c->targs);
    free(c->active);
    free(c->building);
    for (int i = 0; i < S_FAILED_KEEP; i++)
        free(c->failed[i].log);
    free(c->build_dir);
    free(c->cache_dir);
    cr_box_destroy(&c->box);
    pthread_mutex_destroy(&c->evict_mu);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    pthread_cond_destroy(&c->built_cv);
    free(c);
    *self_p = NULL;
}
