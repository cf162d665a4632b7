/* task.h — task folders: loading, validation, shapes, cases, the call shim.
 *
 * A task is a folder holding task.json, the reference source and optionally a
 * baseline and a prompt (docs/design.md §3). Parsing validates everything a judge
 * will rely on, so a malformed task is refused with a message naming the file
 * and the field ("tasks/x/task.json: params.y.shape[1]: unknown size 'colz'")
 * and never reaches a worker. The same parser runs in the client (task check,
 * submit), the coordinator (submit), the worker and the runner. */
#ifndef CR_TASK_H
#define CR_TASK_H

#include "expr.h"

#include <stddef.h>
#include <stdint.h>

#define CR_TASK_MAX_PARAMS 32
#define CR_TASK_MAX_DIMS 8
#define CR_TASK_MAX_CASES 64
#define CR_TASK_MAX_ALLOW 16
/* 16 GiB across a case's buffers: above it the task is refused, not run. */
#define CR_TASK_MAX_CASE_BYTES (16ull << 30)
/* 1 MiB of task.json / source: far above any real task, below abuse. */
#define CR_TASK_MAX_FILE (1u << 20)
/* 8 ranks: the GPUs of one HGX node, the most one worker serves (docs/multigpu.md) */
#define CR_TASK_MAX_GPUS 8

typedef enum {
    CR_DT_F32,
    CR_DT_F64,
    CR_DT_F16,
    CR_DT_BF16,
    CR_DT_I8,
    CR_DT_U8,
    CR_DT_I16,
    CR_DT_I32,
    CR_DT_U32,
    CR_DT_I64,
    CR_DT_BOOL,
    CR_DT__COUNT
} cr_dtype_t;

/* rank, world and comm exist only in tasks with "gpus" (docs/multigpu.md): the
 * rank's number (int), the number of ranks (int, also a size name in shapes)
 * and its NCCL communicator (ncclComm_t), each set by the judge, never by a case. */
typedef enum {
    CR_ROLE_IN,
    CR_ROLE_OUT,
    CR_ROLE_INOUT,
    CR_ROLE_SIZE,
    CR_ROLE_SCALAR,
    CR_ROLE_RANK,
    CR_ROLE_WORLD,
    CR_ROLE_COMM,
    CR_ROLE__COUNT
} cr_role_t;

typedef enum {
    CR_DIST_NORMAL,  /* mean, std */
    CR_DIST_UNIFORM, /* low, high */
    CR_DIST_INT,     /* integers in [low, high) */
} cr_dist_kind_t;

typedef struct {
    cr_dist_kind_t kind;
    double a; /* mean (normal) or low (uniform, int) */
    double b; /* std (normal) or high (uniform, int) */
} cr_dist_t;

typedef struct {
    char name[64];                      /* as in the signature and params */
    cr_role_t role;
    cr_dtype_t dtype;                   /* buffers, scalars; sizes are CR_DT_I64 */
    char ctype[96];                     /* C type text from the signature: "const float *" */
    int is_pointer;                     /* 1 for buffers */
    int ndim;
    cr_expr_t *shape[CR_TASK_MAX_DIMS]; /* owned; over size names */
    cr_dist_t init;                     /* how inputs are drawn */
} cr_param_t;

typedef struct {
    int64_t ival[CR_TASK_MAX_PARAMS]; /* size params (and integer scalars), by param index */
    double fval[CR_TASK_MAX_PARAMS];  /* scalar params, by param index */
} cr_case_t;

typedef struct {
    char *dir;          /* folder it was loaded from, or "" for a bundle; owned */
    char *name;         /* owned */
    char *language;     /* "c", "cuda", "torch"; owned */
    char *signature;    /* owned */
    char *reference;    /* file name in dir; owned */
    char *baseline;     /* file name, NULL when absent; owned */
    char *prompt;       /* file name, NULL when absent; owned */
    int nparams;
    cr_param_t params[CR_TASK_MAX_PARAMS]; /* in signature order */
    int ncases;
    cr_case_t cases[CR_TASK_MAX_CASES];
    int nbench;
    int bench[CR_TASK_MAX_CASES]; /* indices into cases */
    double atol, rtol;
    cr_expr_t *bytes;   /* NULL when absent; owned */
    cr_expr_t *flops;   /* NULL when absent; owned */
    int nallow;
    char *allow[CR_TASK_MAX_ALLOW]; /* libraries the candidate may link ("cublas"); owned */
    int threads_allowed; /* "threads": true lets a C candidate create threads */
    /* "language": "torch" (docs/torch.md): no signature, params or cases; the
     * reference is a KernelBench-format problem file */
    cr_dtype_t precision; /* "precision" fp32 (default), fp16, bf16: model and float inputs */
    int trials;           /* "trials": correctness trials, each with fresh inputs (default 5) */
    char *device;         /* "device": "auto" (default: the GPU where the runner has one) or
                             "cpu"; owned; NULL for other languages */
    int own_kernel;       /* "own_kernel": true: every verification call of the candidate must
                             run a kernel of its own (a load_inline extension's function or a
                             Triton kernel), not only torch's operators (docs/torch.md) */
    char *compile_mode;   /* "baseline": "torch.compile": the candidate is timed against the
                             reference through torch.compile in this mode ("compile_mode",
                             default "default"); NULL = against the reference as it is; owned */
    /* "gpus": N (docs/multigpu.md): solve() is one rank's part, called on each of N
     * GPUs of one node with that rank's buffers (every shape is per rank), its rank,
     * the world size and an NCCL communicator; the reference computes the whole on
     * one GPU (rank -1, comm NULL, every buffer the N ranks' buffers one after
     * another); the baseline (required) is timed on every rank like the candidate. */
    int gpus;             /* ranks, one GPU each; 0 = a one-GPU task without a communicator */
    int rank_param;       /* index of the rank param; -1 = none (also for gpus 0) */
    int world_param;      /* index of the world param; -1 = none */
    int comm_param;       /* index of the comm param; >= 0 exactly when gpus > 0 */
    cr_expr_t *comm_bytes; /* "comm_bytes": bytes each rank must move over the
                              interconnect at least, for the interconnect floor; NULL =
                              absent; owned */
} cr_task_t;

/* Dtype helpers. cr_dtype_parse accepts "float32", "float64", "float16",
 * "bfloat16", "int8", "uint8", "int16", "int32", "uint32", "int64", "bool". */
int cr_dtype_parse(const char *s, cr_dtype_t *out);
const char *cr_dtype_name(cr_dtype_t d);
size_t cr_dtype_size(cr_dtype_t d);
int cr_dtype_is_float(cr_dtype_t d);

const char *cr_role_name(cr_role_t r);

/* A library a task may name in "allow". This table is the one list: the task
 * parser refuses other names, the worker adds link_flag to the compile line,
 * and the runner's link audit (worker/runner/audit.c) then accepts soname in
 * the candidate's DT_NEEDED and lifts the rules tagged with name. */
typedef struct {
    const char *name;      /* as written in "allow": "cublas" */
    const char *link_flag; /* "-lcublas" */
    const char *soname;    /* DT_NEEDED name up to ".so": "libcublas" */
    const char *unversioned; /* prefix of the symbols it exports without a version
                                ("nccl": libnccl versions none), which the link audit then
                                takes as its; NULL = it versions all of them */
    int ranked;            /* 1: only tasks with "gpus" may list it, and they always do
                              (task.c adds it): NCCL */
} cr_task_lib_t;

/* The known libraries, ended by a row whose name is NULL. */
extern const cr_task_lib_t cr_task_libs[];

/* The row of cr_task_libs named name, or NULL. */
const cr_task_lib_t *cr_task_lib_find(const char *name);

/* Parses and validates task.json text. origin names the file in messages
 * ("tasks/x/task.json"). Returns 0 and *out (caller destroys), or CR_E_TASK /
 * CR_E_JSON with err holding "<origin>: <field>: <what is wrong>". */
int cr_task_parse(const char *json_text, const char *origin, cr_task_t **out, char *err,
                  size_t errlen);

/* Loads dir/task.json and checks that the reference (and baseline, prompt)
 * files exist and are readable. Same return contract as cr_task_parse. */
int cr_task_load_dir(const char *dir, cr_task_t **out, char *err, size_t errlen);

void cr_task_destroy(cr_task_t **self_p);

/* Ranks the task runs on: gpus, or 1 for a one-GPU task. */
int cr_task_ranks(const cr_task_t *t);

/* The task's placement class, the key its jobs queue under (docs/multigpu.md):
 * its language, or "<language>/<gpus>" for a task with "gpus" ("cuda/2"), which
 * only a worker that owns that many GPUs and judges over NCCL serves. Writes it
 * into buf (at least CR_TASK_CLASS_MAX + 1 bytes). */
#define CR_TASK_CLASS_MAX 15
void cr_task_class(const cr_task_t *t, char *buf, size_t len);

/* Parses a placement class: its language into lang (len bytes) and its GPU
 * count into *gpus (0 for a class without "/N"). Returns 0, or -EINVAL for a
 * malformed class (gpus out of 1..CR_TASK_MAX_GPUS, junk after the count). */
int cr_task_class_parse(const char *cls, char *lang, size_t len, int *gpus);

/* Bytes one rank must move over the interconnect in case c ("comm_bytes"); 0
 * with *out = 0 when not declared. */
int cr_task_comm_bytes(const cr_task_t *t, int c, double *out);

/* Index of the param named name, or -1. */
int cr_task_param_index(const cr_task_t *t, const char *name);

/* Number of elements of buffer param p in case c. Returns 0 or CR_E_EXPR. */
int cr_task_numel(const cr_task_t *t, int c, int p, int64_t *numel);

/* Total bytes / flops the task declares for case c; 0 with *out = 0 when not declared. */
int cr_task_bytes(const cr_task_t *t, int c, double *out);
int cr_task_flops(const cr_task_t *t, int c, double *out);

/* Generates the translation unit that is compiled for a candidate or the
 * reference: it #includes the source file named src_name (a path relative to
 * the build dir), then defines
 *     void cr_entry(void **args)   (extern "C" for cuda)
 * which calls solve() with each args[i] cast from a pointer to a value of the
 * i-th parameter's declared type. Because it is the same translation unit,
 * solve may be static, extern "C" or C++-linked. Returns a heap string the
 * caller frees, or NULL on ENOMEM. */
char *cr_task_shim_source(const cr_task_t *t, const char *src_name);

/* The shim's entry symbol and its type. */
#define CR_TASK_ENTRY "cr_entry"
typedef void (*cr_task_entry_fn)(void **args);

#endif
