/* supervisor.h — runs the judge, one crucible-runner at a time.
 *
 * One thread takes compiled jobs in order and runs each in a fresh
 * crucible-runner child (docs/protocol.md "Runner ↔ worker"): its own process
 * group, rlimits, a hard timeout, a private scratch dir, a secret seed that
 * travels only through the child's stdin. Only one runner runs at a time so
 * two timings never share the core. How the runner ended is turned into the
 * job's final RewardRecord (job->rec), which is handed to deliver.
 *
 *   exit 0 + a report frame      → the runner's record (status, verify, profile, hack flags)
 *   killed at the deadline       → TIMEOUT
 *   killed by a signal           → RUNTIME_ERROR naming the signal, with the last stderr lines
 *   exited without a report      → RUNTIME_ERROR
 *   not started / unparsable     → INFRA_ERROR (the worker's fault, not the candidate's)
 *
 * Reference policy. A job whose options say REF_CACHED reuses the reference
 * (or baseline) medians this supervisor measured earlier for the same task
 * bundle, reference/baseline objects (so the same compiler), device and clock
 * policy: they travel in RunnerRequest.cached_ref_median_us and the runner
 * times only the candidate (profile.ref_policy "cached", ref_samples 0). On a
 * miss the runner measures interleaved, and an OK report that measured every
 * bench case fills the cache for the worker's life (4096 entries, oldest
 * evicted first), whatever its job's policy. A REF_INTERLEAVED job gets the
 * entry, when there is one, as RunnerRequest.ref_anchor_us: the CUDA judge
 * measures its process's level against it and takes it off both sides'
 * times (docs/cuda-judge.md §11); the CPU judge ignores it. */
#ifndef CR_SUPERVISOR_H
#define CR_SUPERVISOR_H

#include "compile.h"
#include "config.h"

/* Worker identity stamped on every record and sent in Ready. */
typedef struct {
    char worker_id[CR_CONFIG_STR]; /* also the ZeroMQ routing id */
    char host[256];                /* gethostname() */
    char device[320];              /* "cpu:<model name>" */
} cr_ident_t;

/* Receives a finished job (job->rec set); takes ownership. Called from the
 * supervisor thread, or from the thread that called cr_supervisor_submit or
 * cr_supervisor_cancel for a job that needs no run. */
typedef void (*cr_sup_deliver_fn)(cr_wjob_t *job, void *arg);

typedef struct cr_supervisor cr_supervisor_t;

/* Starts the supervisor thread. The runner is cfg->runner, or when that is
 * "" the crucible-runner next to /proc/self/exe. cfg and id must outlive the
 * supervisor. Sets SIGPIPE to SIG_IGN for the process: a runner that exits
 * before reading its request must not kill the worker. Returns NULL on
 * failure (no thread, no memory). */
cr_supervisor_t *cr_supervisor_new(const cr_config_t *cfg, const cr_ident_t *id,
                                   cr_sup_deliver_fn deliver, void *arg);

/* Takes ownership of a job leaving the compile pool. A job whose status is
 * already set (compile failure, cancelled) is finished and delivered at once
 * in the caller's thread; the others are queued for the runner. */
void cr_supervisor_submit(cr_supervisor_t *s, cr_wjob_t *job);

/* Cancels the jobs of batch (job_id "" = all): queued ones are delivered at
 * once as CANCELLED, a running one has its runner's group killed and comes
 * back CANCELLED. Returns how many were found. */
int cr_supervisor_cancel(cr_supervisor_t *s, const char *batch_id, const char *job_id);

/* Tests: the NVML library the supervisor opens to reset a lock policy's
 * clocks after a runner ended without a report (NULL = CR_NVML_LIBRARY). */
void cr__supervisor_set_nvml_library(const char *path);

/* Jobs queued or running. */
int cr_supervisor_pending(cr_supervisor_t *s);

/* The runner path in use. */
const char *cr_supervisor_runner(const cr_supervisor_t *s);

/* Kills a running runner, stops the thread, frees queued jobs without
 * delivering them. Safe on NULL; nulls *self_p. */
void cr_supervisor_destroy(cr_supervisor_t **self_p);

#endif
