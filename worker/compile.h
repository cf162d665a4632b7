/* compile.h — the worker's compile pool and its content-hash cache.
 *
 * A job travels through the worker as one cr_wjob_t: the main loop makes it
 * from an Assign, the compile pool builds the candidate, the reference and
 * the baseline into shared objects, the supervisor runs the judge on them and
 * turns the outcome into the final RewardRecord, and the main loop sends that
 * record and destroys the job. Exactly one stage owns a job at a time.
 *
 * Compiles run on compile_jobs threads, each supervising one compiler child
 * (cr_proc_run: own process group, hard timeout) inside the compile box
 * (box.h: no root, no network, only the toolchain and its build dir in
 * view). Shared objects are cached
 * under <work_dir>/cache/<key>/lib.so, key = hash(language, compiler
 * identity, flags, shim text, source text). An entry is built in a private
 * dir under <work_dir>/build/ and published with rename(2), so a reader sees
 * a whole entry or none, and two workers sharing a work dir never collide.
 * An entry is a copy the worker made (owned by it, read-only), never the
 * file the compiler wrote. The cache holds at most cfg->cache_bytes of
 * objects: the least recently used entries that no job holds
 * (cr_wjob_t.so_fd) are removed after each new one.
 *
 * Timeouts: a job's compile timeout may lower the worker's, never raise it.
 * A full disk (ENOSPC, EDQUOT) while building is INFRA_ERROR and drains the
 * pool: every later job ends INFRA_ERROR at once, without compiling, with
 * the reason (the coordinator drains a worker whose results are
 * infrastructure failures in a row, docs/protocol.md).
 *
 * Languages live in one table in compile.c (source extension, compiler,
 * flags): a new backend is a new row. */
#ifndef CR_COMPILE_H
#define CR_COMPILE_H

#include "config.h"
#include "crucible.pb-c.h"
#include "task.h"

#include <stdint.h>
#include <sys/types.h>

/* 60 s: a worker's compile timeout when its config gives none. */
#define CR_COMPILE_DEFAULT_TIMEOUT_S 60.0

/* Compiler log kept in CompileResult.log: the first errors are what matter. */
#define CR_COMPILE_LOG_CAP (16u * 1024u)

/* Which shared object of a job (index into cr_wjob_t.so). */
enum { CR_SO_CANDIDATE = 0, CR_SO_REFERENCE = 1, CR_SO_BASELINE = 2, CR_SO__COUNT = 3 };

typedef struct cr_wjob {
    Crucible__Job *job;          /* as assigned; owned (crucible__job__free_unpacked) */
    cr_task_t *task;             /* parsed job->task->task_json; owned; NULL until compiled */
    char *so[CR_SO__COUNT];      /* cache paths of the built objects; owned; NULL = none */
    int so_fd[CR_SO__COUNT];     /* each object open under a shared flock, so that the
                                    cache never evicts it while the job lives; -1 = none */
    int status;                  /* CRUCIBLE__STATUS__*: set by a stage that decided the
                                    verdict itself (compile failure, crash...); 0 = not yet */
    char message[1024];          /* human-readable reason that goes with status */
    int compile_ok;              /* CompileResult.ok */
    char *compile_log;           /* candidate's compiler output, capped; owned; NULL = none */
    double compile_s;            /* s spent building the job's objects (cache hits included) */
    int cache_hit;               /* candidate object came from the cache */
    Crucible__RewardRecord *report; /* runner's report; owned (free_unpacked); NULL = none */
    int64_t t_assigned;          /* ms since epoch: the worker received the job */
    int64_t t_compiled;          /* ms since epoch */
    int64_t t_verified;          /* ms since epoch; 0 = never verified */
    int64_t t_finished;          /* ms since epoch */
    int cancelled;               /* set (atomically) by a Cancel; checked by each stage */
    int passed_over;             /* times cr__wqueue_pop_near took a later job first */
    Crucible__RewardRecord *rec; /* the final record, made by the supervisor; owned */
    struct cr_wjob *next;        /* queue link; owned by whichever queue holds the job */
} cr_wjob_t;

/* Makes a job from an assigned Job by deep copy (the envelope can be freed).
 * Returns NULL on ENOMEM or when the Job lacks its spec or task bundle. */
cr_wjob_t *cr_wjob_new(const Crucible__Job *job);

/* Releases everything the job owns; safe on NULL; nulls *self_p. */
void cr_wjob_destroy(cr_wjob_t **self_p);

/* Sets status and a printf-formatted message (kept when status is already set). */
void cr_wjob_fail(cr_wjob_t *j, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "b1/j7" keys for log lines. Writes into buf and returns it. */
const char *cr_wjob_name(const cr_wjob_t *j, char *buf, size_t len);

/* Called from a pool thread when a job leaves the pool (built, failed or
 * cancelled). Takes ownership of the job. It runs under the pool's lock so a
 * Cancel never misses a job between two stages: it must not call back into
 * the pool. */
typedef void (*cr_compile_done_fn)(cr_wjob_t *job, void *arg);

typedef struct cr_compile cr_compile_t;

/* Starts cfg->compile_jobs threads (at least 1). Serves the languages of
 * cfg->backends (comma list, "" = "c") that have a table row, warning about
 * the others; makes the compile box (box.h); reads each served language's
 * compiler identity (`<cc> --version`, in the box) once; checks the work
 * dir (workdir.h) and creates <work_dir>/build and <work_dir>/cache, 0700.
 * cfg must outlive the pool. Returns NULL with a log line on failure (no
 * servable backend, a work dir refused or not writable, no threads). */
cr_compile_t *cr_compile_new(const cr_config_t *cfg, cr_compile_done_fn done, void *arg);

/* Queues a job; takes ownership. */
void cr_compile_submit(cr_compile_t *c, cr_wjob_t *job);

/* Cancels the jobs of batch (job_id "" = all of the batch): a queued one is
 * handed to done at once with status CANCELLED, one being compiled is marked
 * and its compiler killed. Returns how many jobs were found. */
int cr_compile_cancel(cr_compile_t *c, const char *batch_id, const char *job_id);

/* 1 when a full disk drained the pool (header), with the reason in why. */
int cr_compile_drained(cr_compile_t *c, char *why, size_t len);

/* Jobs queued or being compiled. */
int cr_compile_pending(cr_compile_t *c);

/* First line of the first served language's `<cc> --version`, for Ready.compiler. */
const char *cr_compile_compiler(const cr_compile_t *c);

/* The served backends, for Ready.backends: stores up to max names (static
 * strings) in out and returns how many. */
int cr_compile_backends(const cr_compile_t *c, char **out, int max);

/* Stops the threads (killing running compilers) and frees queued jobs
 * without calling done. Safe on NULL; nulls *self_p. */
void cr_compile_destroy(cr_compile_t **self_p);

/* ---- shared with the supervisor ---- */

/* A child_setup for cr_proc_run: stores the child's pid (its process group)
 * in the pid_t that arg points to, which must live in MAP_SHARED memory so
 * the parent sees it and can kill the group before cr_proc_run returns. */
void cr__note_pid(void *arg);

/* True when the job matches a Cancel{batch, job} ("" job = whole batch). */
int cr__wjob_matches(const cr_wjob_t *j, const char *batch_id, const char *job_id);

/* A FIFO of jobs linked through next. Not locked: the owner's lock guards it. */
typedef struct {
    cr_wjob_t *head; /* owned */
    cr_wjob_t *tail; /* last of head's list; NULL when empty */
} cr__wqueue_t;

void cr__wqueue_push(cr__wqueue_t *q, cr_wjob_t *j);
/* Oldest job, or NULL when empty. Caller owns it. */
cr_wjob_t *cr__wqueue_pop(cr__wqueue_t *q);
/* The judge's next job: among the first CR_WQUEUE_NEAR_LOOK, the oldest whose
 * reference object is ref (the serving CUDA judge keeps that reference's
 * executor, docs/judge.md §6: a job of another reference costs a new one),
 * else the oldest; a job passed over CR_WQUEUE_NEAR_PASSES times is taken
 * next whatever its reference, so none waits long. ref NULL: the oldest.
 * NULL when empty. Caller owns it. */
#define CR_WQUEUE_NEAR_LOOK 16
#define CR_WQUEUE_NEAR_PASSES 8
cr_wjob_t *cr__wqueue_pop_near(cr__wqueue_t *q, const char *ref);
/* Unlinks the jobs matching a Cancel and returns them as a list through
 * next (caller owns them); *n gets how many. */
cr_wjob_t *cr__wqueue_take(cr__wqueue_t *q, const char *batch_id, const char *job_id, int *n);

/* The timeout a job gets: the job's asked (> 0) when it is below cap, else
 * cap (> 0), else fallback; a lowered request is logged at debug level. */
double cr__wjob_cap(const cr_wjob_t *j, const char *what, double asked, double cap,
                    double fallback);

/* Kills the process group whose leader's pid the slot holds (cr__note_pid),
 * if any. Call under the lock that clears the slot after the reap. */
void cr__kill_slot(pid_t *slot);

#endif
