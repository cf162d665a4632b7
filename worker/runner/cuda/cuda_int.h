/* cuda_int.h — what the files of the CUDA judge share. The public interface
 * is ../cuda_judge.h; the design, its invariants and the reasons for them are
 * docs/cuda-judge.md, and "§N" in a comment of these files is its section N.
 *
 *   kernels.cu      the judge's own device code and the launches of it: the
 *                   only file nvcc compiles (cr__cuda_launch_*)
 *   buffers.c       case layouts, the device arena, buffers and their
 *                   placement, inputs drawn and hashed on the device (§5, §6, §9)
 *   call.c          verdicts for CUDA errors, one call of an entry point and
 *                   the bounded wait for its work (§1-§3)
 *   launch_check.c  CUPTI's launch callbacks and the launch checks (§8)
 *   verify.c        verification, docs/design.md §4 steps 1-3
 *   timing.c        timed samples, their summary, the side-stream and
 *                   roofline checks (§4, §7, §10-§12)
 *   clocks.c        NVML clock reads and locks; signals while locked
 *   device.c        the device state: setup, release, and the limits reset
 *                   before every call
 *   judge.c         the entry points of cuda_judge.h
 *   head.c          the judge's head before a self-timing executor's call
 *                   (the torch backend's, docs/torch.md §4)
 *   ranks.c         tasks with "gpus" (docs/multigpu.md): a judge per further
 *                   rank on its GPU, the NCCL ids, the barrier call of every
 *                   rank's executor; the primitives above loop over the
 *                   ranks through cr__cuda_judge_t.rk and cr__cuda_bufs_t.ranks
 *
 * cr__cuda_* names cross files and are declared here; s_* names are static
 * to one file. Include this header first: it sets _GNU_SOURCE (dladdr,
 * dl_iterate_phdr, memmem) before any system header. */
#ifndef CR_CUDA_INT_H
#define CR_CUDA_INT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifndef __cplusplus
#include <stdalign.h>
#endif

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <cuda_runtime_api.h>

#include "cuda_judge.h"

#ifdef __cplusplus
extern "C" { /* the project's C headers and the names below, seen from kernels.cu */
#endif

#include "cpu_judge.h" /* cr_judge_flag, cr_judge_fail: one verdict policy for both backends */
#include "roofline.h"  /* cr_judge_roofline, cr_judge_gpu_peak_flops */
#include "error.h"
#include "exec.h"      /* the executors that run client code (docs/judge.md) */
#include "hash.h"
#include "inputs.h"
#include "log.h"
#include "nvml.h"
#include "stats.h"
#include "timeutil.h"
#include "topo.h"

/* Code both compilers build: the host C files and the device code. */
#ifdef __CUDACC__
#define CR_CUDA_HD __host__ __device__
#else
#define CR_CUDA_HD
#endif

#define CR_CUDA_NP CR_TASK_MAX_PARAMS
#define CR_CUDA_THREADS 256                /* threads per block of the judge's kernels */
#define CR_CUDA_ARENA_GRAIN (2ull << 20)   /* a large page: arena buffers start on one (§9) */
#define CR_CUDA_NLIMITS 6                  /* device limits reset before every call (device.c) */
#define CR_CUDA_SEGS 8                     /* PT_LOAD segments kept; ld makes 2 read-only ones */

/* Host time by step over the whole run (cr__cuda_judge_t.step_ns), logged at the end. */
enum { CR_CUDA_ST_ALLOC, CR_CUDA_ST_FREE, CR_CUDA_ST_SYNC, CR_CUDA_ST_CAND, CR_CUDA_ST_REF,
       CR_CUDA_ST_CMP, CR_CUDA_ST_HASH, CR_CUDA_ST_KEEP, CR_CUDA_ST_N };

enum { CR_CUDA_CAND = 0, CR_CUDA_REF = 1, CR_CUDA_BASE = 2 };

/* The device arenas (§9): the judge's own, and one per executor shared with
 * it by IPC handle (the baseline's executor opens the reference's). */
enum { CR_CUDA_AR_JUDGE = 0, CR_CUDA_AR_CAND = 1, CR_CUDA_AR_REF = 2, CR_CUDA_AR_N };

typedef struct {
    char *base;        /* device; owned by the judge's setup; NULL = none */
    size_t bytes, top; /* size; the first byte not handed out */
} cr__cuda_arena_t;

/* Every arena's top, for cr__cuda_arena_release: rank 0's (the judge's own
 * device), and each further rank's (docs/multigpu.md). */
typedef struct {
    size_t top[CR_CUDA_AR_N];
    int nranks;                                  /* ranks whose tops rtop holds: set by
                                                    cr__cuda_arena_mark; 0 in a mark built
                                                    by hand (rank 0's arenas alone) */
    size_t rtop[CR_TASK_MAX_GPUS][CR_CUDA_AR_N]; /* [r]: rank r's; [0] unused */
} cr__cuda_mark_t;

typedef int (*cr__cuda_last_error_fn)(void);

/* The read-only segments of a loaded object (its code, .rodata and
 * fatbinary: where kernel names are, §8), in memory. */
typedef struct {
    const void *base;             /* the object's load address (dladdr's dli_fbase) */
    const char *p[CR_CUDA_SEGS];
    size_t n[CR_CUDA_SEGS];
    int nseg;
} cr__cuda_image_t;

typedef struct {
    int c;                                          /* case index */
    int rank;                                       /* whose inputs: keys fold the rank in
                                                       (cr__cuda_fill); 0 on one GPU */
    int parts;                                      /* rank parts each buffer holds, one after
                                                       another: 1, or the ranks for the whole
                                                       a multi-GPU reference computes */
    size_t numel[CR_CUDA_NP];                       /* elements of each buffer param */
    size_t bytes[CR_CUDA_NP];                       /* bytes of each buffer param */
    size_t out_bytes;                               /* bytes of all out/inout buffers */
    alignas(16) unsigned char val[CR_CUDA_NP][16];  /* size/scalar values in their C type */
} cr__cuda_layout_t;

typedef struct cr__cuda_bufs {
    void *base[CR_CUDA_NP];  /* device allocation per buffer param, NULL otherwise */
    void *p[CR_CUDA_NP];     /* where the buffer starts inside it this time (cr__cuda_place) */
    size_t room[CR_CUDA_NP]; /* bytes of the allocation beyond the buffer */
    unsigned char own[CR_CUDA_NP]; /* 1: base came from cudaMalloc (freed by cr__cuda_free);
                                      0: from the arena (given back by cr__cuda_arena_release) */
    int arena;               /* CR_CUDA_AR_*: where the buffers are (who may be called on them) */
    struct cr__cuda_bufs *ranks; /* multi-GPU: ranks 1..n-1's buffers on their GPUs (index
                                    r - 1), owned (cr__cuda_free); NULL on one GPU and for
                                    the reference's whole */
} cr__cuda_bufs_t;

/* What no request decides (cr__cuda_setup_device): made by a prestarted
 * runner before its request, taken over whole by its judge. */
typedef struct {
    int dev;                             /* CUDA device (a rank's GPU); 0 on one GPU */
    char name[256];                      /* "NVIDIA H200" */
    char bus[32];                        /* PCI bus id, for NVML */
    int sms;                             /* multiprocessors */
    int l2_bytes;
    double max_clock_mhz;                /* SM clock ceiling for the flop floor */
    double theory_bw;                    /* B/s from memory clock and bus width; 0 = unknown */
    cr_nvml_t *nvml;                     /* owned; NULL without NVML */
    char nvml_err[256];                  /* why nvml is NULL */
    cudaEvent_t ev0, ev1;                /* around every call */
    cudaEvent_t evp;                     /* the last timed sample's ev0 (swapped with ev0
                                            after each: §10) */
    unsigned long long *dscratch;        /* device: hash sums, 2 per param; owned */
    unsigned long long *dcmp;            /* device: s_cmp_kernel's results, 6 per param; owned */
    cr__cuda_arena_t ar[CR_CUDA_AR_N];   /* the judge's and the executors' buffers (§9) */
    cudaIpcMemHandle_t ar_handle[CR_CUDA_AR_N]; /* the executors' arenas' handles */
    void *flush;                         /* device: L2 flush buffer; owned */
    size_t flush_bytes;
    cudaEvent_t evf, evq;                /* before a sample's fill, before its flush */
    cudaEvent_t evx;                     /* the judge's idle probe after an executor's
                                            command (call.c) */
    int persist_l2;                      /* device supports persisting-L2 limits */
    /* global state restored before every call (docs/hacks.md #19; cr__cuda_reset_state) */
    size_t limit0[CR_CUDA_NLIMITS];      /* each of s_limits[] to restore (s_snapshot) */
    int limit_ok[CR_CUDA_NLIMITS];       /* ... readable and restorable on this device */
    double setup_s[3];                   /* cr__cuda_setup_device's seconds: context, NVML,
                                            buffers */
} cr__cuda_dev_t;

typedef struct cr__cuda_judge {
    const Crucible__RunnerRequest *req;  /* borrowed */
    const cr_task_t *t;                  /* borrowed */
    Crucible__RewardRecord *rec;         /* borrowed; the verdict goes here */
    cr_exec_t *x[3];                     /* the executors: CR_CUDA_CAND, _REF, _BASE (= _REF's
                                            when the task has no baseline); borrowed */
    /* executor.c's own use (the judge loads no object): */
    cr_task_entry_fn fn[3];              /* the loaded entry, at every index */
    cr__cuda_last_error_fn last_error[3]; /* its runtime's error, or NULL (§1) */
    unsigned char seed[32];              /* secret per-evaluation seed */
    uint64_t hash_key;                   /* secret key of the input hash (§6) */
    int64_t deadline_ns;                 /* monotonic: give up with TIMEOUT here */
    int64_t reserve_ns;                  /* stop timing this long before the deadline */
    double budget_s;                     /* s of timing per bench case */
    double rse_target;                   /* relative standard error to stop at */
    const double *cached_ref_us;         /* us per bench case, reused (§7); NULL = time
                                            the reference; borrowed from req */
    const double *cached_ref_rse;        /* their RSEs; NULL = unknown; borrowed from req */
    const double *ref_anchor_us;         /* us per bench case (§11); NULL = none;
                                            borrowed from req */
    int dead;                            /* context unusable: no more CUDA calls (§3) */
    int cand_ran;                        /* the candidate was called: later sticky errors
                                            are its doing, not the judge's */
    int handlers;                        /* SIGTERM/SIGINT handlers installed (lock) */
    struct sigaction old_term, old_int;  /* the handlers they replaced */
    int verdict;                         /* a status other than OK/INCORRECT/HACK was set */
    int setup_failed;                    /* cr__cuda_setup_device failed: J->d is partial */
    int ref_loaded;                      /* the reference executor holds req->reference_so
                                            (serving: it may be kept, judge.c) */
    struct stat ref_st;                  /* that file's identity as it was loaded */
    cr__cuda_dev_t d;                    /* the device's facts and the judge's own buffers */
    /* launch checks (§8) */
    int lc_on;                           /* CUPTI subscribed: calls are being counted */
    int lc_names;                        /* 1 names usable (found a reference name in its
                                            file), -1 not usable, 0 not known yet */
    int lc_ids_bad;                      /* shared-identity check off (ids inconsistent) */
    int lc_flagged;                      /* a launch check fired in this verification run */
    unsigned lc_ref_named, lc_ref_found; /* the reference executor's kernel names, and those
                                            its object holds (calibration) */
    char lc_suspect[256];                /* the candidate executor's report of a kernel not
                                            its own ("" = none) ... */
    char lc_suspect_path[PATH_MAX];      /* ... and the object it lies in ("" = by name) */
    unsigned long lc_ok[2], lc_failed[2]; /* launches of the last call: CR_CUDA_CAND, _REF */
    const void *obj_base[3];             /* load address of each object (dladdr) */
    cr__cuda_image_t img[2];             /* read-only bytes of CR_CUDA_CAND's and _REF's */
    double copy_bw;                      /* B/s measured device-to-device; 0 = not yet */
    /* clocks */
    cr_clock_policy_t policy;
    unsigned locked_mhz;                 /* MHz while locked, else 0 */
    cr_rng_t place;                      /* draws buffer offsets (§5) */
    cr_rng_t tail_pick;                  /* draws the check samples (§12) */
    int tail;                            /* launches queued behind a timed call (§12) */
    int tail_now;                        /* ... behind the call s_do_call makes now */
    uint64_t last_reasons;               /* throttle reasons read after the last sample */
    unsigned last_mhz;                   /* SM clock of the last NVML read */
    uint64_t clock_reads;                /* NVML reads made by s_sample */
    uint64_t l2_resets;                  /* persisting-L2 resets (cr__cuda_reset_state) */
    int64_t last_clock_ns;               /* monotonic ns of the last NVML read; 0 = none */
    int64_t host_ns[4];                  /* per-sample host time by phase (timing.c's
                                            S_PH_*), summed */
    int gpu_steps;                       /* CR_CUDA_JUDGE_GPU_STEPS: time fill and flush */
    double gpu_fill_us, gpu_flush_us;    /* per-sample GPU time, gpu_steps only: fill (to
                                            the flush's launch, the synchronise and reset
                                            included), flush; summed */
    int64_t step_ns[CR_CUDA_ST_N];       /* host time by step (CR_CUDA_ST_*), whole run */
    uint64_t host_samples;               /* samples summed in host_ns */
    FILE *dump;                          /* per-sample log ($CR_CUDA_JUDGE_SAMPLES); owned */
    int gpu_prev;                        /* evp holds this case's previous sample (§10) */
    double gpu_now_us;                   /* GPU time of the last sample's ev0 in the case */
    /* tasks with "gpus" (docs/multigpu.md, ranks.c); one GPU: nranks 1, rank 0 */
    int nranks;                          /* ranks of the job */
    int rank;                            /* this judge's: 0 for the judge itself, r for the
                                            judge of rank r's GPU (rk[r]) */
    struct cr__cuda_judge *rk[CR_TASK_MAX_GPUS]; /* rank 0 only: [r] the judge of rank r's
                                            GPU for r >= 1, owned (its own device state and
                                            its rank's candidate and baseline executors);
                                            [0] NULL */
    double link_bw;                      /* B/s one GPU sends another, measured; 0 = not
                                            measured (one rank) */
} cr__cuda_judge_t;

/* Adds the host time since t0 to step st (the run's "by step" log line);
 * returns rc, so that a wrapper s_X of s_do_X is one statement. */
static inline int cr__cuda_step(cr__cuda_judge_t *J, int st, int64_t t0, int rc)
{
    J->step_ns[st] += cr_time_mono_ns() - t0;
    return rc;
}

typedef struct {
    double ev_us;   /* event time: ev0 -> ev1 on the legacy stream, as the executor says */
    double wall_us; /* the judge's: the executor's command, from letting it run until it is
                       stopped again and the GPU is idle (the tail's launches and drain
                       included, when it had one: §12), less the empty command's cost */
} cr__cuda_time_t;

/* Rank r's judge (rank 0: J itself), and its buffers in B (rank 0: B). */
static inline cr__cuda_judge_t *cr__cuda_rank(cr__cuda_judge_t *J, int r)
{
    return r == 0 ? J : J->rk[r];
}

static inline cr__cuda_bufs_t *cr__cuda_rank_bufs(cr__cuda_bufs_t *B, int r)
{
    return r == 0 ? B : B->ranks ? &B->ranks[r - 1] : NULL;
}

/* ---------------------------------------------------------------- kernels.cu */

/* What s_gen_kernel draws one buffer from (§5). */
typedef struct {
    uint64_t key;   /* Philox key of this (seed, case, set, param) */
    int dtype;      /* cr_dtype_t */
    int dist;       /* cr_dist_kind_t */
    double a, b;    /* distribution parameters */
} cr__cuda_gen_t;

/* Four elements per Philox block (s_gen_kernel)? */
CR_CUDA_HD static inline int cr__cuda_gen_four(const cr__cuda_gen_t *g)
{
    return g->dist != CR_DIST_INT && g->dtype != CR_DT_F64;
}

/* Philox blocks (threads' work items) s_gen_kernel needs for n elements. */
CR_CUDA_HD static inline size_t cr__cuda_gen_blocks(const cr__cuda_gen_t *g, size_t n)
{
    return cr__cuda_gen_four(g) ? (n + 3) / 4 : n;
}

/* Each queues its kernel on the legacy stream with grid blocks of
 * CR_CUDA_THREADS threads and returns at once; a launch error is left for
 * the caller's cudaGetLastError(). */
void cr__cuda_launch_gen(unsigned grid, void *buf, size_t n, cr__cuda_gen_t g);
void cr__cuda_launch_poison(unsigned grid, void *buf, size_t n, int es, uint64_t pat);
void cr__cuda_launch_hash(unsigned grid, const void *buf, size_t bytes, uint64_t key,
                          unsigned long long *out);
void cr__cuda_launch_cmp(unsigned grid, const void *a, const void *r, int d, int es,
                         uint64_t pat, size_t n, double atol, double rtol,
                         unsigned long long *cnt, unsigned long long *first);
/* n empty kernels of one block (§12). */
void cr__cuda_launch_tail(int n);
/* One thread that spins for ns nanoseconds of the GPU's global timer (head.c). */
void cr__cuda_launch_spin(unsigned long long ns);

/* ---------------------------------------------------------------- buffers.c */

int cr__cuda_is_buf(const cr_param_t *prm);
int cr__cuda_is_out(const cr_param_t *prm);
unsigned cr__cuda_grid(const cr__cuda_judge_t *J, size_t n);
int cr__cuda_layout(cr__cuda_judge_t *J, int c, cr__cuda_layout_t *L);
void cr__cuda_layout_whole(const cr__cuda_judge_t *J, cr__cuda_layout_t *L);
void cr__cuda_layout_rank(const cr__cuda_judge_t *J, const cr__cuda_layout_t *L, int r,
                          cr__cuda_layout_t *out);
int cr__cuda_arena_of(int who);
cr__cuda_mark_t cr__cuda_arena_mark(cr__cuda_judge_t *J);
void cr__cuda_arena_release(cr__cuda_judge_t *J, const cr__cuda_mark_t *mark);
cudaError_t cr__cuda_buf_get(cr__cuda_judge_t *J, int arena, size_t sz, void **base,
                             unsigned char *own);
void cr__cuda_free(cr__cuda_judge_t *J, cr__cuda_bufs_t *B);
void cr__cuda_place(cr__cuda_judge_t *J, cr__cuda_bufs_t *B);
int cr__cuda_alloc_q(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                     cr__cuda_bufs_t *B, int quiet, int wide);
int cr__cuda_alloc(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L, cr__cuda_bufs_t *B);
int cr__cuda_fill(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, uint32_t set,
                  const cr__cuda_bufs_t *B);
int cr__cuda_hash_queue(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                        const cr__cuda_bufs_t *B, int slot);
int cr__cuda_hash_compare(cr__cuda_judge_t *J, const char **mutated);

/* ---------------------------------------------------------------- call.c */

void cr__cuda_hard(cr__cuda_judge_t *J, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int cr__cuda_infra(cr__cuda_judge_t *J, cudaError_t e, const char *what);
int cr__cuda_ready(cr__cuda_judge_t *J);
int cr__cuda_call(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                  const cr__cuda_bufs_t *B, cr__cuda_time_t *tm);
int cr__cuda_call_args(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                       const cr__cuda_bufs_t *B);
int cr__cuda_call_result(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L, double us,
                         double probe, cr__cuda_time_t *tm);
double cr__cuda_probe(cr__cuda_judge_t *J, int who, int c);
int cr__cuda_exec_fail(cr__cuda_judge_t *J, int who);
void cr__cuda_lc_on(cr__cuda_judge_t *J);
void cr__cuda_lc_off(cr__cuda_judge_t *J);

/* ---------------------------------------------------------------- launch_check.c */

int cr__cuda_lc_subscribe(char *used, size_t usedlen);
void cr__cuda_lc_start(cr__cuda_judge_t *J);
void cr__cuda_lc_stop(cr__cuda_judge_t *J);
void cr__cuda_lc_begin(cr__cuda_judge_t *J, int who);
void cr__cuda_lc_end(cr__cuda_judge_t *J, int who);
int cr__cuda_lc_self(cr__cuda_judge_t *J, unsigned *named, unsigned *found, char *name,
                     size_t namelen, char *path, size_t pathlen);
int cr__cuda_lc_verdict(cr__cuda_judge_t *J, int c, int second, int passed, char *msg,
                        size_t msglen);

/* ---------------------------------------------------------------- verify.c */

int cr__cuda_keep_out(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, const cr__cuda_bufs_t *B,
                      cr__cuda_bufs_t *K);
int cr__cuda_compare_dev(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                         const cr__cuda_bufs_t *cand, const cr__cuda_bufs_t *exp,
                         cr_judge_check_t *k);
int cr__cuda_compare_one(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                         const cr__cuda_bufs_t *cand, const cr__cuda_bufs_t *exp,
                         cr_judge_check_t *k);
int cr__cuda_reference(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, uint32_t set,
                       cr__cuda_bufs_t *R);
int cr__cuda_verify(cr__cuda_judge_t *J);

/* ---------------------------------------------------------------- timing.c */

double cr__cuda_copy_bw(cudaEvent_t e0, cudaEvent_t e1);
int cr__cuda_bw_plausible(double w, double theory);
int cr__cuda_time(cr__cuda_judge_t *J);

/* ---------------------------------------------------------------- clocks.c */

/* The signal that arrived while clocks were locked, 0 = none: the handler
 * only sets it; the poll loop and the timing loop read it. */
extern volatile sig_atomic_t cr__cuda_signalled;
void cr__cuda_unlock(cr__cuda_judge_t *J);
void cr__cuda_clock_read(cr__cuda_judge_t *J, unsigned *mhz, uint64_t *reasons);
int cr__cuda_lock(cr__cuda_judge_t *J);

/* ---------------------------------------------------------------- ranks.c */

void cr__cuda_on(const cr__cuda_judge_t *R);
int cr__cuda_rank_fail(cr__cuda_judge_t *J, int r);
int cr__cuda_ranks_setup(cr__cuda_judge_t *J);
void cr__cuda_ranks_release(cr__cuda_judge_t *J);
int cr__cuda_ranks_executors(cr__cuda_judge_t *J);
void cr__cuda_ranks_executors_end(cr__cuda_judge_t *J, void (*end)(cr_exec_t **));
int cr__cuda_ranks_call(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                        const cr__cuda_bufs_t *B, cr__cuda_time_t *tm);
int cr__cuda_ranks_flush(cr__cuda_judge_t *J);
int cr__cuda_ranks_ready(cr__cuda_judge_t *J);
int cr__cuda_ranks_compare(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                           const cr__cuda_bufs_t *cand, const cr__cuda_bufs_t *exp,
                           cr_judge_check_t *k);
void cr__cuda_ranks_link_bw(cr__cuda_judge_t *J);

/* ---------------------------------------------------------------- device.c */

void cr__cuda_reset_state(cr__cuda_judge_t *J);
void cr__cuda_state_init(cr__cuda_dev_t *D);
cudaError_t cr__cuda_setup_device(cr__cuda_dev_t *D, const char **what);
void cr__cuda_release_device(cr__cuda_dev_t *D, int dead);

#ifdef __cplusplus
}
#endif

#endif
