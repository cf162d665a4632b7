/* exec.h — the judge's side of an executor (docs/judge.md).
 *
 * The judge never loads client code. It starts one executor for the
 * candidate and one for the reference and baseline (exec_proto.h), owns the
 * memory they compute in (two shared arenas per executor: inputs, which the
 * executor can only read, and outputs), and issues calls. Each call is timed
 * by the judge itself, between two moments the executor is frozen: by the
 * CPU time the kernel charged the executor (tasks without threads), or the
 * wall clock from letting it run to the kernel's report that it is stopped
 * again (tasks with threads); less this executor's least cost of an empty
 * command, measured before any client code was loaded (exec.c note 3).
 * Nothing an executor writes back is believed, except as evidence against
 * it.
 *
 * When an executor dies, hangs past the deadline or breaks the protocol, the
 * call returns CR_E_EXEC and cr_exec_fault says how; every later call
 * returns CR_E_EXEC at once. */
#ifndef CR_EXEC_H
#define CR_EXEC_H

#include "exec_proto.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct cr_exec cr_exec_t;

typedef struct {
    const char *program;     /* crucible-executor's path */
    const char *role;        /* "candidate" or "reference": for messages */
    const char *object;      /* the shared object it loads (opened by the judge); NULL =
                                started ahead of it: cr_exec_set_object before LOAD */
    const char *scratch_dir; /* the job's private dir; NULL/"" = none */
    uint32_t uid;            /* sandbox uid when root; 0 = the sandbox's default */
    int threads;             /* the task allows threads */
    int cap_memory;          /* cap the executor's address space (sandbox.h) */
    int cpu;                 /* core to pin the executor to; < 0 = none */
    int64_t spin_ns;         /* spinning for a command's done before sleeping on it (where
                                the judge has a core of its own); 0 = 200 us */
    int wall_to_done;        /* a wall-timed (threads) command's time ends when the judge
                                sees it done, not at its stop (exec.c note 3) */
    int whole_times;         /* the empty command's least cost is not taken off (note 3):
                                for a judge that only compares two executors' times pair
                                by pair, where each one's own least cost is a bias */
    size_t ro_bytes;         /* input arena size */
    size_t rw_bytes;         /* output arena size */
    const cr_exec_cuda_t *cuda; /* copied into the control block before the start (a CUDA
                                   executor's arena handle); NULL = none */
} cr_exec_opts_t;

/* How an executor stopped serving. */
typedef enum {
    CR_EXEC_OK = 0,
    CR_EXEC_SIGNALED,  /* killed by a signal (value) */
    CR_EXEC_EXITED,    /* exited on its own (value = status) */
    CR_EXEC_RO_WRITE,  /* stored into the input arena (value = offset) */
    CR_EXEC_SANDBOX,   /* a system call the sandbox forbids */
    CR_EXEC_TIMEOUT,   /* did not finish before the deadline */
    CR_EXEC_LOAD,      /* its object did not load (msg says why) */
    CR_EXEC_SETUP,     /* could not start or enter its sandbox: the judge's problem */
} cr_exec_fault_kind_t;

typedef struct {
    cr_exec_fault_kind_t kind;
    uint64_t value; /* see the kind */
    char msg[600];  /* a sentence naming what happened */
} cr_exec_fault_t;

/* The executor program `name` beside this one (/proc/self/exe's folder). */
void cr_exec_program(const char *name, char *out, size_t len);

/* Starts an executor, waits until it is in its sandbox and measures its
 * empty command. Returns 0 with *out (caller destroys it), or a negative
 * code with err set; no process is left behind on failure. */
int cr_exec_new(const cr_exec_opts_t *o, cr_exec_t **out, char *err, size_t errlen);

/* cr_exec_new in two halves, so that an executor's start (a CUDA
 * context: most of a second) overlaps other work: cr_exec_start forks it and
 * returns at once (0 with *out, or a negative code with err set, nothing
 * left behind); cr_exec_ready waits until it is in its sandbox and measures
 * its empty command (0 at once when it was done before; on failure the
 * caller destroys it). No command may be sent before cr_exec_ready. */
int cr_exec_start(const cr_exec_opts_t *o, cr_exec_t **out, char *err, size_t errlen);
int cr_exec_ready(cr_exec_t *x, char *err, size_t errlen);


/* Kills and reaps the executor, unmaps its arenas; safe on NULL, nulls *x. */
void cr_exec_destroy(cr_exec_t **x);

/* The same without waiting for it to end (a CUDA executor's end takes its
 * context's teardown, which would hold the report back): its pid is kept
 * for cr_exec_reap_abandoned, or for this process's own end to reap. */
void cr_exec_abandon(cr_exec_t **x);

/* Waits for every executor abandoned since the last call to end (their
 * contexts torn down); returns how many. */
int cr_exec_reap_abandoned(void);

/* Loads the object (LOAD). 0, or CR_E_EXEC with the fault set
 * (CR_EXEC_LOAD when the object would not load). *fp_changed is set to 1
 * (with why) when its constructors left the FP state changed. */
int cr_exec_load(cr_exec_t *x, int *fp_changed, char *why, size_t whylen);

/* An executor started with no object (opts.object NULL): copies the file
 * at path into the memfd it loads from, before each LOAD. 0, or a negative
 * code with err set. */
int cr_exec_set_object(cr_exec_t *x, const char *path, char *err, size_t errlen);

/* The control block, for a backend's own fields (cr_exec_cuda_t): write
 * its inputs before a command, read its outputs after (untrusted). */
cr_exec_ctl_t *cr_exec_ctl(cr_exec_t *x);

/* One command op (the backend's arguments already in the control block):
 * us (may be NULL) gets the judge's time of it less the empty command's
 * least cost, at least 1 ns. 0 or CR_E_EXEC (cr_exec_fault). */
int cr_exec_command(cr_exec_t *x, uint32_t op, double *us);

/* One command op to every executor of xs[0..n) at once (the ranks of a
 * multi-GPU job, docs/multigpu.md): each is let run in turn as fast as the
 * judge can signal them (the barrier), then all are waited for together.
 * us[i] (us may be NULL) gets executor i's time from its own release to its
 * stop, less its empty command's least cost. When one stops serving (it
 * died, hung past the deadline, broke the protocol), the others are not
 * waited for: they are killed too (an NCCL peer of a dead rank would hang
 * until the deadline), their faults say so, and *failed gets the index of
 * the first that failed by itself. One that returned while others still
 * ran, saying its call failed (ctl result or cuda_error), ends the wait the
 * same way with no fault of its own: the caller reads its report. Returns
 * 0, or CR_E_EXEC. With n == 1 it is cr_exec_command. */
int cr_exec_command_all(cr_exec_t *const *xs, int n, uint32_t op, double *us, int *failed);

/* Absolute CLOCK_MONOTONIC deadline (ns) for every later command; 0 = none. */
void cr_exec_set_deadline(cr_exec_t *x, int64_t deadline_ns);

/* Carves bytes (64-byte aligned) out of the input arena (ro) or the output
 * arena: returns the judge's pointer to them, or NULL when the arena is full.
 * Freed all at once by cr_exec_reset. */
void *cr_exec_alloc(cr_exec_t *x, int ro, size_t bytes);
void cr_exec_reset(cr_exec_t *x);

/* Fills *a for the judge's pointer p into one of x's arenas (kind and
 * offset). Returns 0, or -EINVAL when p lies in neither. */
int cr_exec_arg_ptr(const cr_exec_t *x, const void *p, cr_exec_arg_t *a);

/* Runs one call of the loaded entry with args[0..n). us (may be NULL) gets
 * the judge's time of it in microseconds. *fp_changed (may be NULL) is set
 * when the executor says the call left the FP state changed (why, whylen).
 * Returns 0 or CR_E_EXEC (cr_exec_fault). */
int cr_exec_call(cr_exec_t *x, const cr_exec_arg_t *args, unsigned n, double *us,
                 int *fp_changed, char *why, size_t whylen);

/* What the executor said of its last command: ctl->result (0 = done), and
 * its message (printable ASCII, NUL-ended) in msg (may be NULL). Its own
 * word: only ever used against it (a harness that reports a client error,
 * such as the torch backend's). */
int cr_exec_result(const cr_exec_t *x, char *msg, size_t len);

/* The fault after CR_E_EXEC; kind CR_EXEC_OK while none happened. */
const cr_exec_fault_t *cr_exec_fault(const cr_exec_t *x);

/* After a CR_EXEC_RO_WRITE fault: the judge's pointer to the input-arena
 * byte the executor stored to (its own report, so only ever used to name a
 * buffer in a verdict against it); NULL for any other fault. */
const void *cr_exec_fault_ptr(const cr_exec_t *x);

/* The executor's threads now (from /proc), or -1 when unknown. */
int cr_exec_threads(const cr_exec_t *x);

/* Signals with a handler installed in the executor now beyond the ones it
 * installs itself (SIGSEGV, SIGBUS, SIGSYS), as a mask (bit n-1 = signal n);
 * 0 when none or unknown. */
uint64_t cr_exec_extra_handlers(const cr_exec_t *x);

/* The executor's peak address space (VmPeak) and its address-space cap
 * (RLIMIT_AS; 0 = none), in bytes. Returns 0, or -1 when unreadable. */
int cr_exec_memory(const cr_exec_t *x, uint64_t *peak, uint64_t *cap);

/* The empty command's least cost (us) measured at start, taken off every
 * call. */
double cr_exec_overhead_us(const cr_exec_t *x);

/* The last command's stop (us), from the judge seeing it done to the kernel
 * saying it is stopped (outside a wall_to_done command's time: exec.c note 3). */
double cr_exec_freeze_us(const cr_exec_t *x);

/* A wall_to_done executor's last command: how long its main thread waited
 * for a core inside the window (us; the kernel's run_delay, exec.c note 3);
 * < 0 unknown or another kind of executor. */
double cr_exec_wait_us(const cr_exec_t *x);

/* The last command's window on CLOCK_MONOTONIC (ns): *t0 just before the
 * judge let it run, *td when the judge saw it done. For the logs. */
void cr_exec_last_window(const cr_exec_t *x, int64_t *t0, int64_t *td);

/* What the executor said of its sandbox: 1 = a private network namespace.
 * For the record only (the executor could lie; nothing trusts it). */
int cr_exec_sandbox_net(const cr_exec_t *x);

pid_t cr_exec_pid(const cr_exec_t *x);

/* 1 when pid is an executor this process started and has not destroyed or
 * abandoned yet (the serving judge keeps those between jobs; runner.c). */
int cr_exec_is_live_pid(pid_t pid);

#endif
