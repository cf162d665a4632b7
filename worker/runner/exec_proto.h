/* exec_proto.h — what the judge and an executor share (docs/judge.md).
 *
 * An executor (crucible-executor) is the only process that loads client
 * code: the candidate's object, or the reference and baseline objects, each
 * in an executor of its own. The judge (crucible-runner) starts it with four
 * descriptors and nothing else it owns:
 *
 *   CR_EXEC_FD_CTL  the control block (cr_exec_ctl_t), shared read-write
 *   CR_EXEC_FD_RW   the output arena: out and inout buffers, read-write
 *   CR_EXEC_FD_RO   the input arena: in buffers, sealed by the judge with
 *                   F_SEAL_FUTURE_WRITE, so the executor can map it only
 *                   read-only and can never make it writable
 *   CR_EXEC_FD_OBJ  the object to load, opened read-only by the judge, or a
 *                   memfd the judge fills before each LOAD (an executor
 *                   started ahead of its request, cr_exec_set_object)
 *
 * A command: the judge writes op and args, bumps cmd_seq, lets the stopped
 * executor run (SIGCONT); the executor does it, sets done_seq = cmd_seq; the
 * judge stops it again (SIGSTOP) and counts the command done only once the
 * kernel says it is stopped. Between commands every thread of an executor
 * is frozen, so nothing it does happens outside a command's measured window.
 *
 * Everything an executor writes here is hostile: the judge reads done_seq
 * (to know when to stop it) and result, fp_changed and msg (which can only
 * make the candidate's verdict worse), never anything a verdict trusts. */
#ifndef CR_EXEC_PROTO_H
#define CR_EXEC_PROTO_H

#include <stdint.h>

#ifdef __cplusplus /* seen from the CUDA judge's device code too */
#define CR_EXEC_ALIGN(n) alignas(n)
#else
#define CR_EXEC_ALIGN(n) _Alignas(n)
#endif

#define CR_EXEC_FD_CTL 3
#define CR_EXEC_FD_RW 4
#define CR_EXEC_FD_RO 5
#define CR_EXEC_FD_OBJ 6

/* Exit statuses of an executor that the judge reads as verdicts; the
 * sandbox's CR_RUNNER_EXIT_SANDBOX (86) is the third. */
#define CR_EXEC_EXIT_RO_WRITE 87 /* a store into the read-only input arena */
#define CR_EXEC_EXIT_SETUP 88    /* the executor could not start (msg says why) */

#define CR_EXEC_MAX_ARGS 32 /* = CR_TASK_MAX_PARAMS (a static assertion in exec.c) */

enum {
    CR_EXEC_OP_PING = 1, /* do nothing: the judge's measure of a command's own cost */
    CR_EXEC_OP_LOAD = 2, /* load CR_EXEC_FD_OBJ, find its entry, lock the sandbox down */
    CR_EXEC_OP_CALL = 3, /* call the entry with args */
    CR_EXEC_OP_LC_STOP = 4, /* CUDA: end the launch-count subscription (before timing) */
    CR_EXEC_OP_LC_START = 5, /* CUDA: subscribe again (an executor kept for another job) */
};

enum {
    CR_EXEC_ARG_VALUE = 0, /* val holds the value in its C type */
    CR_EXEC_ARG_RO = 1,    /* a pointer: input arena + off */
    CR_EXEC_ARG_RW = 2,    /* a pointer: output arena + off */
    CR_EXEC_ARG_DEV = 3,   /* CUDA: a device pointer: the shared device arena + off */
    CR_EXEC_ARG_COMM = 4,  /* CUDA, a task with "gpus": the executor's NCCL communicator */
};

/* The CUDA executor's part of the control block (worker/runner/cuda/executor.c,
 * docs/judge.md §5). The device arena is one cudaMalloc of the judge's,
 * made for this executor alone and shared by IPC handle: the executor never
 * sees the judge's own buffers (pristine copies, expected outputs, hashes);
 * the baseline's executor opens the reference's. */
typedef struct {
    /* judge -> executor, before the executor starts */
    unsigned char arena_handle[64]; /* cudaIpcMemHandle_t of the shared arena */
    uint64_t arena_bytes;           /* its size; 0 = no arena */
    uint32_t device;                /* CUDA device it runs on (a rank's GPU); 0 on one GPU */
    uint32_t world;                 /* ranks of its NCCL communicator; 0 = none (docs/multigpu.md) */
    uint32_t rank;                  /* its rank in it */
    uint32_t pad0;
    unsigned char nccl_id[128];     /* ncclUniqueId the judge made for this role's ranks */
    /* judge -> executor, per command */
    uint32_t tail;                  /* CALL: empty launches queued behind the call's end event
                                       (docs/cuda-judge.md §12) */
    uint32_t count;                 /* CALL: count its launches (docs/cuda-judge.md §8) */
    uint32_t names_usable;          /* CALL: kernel names mean something (the judge's
                                       calibration on the reference executor) */
    uint32_t allow_libs;            /* CALL: the task allows a library (names not checked) */
    /* executor -> judge: untrusted, read only as evidence against the executor */
    double ev_us;                   /* CALL: the call's event time */
    int32_t cuda_error;             /* CALL: cudaError_t met, 0 = none */
    uint32_t error_at;              /* CR_EXEC_CUDA_AT_*: where */
    uint64_t launches_ok;           /* CALL with count: launches that succeeded */
    uint64_t launches_failed;       /* ... and that failed */
    uint32_t lc_on;                 /* launches are being counted */
    uint32_t names_seen;            /* CALL with count: kernels launched with a name ... */
    uint32_t names_found;           /* ... found in the object's own read-only segments */
    uint32_t pad2;
    char foreign[256];              /* first launched kernel that is not the object's own */
    char foreign_path[256];         /* the object its host stub lies in; "" = by its name */
} cr_exec_cuda_t;

enum { CR_EXEC_CUDA_AT_NONE, CR_EXEC_CUDA_AT_LAUNCH, CR_EXEC_CUDA_AT_DEVICE,
       CR_EXEC_CUDA_AT_TIMING };

typedef struct {
    uint32_t kind;                     /* CR_EXEC_ARG_* */
    uint32_t pad;
    uint64_t off;                      /* bytes into the arena */
    CR_EXEC_ALIGN(16) unsigned char val[16]; /* CR_EXEC_ARG_VALUE */
} cr_exec_arg_t;

typedef struct {
    /* judge -> executor */
    uint32_t cmd_seq;                      /* bumped once per command (futex word) */
    uint32_t op;                           /* CR_EXEC_OP_* */
    uint32_t nargs;
    uint32_t threads;                      /* the task allows threads (second filter) */
    cr_exec_arg_t args[CR_EXEC_MAX_ARGS];
    CR_EXEC_ALIGN(64) uint32_t done_seq;        /* executor: = cmd_seq when done (futex word) */
    uint32_t ready;                        /* executor: 1 once it is in its sandbox */
    uint32_t sandbox_net;                  /* executor: 1 = in a private network namespace */
    int32_t result;                        /* executor: 0, or < 0 when LOAD failed */
    uint32_t fp_changed;                   /* executor: the call left the FP state changed */
    uint64_t fault_off;                    /* executor: input-arena offset it stored to */
    char msg[512];                         /* executor: why, NUL-terminated (untrusted) */
    cr_exec_cuda_t cuda;                   /* CUDA executors only */
} cr_exec_ctl_t;

#endif
