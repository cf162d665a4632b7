/* cuda_judge.cu — see cuda_judge.h.
 *
 * Design notes (numbered so comments below can point at them):
 *
 * 1. One CUDA context, two runtimes. The runner links cudart statically;
 *    candidate, reference and baseline objects link the shared libcudart
 *    (-cudart shared, so the link audit sees what a candidate imports) and
 *    share its one instance. Both runtimes use the device's primary context,
 *    so device pointers, the legacy default stream and device-wide
 *    synchronisation are common, but a launch error sits in the launching
 *    runtime's own "last error". The judge reads it through the object's
 *    exported cr_cuda_last_error() when the shim defines one (see
 *    S_LAST_ERROR_SYM); failing that, a silent launch failure still leaves
 *    the poisoned outputs in place and is caught as INCORRECT.
 *
 * 2. Never an unbounded wait on candidate work: a call ends with an event
 *    recorded on the legacy stream, which is polled (spinning for the first
 *    2 ms so a sample's wall time stays exact, then sleeping) against the
 *    run's deadline and the signal flag; only then does a device-wide
 *    cudaDeviceSynchronize() catch work left on non-blocking streams. A
 *    kernel that never ends is TIMEOUT from the poll; one hidden on a
 *    non-blocking stream is TIMEOUT from the supervisor's kill.
 *
 * 3. After a fault or a timeout the context is dead (sticky error, or a
 *    kernel still running that any cudaFree would wait for): J->dead is set,
 *    no further CUDA call is made, and the verdict goes straight back.
 *
 * 4. A timed sample is  fill inputs / poison outputs -> synchronise (the
 *    inputs are complete when solve() is called, whatever stream it uses)
 *    -> limits restored (s_reset_state) -> L2 flush (memset of 2x L2, at
 *    least 256 MiB, always with zeros, as triton's do_bench flushes) ->
 *    [ev0] call [ev1] (-> tail, note 12) -> poll -> device sync. The flush
 *    is queued before
 *    ev0, so the GPU is still busy with it while the host launches the
 *    candidate: the event window holds the candidate's GPU work and its own
 *    host-side gaps, not the judge's launch latency (the same shape as
 *    triton.testing.do_bench). The wall clock runs from just before ev0 to
 *    the device sync, so it also holds the tail of the flush: that part is
 *    the same for both sides, so the cross-check compares the candidate's
 *    (wall - event) gap with the reference's. Queuing fill, flush and call
 *    back to back without the synchronise was tried (bench/RESULTS.md,
 *    session 4): the medians did not move, and a candidate on a
 *    non-blocking stream could then read inputs still being drawn. Unless a
 *    candidate changed the persisting L2, nothing but the flush is queued
 *    between the synchronise and ev0: an event or a persisting-L2 reset
 *    there made the timed kernel 0.07-0.15 us slower on an H200. What is
 *    queued behind ev1 matters too: note 12. A ~52 us
 *    kernel's two modes 1.4 us apart, whatever the flush, placement or
 *    reset, are the GPU's periodic stalls: note 10.
 *
 * 5. Inputs are drawn on the GPU by a counter-based generator (Philox4x32-10)
 *    whose 64-bit key is folded from the BLAKE2b-derived stream state of
 *    (seed, case, set, param) from cr_rng_seed, so a set is reproducible
 *    inside the evaluation (the reference re-draws the candidate's set in its
 *    own buffers) and unpredictable outside it. Every timed call gets a new
 *    set index, i.e. new values, in one of S_SLOTS rotating buffer slots,
 *    and each buffer sits at a new random 256-byte-aligned offset inside
 *    its allocation: no two calls see the same addresses, and the way
 *    buffers fall on physical pages, DRAM channels and banks is averaged
 *    within every run instead of drawn once per runner (timing slots get
 *    room of up to 3x the buffer, s_room), which is what keeps the medians of
 *    separate runners together.
 *
 * 6. Input-unchanged checks hash on the device: sum over 32-bit words w_j of
 *    splitmix64(key ^ (j << 32 | w_j)), key secret. splitmix64 is a
 *    bijection, so a changed word changes its term; without the key, a
 *    change that cancels out is a 2^-64 event.
 *
 * 7. The `cached` reference policy (J->cached_ref_us): only the candidate is
 *    timed, within CR_JUDGE_CACHED_BUDGET_SHARE of the budget (its half of an
 *    A B A B loop: the other half is the saving); the reference's median
 *    comes from the request and stands in as an exact value, so the
 *    speedup's interval is the candidate's alone. The warm-up still runs
 *    both sides (it is bounded by time, so this costs no time), and its
 *    reference samples give the (wall - event) gap that the side-stream
 *    cross-check of note 4 compares against (those without the tail) and
 *    this process's level (those with it; notes 11, 12); they are never
 *    reported as reference samples.
 *
 * 8. Launch checks (HACKS.md #14, #15), during verification only: CUPTI's
 *    callback API, dlopen'ed (nothing new at link time), reports every
 *    kernel launch of every runtime instance in the process (runtime and
 *    driver API, a driver call nested in a runtime launch counted once) with
 *    the kernel's name and identity (host stub, cudaKernel_t or CUfunction).
 *    A candidate call that launched no kernel yet left right outputs is
 *    no_kernel_launched (one whose outputs are wrong is INCORRECT, the
 *    honest verdict for a grid rounded down to nothing); a kernel that
 *    belongs to the reference (its host stub lies in the reference's
 *    object, when the runtime told whose stub a handle is, or the reference
 *    launched the same identity), or,
 *    when the task allows no library, whose name occurs nowhere in the
 *    candidate's object (its read-only segments as loaded, where nvcc puts
 *    the names it registers), is foreign_kernel. Every check calibrates on
 *    the reference first (it must be seen launching, its names must be
 *    found in its own object), so a CUPTI that sees nothing, or names in
 *    another form, turns a check off (logged) rather than flag honest work.
 *    CUPTI missing or refused (another subscriber, e.g. a profiler): the
 *    checks do not run, which is logged. A prestarted runner loads CUPTI
 *    and subscribes before its request (30-100 ms off the GPU's critical
 *    path); the judge enables the launch callbacks. The subscription ends
 *    before timing, so no callback sits in a timed window.
 *
 * 9. The judge's own buffers (verification sets, kept outputs, timing
 *    slots, references) come from one device arena that s_setup_device
 *    allocates (in the prestart, off the GPU's critical path): at most
 *    S_ARENA_MAX and 1/S_ARENA_SHARE of the free memory. Taking a buffer is
 *    a pointer bump to the next large page (s_arena_take); a case's buffers
 *    all go back at the case's end (s_arena_mark / s_arena_release), and
 *    each case starts after a random gap; an allocation that fails part-way
 *    gives back what it took. Within a case the bump only moves forward, so
 *    the second verification run, the reference and the kept copies never
 *    share an address with anything the candidate saw before. cudaMalloc
 *    and cudaFree per buffer (each cudaFree waits for the device) remain the
 *    fallback when the arena is missing or full; those buffers are freed as
 *    before, so the driver may hand an address out again.
 *
 * 10. Periodic stalls. The H200 we test on stalls memory-bound work for
 *    1.3-1.4 us every 100.148 us of its own clock (found in the per-sample
 *    dumps: the excess over the median follows that period in every runner,
 *    r ~0.9). A sample of length w holds floor(w/T) or floor(w/T)+1 stalls,
 *    at random, so a ~52 us kernel has two modes 1.4 us apart, half its
 *    samples in each, and its median jumped by up to 1.7% between runners
 *    (bench/RESULTS.md, session 6). Each timed sample's ev0 is placed on the
 *    GPU's clock without an extra event: ev0 and evp swap after every sample
 *    and cudaEventElapsedTime(evp, ev0) is the time since the previous one.
 *    After the timing loop cr_stall_fit (stats.h) searches the periodogram
 *    of both sides' samples for a period in [S_STALL_TMIN_US,
 *    S_STALL_TMAX_US], fits its phase and each side's cost per stall, and,
 *    when the period passes its checks, each sample's stall count n is
 *    replaced by its expectation w/T (adj_us = d (n - w/T)). The reported
 *    times keep the machine's average stall cost (so they still compare
 *    with do_bench's level) and lose only the luck of the count; with no
 *    period found nothing changes. The wall-clock cross-check and the
 *    stopping rule use the raw times; the record carries the raw median
 *    (raw_median_us) and the stall found (stall_period_us, stall_us).
 *
 * 11. Process level. Each runner process times at a level of its own, an
 *    offset common to every kernel it times: on the H200, the medians of
 *    ten fresh runners of a ~7.5 us kernel spread 1.7-2.9% with nothing else
 *    changed, the same absolute 0.1-0.2 us at 11 and 52 us, steady for the
 *    whole process (bench/RESULTS.md, session 7: not the buffers, flush
 *    buffer, stream, event, code copy or context, not ASLR, huge pages or an
 *    idle GPU; four contexts in one process share it). The reference, timed
 *    beside the candidate, carries the same offset (its medians correlate
 *    with the candidate's at r 0.83-0.98 in seven sets of ten runners).
 *    Under the interleaved policy the worker sends the reference medians its first
 *    runner measured for the task (RunnerRequest.ref_anchor_us, the entry of
 *    the `cached` policy's cache); this runner's distance from them,
 *    reference median - anchor, is taken off both sides' samples, so the
 *    reference reads its anchor and the candidate what it would have read in
 *    that first process (cr_level_offset: only for anchors of at most
 *    CR_LEVEL_REF_MAX_US, short references whose own spread is below the
 *    level's, and distances of at most CR_LEVEL_MAX_US, beyond which the
 *    reference itself changed and nothing is taken off). The speedup is
 *    unchanged up to the offset's share of the candidate's time. The record
 *    carries the offset (level_offset_us); raw_median_us stays the event
 *    median as measured. The anchor comes from a candidate's process: an OK
 *    candidate (no hack flag) that slowed the reference's samples and not
 *    its own, undetected, would gain that speedup under any interleaved
 *    judge, and as the first of its task on a worker it would also move the
 *    later jobs' times by as much, at most CR_LEVEL_MAX_US.
 *    Under the `cached` policy the cached median is the anchor (it came from
 *    that first process), and this process's reference is measured by the
 *    warm-up, which runs both sides (note 7): the median of its reference
 *    samples (at least CR_LEVEL_WARMUP_MIN_SAMPLES, for cached medians of at
 *    most CR_LEVEL_WARMUP_REF_MAX_US) less the cached median is taken off the
 *    candidate's samples, so that the candidate and the cached reference it
 *    is divided by carry one process's level. Here too a candidate that
 *    slowed the reference's warm-up samples and not its own, undetected,
 *    would gain at most CR_LEVEL_MAX_US; before, a cached job could not move
 *    its reference at all. The warm-up samples include those taken before
 *    the clock settled and the first calls of the process; the median is
 *    what keeps them from mattering.
 *
 * 12. Work queued behind the timed call. triton's do_bench queues all its
 *    reps without waiting, so every kernel it times has more work queued
 *    behind it; the judge synchronises after every call, so nothing was.
 *    On the H200 that alone made do_bench read 0.5-1.3 us more per kernel,
 *    outside the kernel: its own span (GPU global timer) and its CUPTI time
 *    are the same either way, and 32 empty kernels queued behind each rep
 *    of a loop that waits for every rep add as much (bench/queue_probe.cu;
 *    bench/RESULTS.md, sessions 8 and 9). The judge read up to 7% under
 *    do_bench on ~11-50 us kernels. A kernel in a program runs with work
 *    queued behind it, as in do_bench, so each timed call now has
 *    S_TAIL_LAUNCHES empty kernels launched behind ev1 on the legacy stream
 *    (s_do_call, J->tail_now): the event window holds what do_bench's
 *    holds, and the judge read within 2% of it on every example kernel
 *    (session 9). The launches cost the host ~80 us per sample, which the
 *    budget absorbs as fewer samples (~45% fewer on ~8-11 us kernels).
 *    Such a sample's wall time holds the launches and their drain, which
 *    would hide side-stream work of about that length and, on a short
 *    kernel, make the host's launches the wall time. So about one sample
 *    in S_CHECK_ONE_IN, drawn from the secret seed (J->tail_pick) before
 *    the call, runs without the tail: those samples' wall times and gaps are
 *    the cross-check of note 4 and the wall median, and their event times
 *    count for nothing; the others' event times are the reported times, the
 *    stopping rule, the stall fit (note 10) and the level (note 11). A
 *    candidate cannot tell which kind its call is before it returns: the
 *    launches come after. Each side of a case ends with at least one sample
 *    of the first kind and S_CHECK_MIN of the second, taken after the loop
 *    where its draws fell short (a slow kernel, few samples), so neither the
 *    median nor the cross-check is ever left without samples.
 *    CR_CUDA_JUDGE_TAIL=N (diagnostics) queues N instead; 0 gives the judge
 *    before session 9, every sample counting for both.
 *    Under the cached policy the level (note 11) is measured by the
 *    warm-up's reference samples with the tail: 20 ms of warm-up held only
 *    29-47 of them on a ~8 us case, and that case's medians spread 1.6-3.3%
 *    between runners (session 9), so for a cached median short enough for
 *    the level the warm-up goes on until CR_LEVEL_WARMUP_SAMPLES of them
 *    (within its time limit). */
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
#include <time.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include "cuda_judge.h"

extern "C" {
#include "cpu_judge.h" /* cr_judge_flag, cr_judge_fail: one verdict policy for both backends */
#include "error.h"
#include "hash.h"
#include "inputs.h"
#include "log.h"
#include "nvml.h"
#include "stats.h"
#include "timeutil.h"
#include "topo.h"
}

#define S_NP CR_TASK_MAX_PARAMS
/* Set indices: 0 and 1 verify; timing draws from S_SET_TIMED upwards; the
 * stream that picks verified timed samples uses a set no input uses. */
#define S_SET_TIMED 2u
#define S_SET_SAMPLING 0xffffffffu
#define S_SET_HASHKEY 0xfffffffeu
#define S_SET_PLACEMENT 0xfffffffdu
#define S_SET_TAIL 0xfffffffcu /* the stream that picks the check samples (note 12) */
/* Exported by a shim that reports its runtime's launch errors (note 1). */
#define S_LAST_ERROR_SYM "cr_cuda_last_error"

#define S_SPIN_NS 2000000LL        /* 2 ms of busy polling before sleeping (note 2) */
#define S_NAP_MIN_NS 20000LL       /* first nap 20 us, doubling ... */
#define S_NAP_MAX_NS 1000000LL     /* ... up to 1 ms: a hung kernel costs no CPU */
#define S_RUN_TIMEOUT_S 60.0       /* JobOptions.run_timeout_s default (config.c) */
#define S_DEADLINE_FRAC 0.9        /* own deadline before the supervisor's kill ... */
#define S_DEADLINE_MARGIN_S 0.5    /* ... minus this, to write the report */
#define S_RESERVE_FRAC 0.15        /* of the run timeout, kept free for post-timing checks */
#define S_FLUSH_MIN (256ull << 20) /* flush at least 256 MiB: triton's do_bench default */
#define S_WARMUP_MIN_S 0.05        /* warm-up by time (DESIGN.md §4), >= 50 ms ... */
#define S_WARMUP_MAX_S 1.0         /* ... until the SM clock settles, at most this */
#define S_WARMUP_NVML_S 0.02       /* the floor when NVML watches the clock settle */
#define S_WARMUP_NEXT_S 0.02       /* later bench cases: the GPU is warm already */
#define S_CLOCK_STABLE_READS 3     /* reads in a row within 1% of the one before = settled */
#define S_MIN_SAMPLES_PREF 200     /* per side before the RSE rule may stop: the median's
                                      spread between runs, not the mean's RSE, is what
                                      a trainer sees (~0.1% for 1% noise) */
#define S_MIN_TIMING_FRAC 0.5      /* likewise: at least this share of the budget */
#define S_HARD_CAP 5.0             /* x budget: stop even below CR_JUDGE_MIN_SAMPLES */
#define S_SLOTS 3                  /* rotating buffer slots: addresses change every call */
#define S_STALL_TMIN_US 20.0       /* periodic stalls searched between these periods */
#define S_STALL_TMAX_US 2000.0     /* (note 10) */
#define S_JITTER (2ull << 20)      /* slack per buffer for random placement: a large page */
#define S_ROOM_MAX (256ull << 20)  /* timing slots: up to 3x the buffer, at most this */
#define S_ALIGN 256                /* offsets keep cudaMalloc's alignment guarantee */
#define S_ARENA_MAX (4ull << 30)   /* judge buffer arena (note 9): at most 4 GiB ... */
#define S_ARENA_SHARE 12           /* ... and at most 1/12 of the free device memory: the
                                      running runner, the worker's four spares (its
                                      default) and the last job's runner still ending
                                      hold at most 1 - (11/12)^6 = 41% of a small GPU's
                                      memory; each further spare takes 1/12 of what is
                                      left */
#define S_ARENA_MIN (64ull << 20)  /* below this, cudaMalloc per buffer */
#define S_ARENA_GRAIN (2ull << 20) /* a large page: arena buffers start on one */
#define S_ARENA_GAPS 16            /* random gap of 0-15 grains before each case */
#define S_VERIFY_ONE_IN 8          /* ~1 in 8 timed candidate outputs re-verified */
#define S_VERIFY_MAX 8             /* ... at most this many per bench case */
#define S_VERIFY_BYTES (1ull << 30) /* device memory for kept timed outputs */
#define S_TAIL_LAUNCHES 32         /* empty kernels queued behind a timed call (note 12) */
#define S_CHECK_ONE_IN 4           /* ~1 in 4 samples without them: the wall-clock checks' */
#define S_CHECK_MIN 5              /* ... and at least this many per side and case */
#define S_SIDE_MIN_US 10.0         /* hidden-work excess that flags side_stream: */
#define S_SIDE_FRAC 0.2            /* max(10 us, 20% of the candidate's median) */
#define S_BW_MARGIN 1.25           /* floor uses 1.25x the measured copy bandwidth */
#define S_FLOPS_PER_SM_CLK 16384.0 /* above any SM's peak (Hopper fp8 sparse is 8192) */
#define S_COPY_BYTES (256ull << 20) /* bandwidth probe: 4x an H200's L2 */
#define S_BW_SANE_MIN 1e9          /* a copy bandwidth outside these bytes/s ... */
#define S_BW_SANE_MAX 1e14         /* ... is a bad figure, not a GPU */
#define S_MIN_KEPT 10              /* fewer unthrottled samples: keep them all */
#define S_CLOCK_PERIOD_NS 5000000LL /* NVML read at most every 5 ms: a read is a driver
                                       round trip far longer than a short sample, and
                                       clocks and throttle reasons change on ms scales */
enum { S_PH_FILL, S_PH_RESET, S_PH_CALL, S_PH_CLOCK }; /* s_judge_t.host_ns */
/* Host time by step over the whole run (s_judge_t.step_ns), logged at the end. */
enum { S_ST_ALLOC, S_ST_FREE, S_ST_SYNC, S_ST_CAND, S_ST_REF, S_ST_CMP, S_ST_HASH, S_ST_KEEP,
       S_ST_N };
static const char *const s_step_name[S_ST_N] = {"alloc", "free", "input sync", "candidate calls",
                                                "reference calls", "compare", "hash compare",
                                                "keep outputs"};
#define S_THREADS 256

enum { S_CAND = 0, S_REF = 1, S_BASE = 2 };
static const char *const s_who[] = {"candidate", "reference", "baseline"};

typedef int (*s_last_error_fn)(void);

/* Device limits a candidate may change for everyone (cudaDeviceSetLimit);
 * the persisting-L2 size has its own reset (s_reset_state). */
static const cudaLimit s_limits[] = {
    cudaLimitStackSize,         cudaLimitPrintfFifoSize,
    cudaLimitMallocHeapSize,    cudaLimitDevRuntimeSyncDepth,
    cudaLimitDevRuntimePendingLaunchCount, cudaLimitMaxL2FetchGranularity,
};
#define S_NLIMITS (sizeof s_limits / sizeof s_limits[0])

/* The read-only segments of a loaded object (its code, .rodata and
 * fatbinary: where kernel names are, note 8), in memory. */
#define S_SEGS 8 /* PT_LOAD segments kept; ld makes 2 read-only ones */
typedef struct {
    const void *base;             /* the object's load address (dladdr's dli_fbase) */
    const char *p[S_SEGS];
    size_t n[S_SEGS];
    int nseg;
} s_image_t;

/* ---------------------------------------------------------------- state */

/* The device limits as first seen by this process (s_snapshot). */
static struct {
    int taken;
    size_t limit0[S_NLIMITS];
    int ok[S_NLIMITS]; /* readable on this device */
} s_snap;

static void s_snapshot(void)
{
    if (s_snap.taken)
        return;
    for (size_t i = 0; i < S_NLIMITS; i++)
        s_snap.ok[i] = cudaDeviceGetLimit(&s_snap.limit0[i], s_limits[i]) == cudaSuccess;
    cudaGetLastError();
    s_snap.taken = 1;
}

/* Signal and exit handling while clocks are locked: the handler only sets a
 * flag the poll loop reads; exit() inside candidate code still resets. */
static volatile sig_atomic_t s_signalled;
static cr_nvml_t *volatile s_locked; /* NVML handle while clocks are locked */
static const char *s_nvml_lib;       /* NULL = libnvidia-ml.so.1 */
static int s_atexit_done;

typedef struct {
    int c;                                     /* case index */
    size_t numel[S_NP];                        /* elements of each buffer param */
    size_t bytes[S_NP];                        /* bytes of each buffer param */
    size_t out_bytes;                          /* bytes of all out/inout buffers */
    alignas(16) unsigned char val[S_NP][16];   /* size/scalar values in their C type */
} s_layout_t;

typedef struct {
    void *base[S_NP]; /* device allocation per buffer param, NULL otherwise */
    void *p[S_NP];    /* where the buffer starts inside it this time (s_place) */
    size_t room[S_NP]; /* bytes of the allocation beyond the buffer */
    unsigned char own[S_NP]; /* 1: base came from cudaMalloc (freed by s_free); 0: from
                                the arena (given back by s_arena_release) */
} s_bufs_t;

/* What no request decides (s_setup_device): made by a prestarted runner
 * before its request, taken over whole by its judge. */
typedef struct {
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
                                            after each: note 10) */
    unsigned long long *dscratch;        /* device: hash sums, 2 per param; owned */
    unsigned long long *dcmp;            /* device: s_cmp_kernel's results, 6 per param; owned */
    char *arena;                         /* device: the judge's buffers (note 9); owned */
    size_t arena_bytes, arena_top;       /* its size; the first byte not handed out */
    void *flush;                         /* device: L2 flush buffer; owned */
    size_t flush_bytes;
    cudaEvent_t evf, evq;                /* before a sample's fill, before its flush */
    int persist_l2;                      /* device supports persisting-L2 limits */
    /* global state restored before every call (HACKS.md #19; s_reset_state) */
    size_t limit0[S_NLIMITS];            /* each of s_limits[] to restore (s_snapshot) */
    int limit_ok[S_NLIMITS];             /* ... readable and restorable on this device */
    double setup_s[3];                   /* s_setup_device's seconds: context, NVML, buffers */
} s_dev_t;

typedef struct {
    const Crucible__RunnerRequest *req;  /* borrowed */
    const cr_task_t *t;                  /* borrowed */
    Crucible__RewardRecord *rec;         /* borrowed; the verdict goes here */
    cr_task_entry_fn fn[3];              /* S_CAND, S_REF, S_BASE (= ref when none) */
    s_last_error_fn last_error[3];       /* each object's runtime error, or NULL (note 1) */
    unsigned char seed[32];              /* secret per-evaluation seed */
    uint64_t hash_key;                   /* secret key of the input hash (note 6) */
    int64_t deadline_ns;                 /* monotonic: give up with TIMEOUT here */
    int64_t reserve_ns;                  /* stop timing this long before the deadline */
    double budget_s;                     /* s of timing per bench case */
    double rse_target;                   /* relative standard error to stop at */
    const double *cached_ref_us;         /* us per bench case, reused (note 7); NULL = time
                                            the reference; borrowed from req */
    const double *cached_ref_rse;        /* their RSEs; NULL = unknown; borrowed from req */
    const double *ref_anchor_us;         /* us per bench case (note 11); NULL = none;
                                            borrowed from req */
    int dead;                            /* context unusable: no more CUDA calls (note 3) */
    int cand_ran;                        /* the candidate was called: later sticky errors
                                            are its doing, not the judge's */
    int handlers;                        /* SIGTERM/SIGINT handlers installed (lock) */
    struct sigaction old_term, old_int;  /* the handlers they replaced */
    int verdict;                         /* a status other than OK/INCORRECT/HACK was set */
    s_dev_t d;                           /* the device's facts and the judge's own buffers */
    /* launch checks (note 8) */
    int lc_on;                           /* CUPTI subscribed: calls are being counted */
    int lc_names;                        /* 1 names usable (found a reference name in its
                                            file), -1 not usable, 0 not known yet */
    int lc_ids_bad;                      /* shared-identity check off (ids inconsistent) */
    int lc_flagged;                      /* a launch check fired in this verification run */
    unsigned long lc_ok[2], lc_failed[2]; /* launches of the last call: S_CAND, S_REF */
    const void *obj_base[3];             /* load address of each object (dladdr) */
    s_image_t img[2];                    /* read-only bytes of S_CAND's and S_REF's */
    double copy_bw;                      /* B/s measured device-to-device; 0 = not yet */
    /* clocks */
    cr_clock_policy_t policy;
    unsigned locked_mhz;                 /* MHz while locked, else 0 */
    cr_rng_t place;                      /* draws buffer offsets (note 5) */
    cr_rng_t tail_pick;                  /* draws the check samples (note 12) */
    int tail;                            /* launches queued behind a timed call (note 12) */
    int tail_now;                        /* ... behind the call s_do_call makes now */
    uint64_t last_reasons;               /* throttle reasons read after the last sample */
    unsigned last_mhz;                   /* SM clock of the last NVML read */
    uint64_t clock_reads;                /* NVML reads made by s_sample */
    uint64_t l2_resets;                  /* persisting-L2 resets (s_reset_state) */
    int64_t last_clock_ns;               /* monotonic ns of the last NVML read; 0 = none */
    int64_t host_ns[4];                  /* per-sample host time by phase (S_PH_*), summed */
    int gpu_steps;                       /* CR_CUDA_JUDGE_GPU_STEPS: time fill and flush */
    double gpu_fill_us, gpu_flush_us;    /* per-sample GPU time, gpu_steps only: fill (to
                                            the flush's launch, the synchronise and reset
                                            included), flush; summed */
    int64_t step_ns[S_ST_N];             /* host time by step (S_ST_*), whole run */
    uint64_t host_samples;               /* samples summed in host_ns */
    FILE *dump;                          /* per-sample log ($CR_CUDA_JUDGE_SAMPLES); owned */
    int gpu_prev;                        /* evp holds this case's previous sample (note 10) */
    double gpu_now_us;                   /* GPU time of the last sample's ev0 in the case */
} s_judge_t;

/* Adds the host time since t0 to step st (the run's "by step" log line);
 * returns rc, so that a wrapper s_X of s_do_X is one statement. */
static int s_step(s_judge_t *J, int st, int64_t t0, int rc)
{
    J->step_ns[st] += cr_time_mono_ns() - t0;
    return rc;
}

/* ---------------------------------------------------------------- kernels */

__device__ __forceinline__ uint4 s_philox(uint64_t ctr, uint64_t key)
{
    uint4 c = make_uint4((uint32_t)ctr, (uint32_t)(ctr >> 32), 0x43727563u, 0x69626c65u);
    uint2 k = make_uint2((uint32_t)key, (uint32_t)(key >> 32));
    /* Philox4x32-10 (Salmon et al., SC'11): 10 rounds, the Random123 constants. */
#pragma unroll
    for (int r = 0; r < 10; r++) {
        uint32_t hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        uint32_t hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k.x += 0x9E3779B9u;
        k.y += 0xBB67AE85u;
    }
    return c;
}

typedef struct {
    uint64_t key;   /* Philox key of this (seed, case, set, param) */
    int dtype;      /* cr_dtype_t */
    int dist;       /* cr_dist_kind_t */
    double a, b;    /* distribution parameters */
} s_gen_t;

template <typename T> __device__ __forceinline__ void s_store_int(void *buf, size_t i, double v,
                                                                  double lo, double hi)
{
    v = rint(v); /* to nearest, then clamped: cr_inputs_set's rule */
    v = v < lo ? lo : v > hi ? hi : v;
    ((T *)buf)[i] = (T)v;
}

__device__ __forceinline__ void s_store(void *buf, size_t i, double v, int dtype)
{
    switch (dtype) {
    case CR_DT_F32: ((float *)buf)[i] = (float)v; break;
    case CR_DT_F64: ((double *)buf)[i] = v; break;
    case CR_DT_F16: ((__half *)buf)[i] = __double2half(v); break;
    case CR_DT_BF16: ((__nv_bfloat16 *)buf)[i] = __double2bfloat16(v); break;
    case CR_DT_I8: s_store_int<int8_t>(buf, i, v, -128.0, 127.0); break;
    case CR_DT_U8: s_store_int<uint8_t>(buf, i, v, 0.0, 255.0); break;
    case CR_DT_I16: s_store_int<int16_t>(buf, i, v, -32768.0, 32767.0); break;
    case CR_DT_I32: s_store_int<int32_t>(buf, i, v, -2147483648.0, 2147483647.0); break;
    case CR_DT_U32: s_store_int<uint32_t>(buf, i, v, 0.0, 4294967295.0); break;
    case CR_DT_I64: s_store_int<int64_t>(buf, i, v, -9.2233720368547758e18,
                                         9.2233720368547748e18); break;
    default: ((uint8_t *)buf)[i] = v != 0.0; break; /* bool */
    }
}

/* Four elements per Philox block (s_gen_kernel below)? */
__host__ __device__ static inline int s_gen_four(const s_gen_t &g)
{
    return g.dist != CR_DIST_INT && g.dtype != CR_DT_F64;
}

/* Philox blocks (threads' work items) s_gen_kernel needs for n elements. */
__host__ __device__ static inline size_t s_gen_blocks(const s_gen_t &g, size_t n)
{
    return s_gen_four(g) ? (n + 3) / 4 : n;
}

/* Inputs of 32 bits or fewer from a float distribution take four elements
 * from each Philox block (24 random bits each: all a float keeps; Box-Muller
 * on two words gives two normals, its cosine and its sine); doubles and
 * integer distributions one element per block, from 53-bit uniforms. A
 * fresh set is drawn before every timed call, so this is on the sampling
 * path: four per block made a sample's fill ~4x cheaper. */
__global__ void s_gen_kernel(void *buf, size_t n, s_gen_t g)
{
    const int four = s_gen_four(g);
    const size_t blocks = s_gen_blocks(g, n);
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < blocks;
         j += (size_t)gridDim.x * blockDim.x) {
        uint4 r = s_philox(j, g.key);
        if (four) {
            const uint32_t w[4] = {r.x, r.y, r.z, r.w};
            double v[4];
            for (int h = 0; h < 4; h += 2) {
                if (g.dist == CR_DIST_NORMAL) {
                    float u1 = (float)((w[h] >> 8) + 1) * 0x1.0p-24f; /* (0, 1]: log finite */
                    float u2 = (float)(w[h + 1] >> 8) * 0x1.0p-24f;
                    float rad = sqrtf(-2.0f * logf(u1)), sn, cs;
                    sincospif(2.0f * u2, &sn, &cs);
                    v[h] = g.a + g.b * (double)(rad * cs);
                    v[h + 1] = g.a + g.b * (double)(rad * sn);
                } else {
                    v[h] = g.a + (g.b - g.a) * (double)((float)(w[h] >> 8) * 0x1.0p-24f);
                    v[h + 1] = g.a + (g.b - g.a) * (double)((float)(w[h + 1] >> 8) * 0x1.0p-24f);
                }
            }
            for (int h = 0; h < 4 && 4 * j + h < n; h++)
                s_store(buf, 4 * j + h, v[h], g.dtype);
            continue;
        }
        uint64_t w0 = ((uint64_t)r.x << 32) | r.y, w1 = ((uint64_t)r.z << 32) | r.w;
        double u = (double)(w0 >> 11) * 0x1.0p-53; /* [0, 1) on the 2^-53 grid */
        double v;
        if (g.dist == CR_DIST_NORMAL) {
            double u1 = (double)((w0 >> 11) + 1) * 0x1.0p-53; /* (0, 1]: log stays finite */
            double u2 = (double)(w1 >> 11) * 0x1.0p-53;
            v = g.a + g.b * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
        } else if (g.dist == CR_DIST_UNIFORM) {
            v = g.a + (g.b - g.a) * u;
        } else {
            v = floor(g.a + (g.b - g.a) * u);
            if (v >= g.b)
                v = g.b - 1;
        }
        s_store(buf, j, v, g.dtype);
    }
}

/* Queued behind a timed call (note 12). */
__global__ void s_tail_kernel(void) {}

/* Writes the element pattern (es bytes, from cr_inputs_poison) n times. */
__global__ void s_poison_kernel(void *buf, size_t n, int es, uint64_t pat)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        switch (es) {
        case 8: ((uint64_t *)buf)[i] = pat; break;
        case 4: ((uint32_t *)buf)[i] = (uint32_t)pat; break;
        case 2: ((uint16_t *)buf)[i] = (uint16_t)pat; break;
        default: ((uint8_t *)buf)[i] = (uint8_t)pat; break;
        }
    }
}

__device__ __forceinline__ uint64_t s_splitmix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Note 6. bytes need not be a multiple of 4: the tail word is zero-padded
 * and the length is mixed in by the host. */
__global__ void s_hash_kernel(const void *buf, size_t bytes, uint64_t key,
                              unsigned long long *out)
{
    const uint32_t *w = (const uint32_t *)buf;
    size_t nw = bytes / 4;
    uint64_t acc = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j <= nw;
         j += (size_t)gridDim.x * blockDim.x) {
        uint32_t v = 0;
        if (j < nw) {
            v = w[j];
        } else {
            const uint8_t *tail = (const uint8_t *)buf + nw * 4;
            for (size_t b = 0; b < bytes % 4; b++)
                v |= (uint32_t)tail[b] << (8 * b);
        }
        acc += s_splitmix(key ^ (((uint64_t)j << 32) | v));
    }
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, (unsigned long long)acc);
}

/* Output comparison on the device: the rules of cr_inputs_compare and of
 * cr_judge_compare_outputs' unwritten check, element for element, so that a
 * check never copies outputs to the host (s_compare_dev). Per param, into
 * cnt[4] = {mismatches, unwritten, max |err| bits, max rel err bits} (the
 * maxima are non-negative doubles, whose bit patterns order like their
 * values) and first[2] = {first mismatch, first unwritten} (~0: none). */
__device__ __forceinline__ double s_dget(const void *b, int d, size_t i)
{
    switch (d) {
    case CR_DT_F32: return ((const float *)b)[i];
    case CR_DT_F64: return ((const double *)b)[i];
    case CR_DT_F16: return __half2float(((const __half *)b)[i]);
    case CR_DT_BF16: return __bfloat162float(((const __nv_bfloat16 *)b)[i]);
    case CR_DT_I8: return ((const int8_t *)b)[i];
    case CR_DT_U8: return ((const uint8_t *)b)[i];
    case CR_DT_I16: return ((const int16_t *)b)[i];
    case CR_DT_I32: return ((const int32_t *)b)[i];
    case CR_DT_U32: return ((const uint32_t *)b)[i];
    case CR_DT_I64: return (double)((const int64_t *)b)[i];
    case CR_DT_BOOL: return ((const uint8_t *)b)[i] != 0;
    default: return CUDART_NAN;
    }
}

__device__ __forceinline__ int s_dpoisoned(const void *b, int es, size_t i, uint64_t pat)
{
    switch (es) {
    case 8: return ((const uint64_t *)b)[i] == pat;
    case 4: return ((const uint32_t *)b)[i] == (uint32_t)pat;
    case 2: return ((const uint16_t *)b)[i] == (uint16_t)pat;
    default: return ((const uint8_t *)b)[i] == (uint8_t)pat;
    }
}

/* A warp's sum (op 0), minimum (op 1) or maximum (op 2), in lane 0. */
template <int op> __device__ __forceinline__ unsigned long long s_warp(unsigned long long v)
{
    for (int o = 16; o > 0; o >>= 1) {
        unsigned long long u = __shfl_down_sync(0xffffffffu, v, o);
        v = op == 0 ? v + u : op == 1 ? (u < v ? u : v) : (u > v ? u : v);
    }
    return v;
}

/* pat: the poison of an `out` param (unwritten check), es its element size;
 * es 0 = no unwritten check (inout). */
__global__ void s_cmp_kernel(const void *a, const void *r, int d, int es, uint64_t pat, size_t n,
                             double atol, double rtol, unsigned long long *cnt,
                             unsigned long long *first)
{
    unsigned long long bad = 0, unw = 0, fb = ~0ull, fu = ~0ull;
    double mabs = 0, mrel = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        if (es && s_dpoisoned(a, es, i, pat) && !s_dpoisoned(r, es, i, pat)) {
            unw++;
            fu = fu < i ? fu : i;
        }
        double x = s_dget(a, d, i), y = s_dget(r, d, i);
        int ok;
        if (isnan(y)) {
            ok = isnan(x);
        } else if (isinf(y)) {
            ok = x == y;
        } else if (!isfinite(x)) {
            ok = 0;
        } else {
            double err = fabs(__dsub_rn(x, y));
            mabs = fmax(mabs, err);
            if (y != 0)
                mrel = fmax(mrel, __ddiv_rn(err, fabs(y)));
            ok = err <= __dadd_rn(atol, __dmul_rn(rtol, fabs(y))); /* no fused multiply-add */
        }
        if (!ok) {
            bad++;
            fb = fb < i ? fb : i;
        }
    }
    bad = s_warp<0>(bad);
    unw = s_warp<0>(unw);
    fb = s_warp<1>(fb);
    fu = s_warp<1>(fu);
    unsigned long long ma = s_warp<2>((unsigned long long)__double_as_longlong(mabs));
    unsigned long long mr = s_warp<2>((unsigned long long)__double_as_longlong(mrel));
    if ((threadIdx.x & 31) == 0) {
        if (bad)
            atomicAdd(&cnt[0], bad);
        if (unw)
            atomicAdd(&cnt[1], unw);
        if (ma)
            atomicMax(&cnt[2], ma);
        if (mr)
            atomicMax(&cnt[3], mr);
        if (fb != ~0ull)
            atomicMin(&first[0], fb);
        if (fu != ~0ull)
            atomicMin(&first[1], fu);
    }
}

/* ---------------------------------------------------------------- verdicts */

/* A verdict outside the OK < INCORRECT < HACK_DETECTED order (CUDA_FAULT,
 * OOM, TIMEOUT, INFRA_ERROR, INVALID_TASK): it replaces whatever was there
 * and ends the judging. The first one wins. */
static void s_hard(s_judge_t *J, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_hard(s_judge_t *J, int status, const char *fmt, ...)
{
    if (J->verdict)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    J->verdict = 1;
    J->rec->status = (Crucible__Status)status;
    cr_judge_set_str(&J->rec->message, msg);
    cr_info("%s", msg);
}

/* Verdict for a CUDA error met around a call of `who`; returns -1. Errors
 * the context survives (a bad launch configuration) still end the run:
 * the verdict is reached. */
static int s_cuda_fail(s_judge_t *J, int who, cudaError_t e, const char *what, int c)
{
    /* Errors the context survives leave it usable for cleanup; others poison it. */
    int sticky = !(e == cudaErrorMemoryAllocation || e == cudaErrorInvalidConfiguration ||
                   e == cudaErrorInvalidValue || e == cudaErrorLaunchOutOfResources ||
                   e == cudaErrorInvalidDeviceFunction || e == cudaErrorNoKernelImageForDevice);
    int status;
    if (e == cudaErrorMemoryAllocation)
        status = CRUCIBLE__STATUS__STATUS_OOM;
    else if (e == cudaErrorLaunchTimeout)
        status = CRUCIBLE__STATUS__STATUS_TIMEOUT;
    else if (who == S_CAND || (sticky && J->cand_ran))
        /* A context broken while the reference runs after the candidate may
         * be the candidate's doing (a thread it left behind): never a free pass. */
        status = CRUCIBLE__STATUS__STATUS_CUDA_FAULT;
    else
        status = CRUCIBLE__STATUS__STATUS_INVALID_TASK; /* the task's own code failed */
    s_hard(J, status, "case %d: %s: %s: %s (%s)", c, s_who[who], what, cudaGetErrorName(e),
           cudaGetErrorString(e));
    J->dead = sticky;
    return -1;
}

/* For the judge's own CUDA calls outside a candidate's call. */
static int s_infra(s_judge_t *J, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    if (e == cudaErrorMemoryAllocation) {
        s_hard(J, CRUCIBLE__STATUS__STATUS_OOM, "out of device memory: %s", what);
        return -1;
    }
    /* Once the candidate has run, a sticky error in the judge's own calls
     * came from its work (e.g. a kernel it left running that faulted). */
    s_hard(J, J->cand_ran ? CRUCIBLE__STATUS__STATUS_CUDA_FAULT
                          : CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
           "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
    J->dead = 1;
    return -1;
}

/* ---------------------------------------------------------------- clocks */

static void s_on_signal(int sig)
{
    s_signalled = sig;
}

static void s_atexit_reset(void)
{
    cr_nvml_t *n = s_locked;
    if (n) {
        s_locked = NULL;
        cr_nvml_reset(n);
    }
}

static void s_unlock(s_judge_t *J)
{
    if (!J->locked_mhz)
        return;
    s_locked = NULL;
    int rc = cr_nvml_reset(J->d.nvml);
    if (rc != 0)
        cr_error("could not reset locked clocks on %s: %s (the worker resets them too)", J->d.bus,
                 cr_nvml_last_error(J->d.nvml));
    else
        cr_info("clocks of %s reset after lock at %u MHz", J->d.bus, J->locked_mhz);
    J->locked_mhz = 0;
}

/* Reads the SM clock and throttle reasons; 0s when NVML is absent. */
static void s_clock_read(s_judge_t *J, unsigned *mhz, uint64_t *reasons)
{
    *mhz = 0;
    *reasons = 0;
    if (!J->d.nvml)
        return;
    if (cr_nvml_sm_clock(J->d.nvml, mhz) != 0)
        *mhz = 0;
    if (cr_nvml_throttle_reasons(J->d.nvml, reasons) != 0)
        *reasons = 0;
}

/* ---------------------------------------------------------------- buffers */

static int s_is_buf(const cr_param_t *prm)
{
    return prm->role == CR_ROLE_IN || prm->role == CR_ROLE_OUT || prm->role == CR_ROLE_INOUT;
}

static int s_is_out(const cr_param_t *prm)
{
    return prm->role == CR_ROLE_OUT || prm->role == CR_ROLE_INOUT;
}

static unsigned s_grid(const s_judge_t *J, size_t n)
{
    size_t b = (n + S_THREADS - 1) / S_THREADS;
    size_t cap = (size_t)(J->d.sms > 0 ? J->d.sms : 1) * 16;
    return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

/* Case layout; a shape that does not evaluate is INVALID_TASK (the parser
 * checked every case, so this is a judge bug rather than an input error). */
static int s_layout(s_judge_t *J, int c, s_layout_t *L)
{
    const cr_task_t *t = J->t;
    memset(L, 0, sizeof *L);
    L->c = c;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!s_is_buf(prm)) {
            /* The shim reads `*(T *)args[p]`: floats in their type; integers
             * as int64, whose low bytes are the narrower type on LE. */
            if (prm->role == CR_ROLE_SCALAR && cr_dtype_is_float(prm->dtype))
                cr_inputs_set(L->val[p], prm->dtype, 0, t->cases[c].fval[p]);
            else
                memcpy(L->val[p], &t->cases[c].ival[p], sizeof(int64_t));
            continue;
        }
        int64_t n = 0;
        if (cr_task_numel(t, c, p, &n) != 0 || n < 0) {
            s_hard(J, CRUCIBLE__STATUS__STATUS_INVALID_TASK, "case %d: %s: shape does not evaluate",
                   c, prm->name);
            return -1;
        }
        L->numel[p] = (size_t)n;
        L->bytes[p] = (size_t)n * cr_dtype_size(prm->dtype);
        if (s_is_out(prm))
            L->out_bytes += L->bytes[p];
    }
    return 0;
}

/* Note 9: sz bytes of the arena, S_ARENA_GRAIN-aligned, or NULL when it is
 * full (the caller falls back to cudaMalloc). */
static void *s_arena_take(s_judge_t *J, size_t sz)
{
    s_dev_t *D = &J->d;
    sz = (sz + S_ARENA_GRAIN - 1) / S_ARENA_GRAIN * S_ARENA_GRAIN;
    if (!D->arena || sz > D->arena_bytes - D->arena_top)
        return NULL;
    void *p = D->arena + D->arena_top;
    D->arena_top += sz;
    return p;
}

/* Everything taken from the arena after this call goes back with
 * s_arena_release(J, mark); a random gap first, so that the next case's
 * buffers do not start where this one's did. */
static size_t s_arena_mark(s_judge_t *J)
{
    s_dev_t *D = &J->d;
    size_t mark = D->arena_top;
    size_t gap = (size_t)(cr_rng_next(&J->place) % S_ARENA_GAPS) * S_ARENA_GRAIN;
    D->arena_top = gap <= D->arena_bytes - D->arena_top ? D->arena_top + gap : D->arena_bytes;
    return mark;
}

static void s_arena_release(s_judge_t *J, size_t mark)
{
    J->d.arena_top = mark;
}

/* One buffer of sz bytes: from the arena, else cudaMalloc (*own = 1). */
static cudaError_t s_buf_get(s_judge_t *J, size_t sz, void **base, unsigned char *own)
{
    *own = 0;
    if ((*base = s_arena_take(J, sz)))
        return cudaSuccess;
    cudaError_t e = cudaMalloc(base, sz);
    if (e != cudaSuccess)
        *base = NULL;
    *own = e == cudaSuccess;
    return e;
}

static void s_do_free(s_judge_t *J, s_bufs_t *B)
{
    for (int p = 0; p < S_NP; p++) {
        if (B->base[p] && B->own[p] && !J->dead)
            cudaFree(B->base[p]);
        B->base[p] = B->p[p] = NULL;
        B->room[p] = 0;
        B->own[p] = 0;
    }
}

/* s_do_X does the work; s_X adds its host time to J->step_ns (s_step). */
static void s_free(s_judge_t *J, s_bufs_t *B)
{
    int64_t t0 = cr_time_mono_ns();
    s_do_free(J, B);
    s_step(J, S_ST_FREE, t0, 0);
}

/* Moves every buffer of B to a new random S_ALIGN-aligned offset inside its
 * allocation (note 5). */
static void s_place(s_judge_t *J, s_bufs_t *B)
{
    for (int p = 0; p < S_NP; p++)
        if (B->base[p])
            B->p[p] = (char *)B->base[p] +
                      (B->room[p] >= S_ALIGN
                           ? S_ALIGN * (cr_rng_next(&J->place) % (B->room[p] / S_ALIGN + 1))
                           : 0);
}

/* Room for a timing slot's buffer of `bytes`: 3x the buffer (so each call
 * lands on mostly other physical pages), between S_JITTER and S_ROOM_MAX. */
static size_t s_room(size_t bytes)
{
    size_t r = 3 * bytes;
    r = r < S_JITTER ? S_JITTER : r > S_ROOM_MAX ? S_ROOM_MAX : r;
    return (r + S_ALIGN - 1) / S_ALIGN * S_ALIGN;
}

/* One device buffer per buffer param, with S_JITTER bytes of room (so a
 * zero-size buffer is still a distinct pointer, and s_place can move it), or
 * s_room()'s with wide. Returns 0, or -1 with an OOM verdict and B empty;
 * with quiet, -1 without a verdict (the caller can do with less). */
static int s_do_alloc(s_judge_t *J, const s_layout_t *L, s_bufs_t *B, int quiet, int wide)
{
    memset(B, 0, sizeof *B);
    const size_t top = J->d.arena_top; /* given back if a buffer cannot be had */
    for (int p = 0; p < J->t->nparams; p++) {
        if (!s_is_buf(&J->t->params[p]))
            continue;
        B->room[p] = wide ? s_room(L->bytes[p]) : S_JITTER;
        size_t sz = L->bytes[p] + B->room[p];
        cudaError_t e = s_buf_get(J, sz, &B->base[p], &B->own[p]);
        if (e != cudaSuccess) {
            s_arena_release(J, top);
            char what[160];
            snprintf(what, sizeof what, "case %d: %zu bytes for '%s'", L->c, sz,
                     J->t->params[p].name);
            s_free(J, B);
            if (quiet) {
                cudaGetLastError();
                return -1;
            }
            return s_infra(J, e, what);
        }
    }
    s_place(J, B);
    return 0;
}

static int s_alloc_q(s_judge_t *J, const s_layout_t *L, s_bufs_t *B, int quiet, int wide)
{
    int64_t t0 = cr_time_mono_ns();
    return s_step(J, S_ST_ALLOC, t0, s_do_alloc(J, L, B, quiet, wide));
}

static int s_alloc(s_judge_t *J, const s_layout_t *L, s_bufs_t *B)
{
    return s_alloc_q(J, L, B, 0, 0);
}

/* in/inout drawn on the device from (seed, case, set, param); out poisoned.
 * Queued on the legacy stream; nothing waits here. */
static int s_fill(s_judge_t *J, const s_layout_t *L, uint32_t set, const s_bufs_t *B)
{
    const cr_task_t *t = J->t;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!s_is_buf(prm) || !B->p[p] || L->numel[p] == 0)
            continue;
        if (prm->role == CR_ROLE_OUT) {
            unsigned char pat[8] = {0};
            uint64_t v = 0;
            cr_inputs_poison(pat, prm->dtype, 1);
            memcpy(&v, pat, sizeof v);
            s_poison_kernel<<<s_grid(J, L->numel[p]), S_THREADS, 0, cudaStreamLegacy>>>(
                B->p[p], L->numel[p], (int)cr_dtype_size(prm->dtype), v);
        } else {
            cr_rng_t rng;
            cr_rng_seed(&rng, J->seed, (uint32_t)L->c, set, (uint32_t)p);
            s_gen_t g;
            g.key = rng.s[0] ^ rng.s[1]; /* 64 bits of the BLAKE2b state (note 5) */
            g.dtype = prm->dtype;
            g.dist = prm->init.kind;
            g.a = prm->init.a;
            g.b = prm->init.b;
            s_gen_kernel<<<s_grid(J, s_gen_blocks(g, L->numel[p])), S_THREADS, 0,
                           cudaStreamLegacy>>>(B->p[p], L->numel[p], g);
        }
    }
    return s_infra(J, cudaGetLastError(), "input generation launch");
}

/* Queues the hash of every `in` buffer into dscratch[slot * S_NP + p]. */
static int s_hash_queue(s_judge_t *J, const s_layout_t *L, const s_bufs_t *B, int slot)
{
    const cr_task_t *t = J->t;
    unsigned long long *d = J->d.dscratch + (size_t)slot * S_NP;
    cudaMemsetAsync(d, 0, S_NP * sizeof *d, cudaStreamLegacy);
    for (int p = 0; p < t->nparams; p++)
        if (t->params[p].role == CR_ROLE_IN && B->p[p])
            s_hash_kernel<<<s_grid(J, L->bytes[p] / 4 + 1), S_THREADS, 0, cudaStreamLegacy>>>(
                B->p[p], L->bytes[p], J->hash_key, d + p);
    return s_infra(J, cudaGetLastError(), "input hash launch");
}

/* Copies both hash slots back; names the first `in` param that changed. */
static int s_do_hash_compare(s_judge_t *J, const char **mutated)
{
    unsigned long long h[2 * S_NP];
    *mutated = NULL;
    if (s_infra(J, cudaMemcpy(h, J->d.dscratch, sizeof h, cudaMemcpyDeviceToHost), "input hash"))
        return -1;
    for (int p = 0; p < J->t->nparams; p++)
        if (J->t->params[p].role == CR_ROLE_IN && h[p] != h[S_NP + p] && !*mutated)
            *mutated = J->t->params[p].name;
    return 0;
}

static int s_hash_compare(s_judge_t *J, const char **mutated)
{
    int64_t t0 = cr_time_mono_ns();
    return s_step(J, S_ST_HASH, t0, s_do_hash_compare(J, mutated));
}

/* ---------------------------------------------------------------- launches */

/* CUPTI's callback API (cupti_callbacks.h, cupti_*_cbid.h), declared here so
 * that the judge builds without CUPTI's headers and links nothing new: the
 * library is dlopen'ed (note 8). The layout and numbers are CUPTI's ABI;
 * where the headers are at hand the build checks them below. */
typedef struct {
    int site;                 /* CUpti_ApiCallbackSite */
    const char *function_name;
    const void *params;       /* the API call's arguments, in declaration order */
    void *ret;                /* cudaError_t * (runtime) or CUresult * (driver); exit only */
    const char *symbol_name;  /* the kernel's name, in launch callbacks */
    void *context;
    uint32_t context_uid;
    uint64_t *correlation_data;
    uint32_t correlation_id;
} s_cupti_data_t;
typedef void (*s_cupti_cb_fn)(void *userdata, int domain, uint32_t cbid, const void *data);
typedef int (*s_cupti_subscribe_fn)(void **sub, s_cupti_cb_fn cb, void *userdata);
typedef int (*s_cupti_unsubscribe_fn)(void *sub);
typedef int (*s_cupti_enable_fn)(uint32_t enable, void *sub, int domain, uint32_t cbid);
typedef int (*s_cupti_result_fn)(int result, const char **str);
enum { S_SITE_ENTER = 0, S_SITE_EXIT = 1, S_DOM_DRIVER = 1, S_DOM_RUNTIME = 2 };

/* The calls watched. field: which argument is the kernel's identity (-1:
 * none); kind: S_CB_LAUNCH a kernel launch, S_CB_GRAPH a graph launch
 * (counts as a launch; its kernels are unnamed), S_CB_GETKERNEL the
 * runtime looking up the handle of a host stub (arguments: the handle's
 * address, the stub), which tells whose object a handle's kernel is. */
enum { S_CB_LAUNCH = 1, S_CB_GRAPH = 2, S_CB_GETKERNEL = 3 };
typedef struct {
    int domain;
    uint32_t cbid;
    int field, kind;
    const char *name;
} s_watch_t;
static const s_watch_t s_watch[] = {
    {S_DOM_RUNTIME, 13, 0, S_CB_LAUNCH, "cudaLaunch"},
    {S_DOM_RUNTIME, 211, 0, S_CB_LAUNCH, "cudaLaunchKernel"},
    {S_DOM_RUNTIME, 213, 0, S_CB_LAUNCH, "cudaLaunch_ptsz"},
    {S_DOM_RUNTIME, 214, 0, S_CB_LAUNCH, "cudaLaunchKernel_ptsz"},
    {S_DOM_RUNTIME, 269, 0, S_CB_LAUNCH, "cudaLaunchCooperativeKernel"},
    {S_DOM_RUNTIME, 270, 0, S_CB_LAUNCH, "cudaLaunchCooperativeKernel_ptsz"},
    {S_DOM_RUNTIME, 272, -1, S_CB_LAUNCH, "cudaLaunchCooperativeKernelMultiDevice"},
    {S_DOM_RUNTIME, 311, -1, S_CB_GRAPH, "cudaGraphLaunch"},
    {S_DOM_RUNTIME, 312, -1, S_CB_GRAPH, "cudaGraphLaunch_ptsz"},
    {S_DOM_RUNTIME, 430, 1, S_CB_LAUNCH, "cudaLaunchKernelExC"},
    {S_DOM_RUNTIME, 431, 1, S_CB_LAUNCH, "cudaLaunchKernelExC_ptsz"},
    {S_DOM_RUNTIME, 505, 0, S_CB_LAUNCH, "__cudaLaunchKernel"}, /* nvcc 13's <<< >>> */
    {S_DOM_RUNTIME, 506, 0, S_CB_LAUNCH, "__cudaLaunchKernel_ptsz"},
    {S_DOM_RUNTIME, 439, 0, S_CB_GETKERNEL, "cudaGetKernel"},
    {S_DOM_RUNTIME, 504, 0, S_CB_GETKERNEL, "__cudaGetKernel"}, /* nvcc 13's stubs */
    {S_DOM_DRIVER, 115, 0, S_CB_LAUNCH, "cuLaunch"},
    {S_DOM_DRIVER, 116, 0, S_CB_LAUNCH, "cuLaunchGrid"},
    {S_DOM_DRIVER, 117, 0, S_CB_LAUNCH, "cuLaunchGridAsync"},
    {S_DOM_DRIVER, 307, 0, S_CB_LAUNCH, "cuLaunchKernel"},
    {S_DOM_DRIVER, 442, 0, S_CB_LAUNCH, "cuLaunchKernel_ptsz"},
    {S_DOM_DRIVER, 477, 0, S_CB_LAUNCH, "cuLaunchCooperativeKernel"},
    {S_DOM_DRIVER, 478, 0, S_CB_LAUNCH, "cuLaunchCooperativeKernel_ptsz"},
    {S_DOM_DRIVER, 480, -1, S_CB_LAUNCH, "cuLaunchCooperativeKernelMultiDevice"},
    {S_DOM_DRIVER, 514, -1, S_CB_GRAPH, "cuGraphLaunch"},
    {S_DOM_DRIVER, 515, -1, S_CB_GRAPH, "cuGraphLaunch_ptsz"},
    {S_DOM_DRIVER, 652, 1, S_CB_LAUNCH, "cuLaunchKernelEx"},
    {S_DOM_DRIVER, 653, 1, S_CB_LAUNCH, "cuLaunchKernelEx_ptsz"},
};
#define S_NWATCH (sizeof s_watch / sizeof s_watch[0])

#if defined(__has_include)
#if __has_include(<cupti_callbacks.h>) && __has_include(<cupti_runtime_cbid.h>) && \
    __has_include(<cupti_driver_cbid.h>) && __has_include(<cupti_version.h>)
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_version.h>
static_assert(offsetof(CUpti_CallbackData, functionParams) ==
                  offsetof(s_cupti_data_t, params), "CUPTI ABI");
static_assert(offsetof(CUpti_CallbackData, functionReturnValue) ==
                  offsetof(s_cupti_data_t, ret), "CUPTI ABI");
static_assert(offsetof(CUpti_CallbackData, symbolName) ==
                  offsetof(s_cupti_data_t, symbol_name), "CUPTI ABI");
static_assert((int)CUPTI_API_EXIT == (int)S_SITE_EXIT &&
                  (int)CUPTI_CB_DOMAIN_DRIVER_API == (int)S_DOM_DRIVER &&
                  (int)CUPTI_CB_DOMAIN_RUNTIME_API == (int)S_DOM_RUNTIME, "CUPTI ABI");
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 == 211 &&
                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 == 430 &&
                  CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 == 311 &&
                  CUPTI_RUNTIME_TRACE_CBID_cudaGetKernel_v12000 == 439 &&
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel == 307 &&
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx == 652 &&
                  CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch == 514, "CUPTI callback ids");
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
static_assert(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 == 505 &&
                  CUPTI_RUNTIME_TRACE_CBID___cudaGetKernel_v13000 == 504, "CUPTI callback ids");
#endif
#endif
#endif

/* Kernels seen, by identity. Entries are only added (never freed: a
 * callback of a thread the candidate left behind may still read them). */
#define S_KERNELS 512 /* distinct kernels remembered; far above any candidate's */
typedef struct {
    const void *id;   /* host stub, cudaKernel_t or CUfunction */
    const void *stub; /* host stub of the kernel, when known; NULL otherwise */
    char *name;       /* as CUPTI names it (mangled); NULL when unknown; owned */
    unsigned who;     /* bit 1 << S_CAND, 1 << S_REF: whose calls launched it */
    int reported;     /* a finding about it was reported */
} s_kernel_t;

static struct {
    void *lib;                    /* libcupti, dlopen'ed; kept loaded */
    void *sub;                    /* the subscriber handle; NULL = not subscribed */
    s_cupti_unsubscribe_fn unsubscribe;
    s_cupti_enable_fn enable;
    int who;                      /* S_CAND, S_REF while their call runs; -1 otherwise */
    unsigned long ok[2], failed[2]; /* launches in the current call, by side */
    s_kernel_t k[S_KERNELS];      /* guarded by s_lc_mu */
    int nk;
    int full;                     /* the table overflowed */
} s_lc;
static pthread_mutex_t s_lc_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int s_lc_depth; /* runtime launch calls in progress on this thread */

/* Finds or adds the entry of identity id (under s_lc_mu). NULL when full. */
static s_kernel_t *s_lc_find(const void *id)
{
    for (int i = 0; i < s_lc.nk; i++)
        if (s_lc.k[i].id == id)
            return &s_lc.k[i];
    if (s_lc.nk == S_KERNELS) {
        s_lc.full = 1;
        return NULL;
    }
    s_kernel_t *e = &s_lc.k[s_lc.nk++];
    memset(e, 0, sizeof *e);
    e->id = id;
    return e;
}

/* The callback: runs on whichever thread made the call, for the watched
 * calls only (s_lc_start enables nothing else), so a call that launches
 * nothing pays nothing. */
static void s_lc_callback(void *userdata, int domain, uint32_t cbid, const void *data)
{
    (void)userdata;
    const s_cupti_data_t *d = (const s_cupti_data_t *)data;
    const s_watch_t *w = NULL;
    for (size_t i = 0; i < S_NWATCH && !w; i++)
        if (s_watch[i].domain == domain && s_watch[i].cbid == cbid)
            w = &s_watch[i];
    if (!w || !d)
        return;
    const void *const *args = (const void *const *)d->params;
    if (w->kind == S_CB_GETKERNEL) {
        /* (cudaKernel_t *handle, const void *stub): on exit the handle is set */
        if (d->site != S_SITE_EXIT || (d->ret && *(const int *)d->ret != 0) || !args ||
            !args[0] || !*(const void *const *)args[0])
            return;
        pthread_mutex_lock(&s_lc_mu);
        s_kernel_t *e = s_lc_find(*(const void *const *)args[0]);
        if (e && !e->stub)
            e->stub = args[1];
        pthread_mutex_unlock(&s_lc_mu);
        return;
    }
    int rt = domain == S_DOM_RUNTIME;
    if (d->site == S_SITE_ENTER) {
        s_lc_depth += rt;
        return;
    }
    if (rt)
        s_lc_depth -= s_lc_depth > 0;
    else if (s_lc_depth > 0)
        return; /* the driver half of a runtime launch: counted by the runtime's callback */
    int who = __atomic_load_n(&s_lc.who, __ATOMIC_ACQUIRE);
    if (who != S_CAND && who != S_REF)
        return;
    /* cudaSuccess and CUDA_SUCCESS are both 0 */
    if (d->ret && *(const int *)d->ret != 0) {
        __atomic_fetch_add(&s_lc.failed[who], 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_add(&s_lc.ok[who], 1, __ATOMIC_RELAXED);
    if (w->kind == S_CB_GRAPH)
        return; /* a graph launch counts; its kernels have no identity here */
    const void *id = w->field >= 0 && args ? args[w->field] : NULL;
    if (!id)
        return;
    pthread_mutex_lock(&s_lc_mu);
    s_kernel_t *e = s_lc_find(id);
    if (e) {
        e->who |= 1u << who;
        if (!e->name && d->symbol_name)
            e->name = strdup(d->symbol_name);
        /* the pre-13 runtime calls pass the host stub itself */
        Dl_info info;
        if (!e->stub && rt && w->cbid != 505 && w->cbid != 506 && dladdr(id, &info) &&
            info.dli_fbase)
            e->stub = id;
    }
    pthread_mutex_unlock(&s_lc_mu);
}

/* Load address and path of the object holding p; NULL when none does. */
static const void *s_obj_of(const void *p, const char **path)
{
    Dl_info info;
    if (path)
        *path = NULL;
    if (!p || !dladdr(p, &info) || !info.dli_fbase)
        return NULL;
    if (path)
        *path = info.dli_fname;
    return info.dli_fbase;
}

static int s_image_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    s_image_t *im = (s_image_t *)arg;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && (uintptr_t)im->base >= (lo & ~(uintptr_t)0xfff) &&
               (uintptr_t)im->base < lo + ph->p_memsz;
    }
    if (!mine)
        return 0;
    for (int i = 0; i < info->dlpi_phnum && im->nseg < S_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || (ph->p_flags & PF_W))
            continue;
        im->p[im->nseg] = (const char *)(info->dlpi_addr + ph->p_vaddr);
        im->n[im->nseg++] = ph->p_filesz; /* beyond the file's bytes there are only zeros */
    }
    return 1;
}

/* Collects the read-only segments of the object loaded at base (writable
 * ones are left out: the candidate could write a name there at run time).
 * Returns how many. */
static int s_image(const void *base, s_image_t *im)
{
    memset(im, 0, sizeof *im);
    im->base = base;
    if (base)
        dl_iterate_phdr(s_image_cb, im);
    return im->nseg;
}

static int s_in_image(const s_image_t *im, const char *name)
{
    if (!name || !name[0])
        return 0;
    size_t len = strlen(name);
    for (int i = 0; i < im->nseg; i++)
        if (memmem(im->p[i], im->n[i], name, len))
            return 1;
    return 0;
}

static int s_find_cudart(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "/libcudart.so")) {
        snprintf((char *)arg, PATH_MAX, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* dlopens CUPTI: $CR_CUPTI_LIBRARY, else the one beside the libcudart.so
 * the objects loaded (same toolkit, so the same version), else the
 * loader's search path, else the toolkit's usual places. */
static void *s_cupti_open(char *used, size_t usedlen)
{
    char dir[PATH_MAX] = "", tries[6][PATH_MAX + 32];
    int n = 0;
    const char *env = getenv("CR_CUPTI_LIBRARY");
    if (env && env[0])
        snprintf(tries[n++], sizeof tries[0], "%s", env);
    if (dl_iterate_phdr(s_find_cudart, dir) && strrchr(dir, '/')) {
        *strrchr(dir, '/') = '\0';
        snprintf(tries[n++], sizeof tries[0], "%s/libcupti.so", dir);
        snprintf(tries[n++], sizeof tries[0], "%s/libcupti.so.%d", dir, CUDART_VERSION / 1000);
    }
    snprintf(tries[n++], sizeof tries[0], "libcupti.so.%d", CUDART_VERSION / 1000);
    snprintf(tries[n++], sizeof tries[0], "libcupti.so");
    snprintf(tries[n++], sizeof tries[0], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
    for (int i = 0; i < n; i++) {
        void *h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(used, usedlen, "%.*s", (int)usedlen - 1, tries[i]);
            return h;
        }
    }
    const char *e = dlerror();
    snprintf(used, usedlen, "%s", e ? e : "libcupti.so not found");
    return NULL;
}

/* Loads CUPTI and subscribes (no callback enabled yet): 0 with the library
 * in used, or -1 with the reason there. */
static int s_lc_subscribe(char *used, size_t usedlen)
{
    s_lc.lib = s_cupti_open(used, usedlen);
    if (!s_lc.lib) {
        char why[PATH_MAX + 64];
        snprintf(why, sizeof why, "no CUPTI (%s)", used);
        snprintf(used, usedlen, "%s", why);
        return -1;
    }
    s_cupti_subscribe_fn subscribe = NULL;
    s_cupti_result_fn result = NULL;
    void *sym = dlsym(s_lc.lib, "cuptiSubscribe");
    memcpy(&subscribe, &sym, sizeof sym);
    sym = dlsym(s_lc.lib, "cuptiUnsubscribe");
    memcpy(&s_lc.unsubscribe, &sym, sizeof sym);
    sym = dlsym(s_lc.lib, "cuptiEnableCallback");
    memcpy(&s_lc.enable, &sym, sizeof sym);
    sym = dlsym(s_lc.lib, "cuptiGetResultString");
    memcpy(&result, &sym, sizeof sym);
    if (!subscribe || !s_lc.unsubscribe || !s_lc.enable) {
        snprintf(used + strlen(used), usedlen - strlen(used), " lacks the callback API");
        return -1;
    }
    __atomic_store_n(&s_lc.who, -1, __ATOMIC_RELEASE);
    void *sub = NULL;
    int rc = subscribe(&sub, s_lc_callback, NULL);
    if (rc != 0 || !sub) {
        const char *why = NULL;
        if (!result || result(rc, &why) != 0 || !why)
            why = "error";
        /* e.g. CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED under a profiler */
        snprintf(used, usedlen, "cuptiSubscribe: %s (%d)", why, rc);
        return -1;
    }
    s_lc.sub = sub;
    return 0;
}

/* Subscribes to the launch callbacks and reads the candidate's and the
 * reference's object files (note 8). Whatever fails leaves the checks off,
 * logged: the verdict then rests on the other checks, as before them. */
static void s_lc_start(s_judge_t *J)
{
    const char *path[3];
    for (int i = 0; i < 3; i++) {
        void *p;
        memcpy(&p, &J->fn[i], sizeof p);
        J->obj_base[i] = s_obj_of(p, &path[i]);
    }
    if (!J->obj_base[S_CAND] || !J->obj_base[S_REF]) {
        cr_warn("launch checks off: the candidate's or the reference's object is unknown");
        return;
    }
    /* Names are looked for in the objects as mapped, not in their files: a
     * sandboxed runner may not be able to open the reference's folder. */
    for (int i = S_CAND; i <= S_REF; i++)
        if (s_image(J->obj_base[i], &J->img[i]) == 0)
            cr_warn("launch checks: no read-only segment found in %s: kernel names not "
                    "checked", path[i] ? path[i] : "?");
    char used[PATH_MAX + 64] = "subscribed by the prestart";
    int64_t tl = cr_time_mono_ns();
    if (!s_lc.sub && s_lc_subscribe(used, sizeof used) != 0) {
        cr_warn("launch checks off: %s", used);
        return;
    }
    int64_t tl1 = cr_time_mono_ns();
    void *sub = s_lc.sub;
    s_cupti_enable_fn enable = s_lc.enable;
    int launches = 0;
    for (size_t i = 0; i < S_NWATCH; i++)
        if (enable(1, sub, s_watch[i].domain, s_watch[i].cbid) == 0)
            launches += s_watch[i].kind != S_CB_GETKERNEL;
        else
            cr_debug("launch checks: CUPTI cannot watch %s", s_watch[i].name);
    if (launches == 0) {
        cr_warn("launch checks off: CUPTI enabled none of the launch callbacks");
        s_lc.unsubscribe(sub);
        s_lc.sub = NULL;
        return;
    }
    J->lc_on = 1;
    cr_info("launch checks on (%s, %d launch calls watched; %.3f s to load CUPTI and "
            "subscribe, %.3f s to enable)", used, launches, (double)(tl1 - tl) / 1e9,
            (double)(cr_time_mono_ns() - tl1) / 1e9);
}

/* Ends the subscription: no callback from here on, so none in a timed
 * window. CUPTI stays loaded (unloading a tool from a live context is not
 * something CUPTI promises to survive). */
static void s_lc_stop(s_judge_t *J)
{
    __atomic_store_n(&s_lc.who, -1, __ATOMIC_RELEASE);
    if (s_lc.sub && s_lc.unsubscribe(s_lc.sub) != 0) {
        /* still subscribed: turn every callback off, so none fires while timing */
        int left = 0;
        for (size_t i = 0; i < S_NWATCH; i++)
            left += s_lc.enable(0, s_lc.sub, s_watch[i].domain, s_watch[i].cbid) != 0;
        cr_warn("launch checks: cuptiUnsubscribe failed; callbacks disabled%s",
                left ? " except some CUPTI refused to disable" : "");
    }
    s_lc.sub = NULL;
    J->lc_on = 0;
}

/* Around a verification call of who (s_call). */
static void s_lc_begin(s_judge_t *J, int who)
{
    if (!J->lc_on || (who != S_CAND && who != S_REF))
        return;
    __atomic_store_n(&s_lc.ok[who], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s_lc.failed[who], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s_lc.who, who, __ATOMIC_RELEASE);
}

static void s_lc_end(s_judge_t *J, int who)
{
    if (!J->lc_on || (who != S_CAND && who != S_REF))
        return;
    __atomic_store_n(&s_lc.who, -1, __ATOMIC_RELEASE);
    J->lc_ok[who] = __atomic_load_n(&s_lc.ok[who], __ATOMIC_RELAXED);
    J->lc_failed[who] = __atomic_load_n(&s_lc.failed[who], __ATOMIC_RELAXED);
}

/* Whether the object at path is a library the task allows: its file name
 * starts with "lib<name>" for an allowed name ("cublas" also admits
 * libcublasLt, which cuBLAS itself calls). */
static int s_allowed_lib(const cr_task_t *t, const char *path)
{
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    for (int i = 0; base && i < t->nallow; i++) {
        char want[96];
        snprintf(want, sizeof want, "lib%s", t->allow[i]);
        if (!strncmp(base, want, strlen(want)))
            return 1;
    }
    return 0;
}

/* Calibration on the reference's launches (under s_lc_mu): its kernel names
 * must be found in its own file for names to mean anything, and one name
 * must not come with two identities for the identity to mean anything. */
static void s_lc_calibrate(s_judge_t *J)
{
    int named = 0, found = 0;
    for (int i = 0; i < s_lc.nk; i++) {
        const s_kernel_t *e = &s_lc.k[i];
        if (!(e->who & (1u << S_REF)) || !e->name)
            continue;
        named++;
        found += s_in_image(&J->img[S_REF], e->name);
        for (int j = i + 1; j < s_lc.nk && !J->lc_ids_bad; j++)
            if ((s_lc.k[j].who & (1u << S_REF)) && s_lc.k[j].name &&
                !strcmp(s_lc.k[j].name, e->name)) {
                J->lc_ids_bad = 1;
                cr_warn("launch checks: reference kernel %s seen under two identities: "
                        "identities not compared", e->name);
            }
    }
    if (J->lc_names == 0 && found)
        J->lc_names = 1;
    else if (J->lc_names == 0 && named && J->img[S_REF].nseg) {
        J->lc_names = -1;
        cr_warn("launch checks: none of the reference's %d kernel names occurs in its "
                "object: names not checked", named);
    }
}

/* Why kernel e (launched by the candidate) is foreign, or NULL (under
 * s_lc_mu). */
static const char *s_lc_foreign(s_judge_t *J, const s_kernel_t *e, char *why, size_t len)
{
    const cr_task_t *t = J->t;
    const char *path = NULL;
    const void *owner = e->stub ? s_obj_of(e->stub, &path) : NULL;
    if (owner) { /* whose object holds the kernel's host stub: decisive */
        if (owner == J->obj_base[S_CAND])
            return NULL;
        if (owner == J->obj_base[S_REF] || owner == J->obj_base[S_BASE]) {
            snprintf(why, len, "it is the reference's own kernel (its host stub lies in %s)",
                     path ? path : "the reference's object");
            return why;
        }
        if (s_allowed_lib(t, path))
            return NULL;
        snprintf(why, len, "it comes from %s, a library the task does not allow",
                 path ? path : "another object");
        return why;
    }
    if ((e->who & (1u << S_REF)) && !J->lc_ids_bad &&
        (t->nallow == 0 || s_in_image(&J->img[S_REF], e->name))) {
        snprintf(why, len, "the reference launched the very same kernel (one identity)");
        return why;
    }
    if (t->nallow == 0 && J->lc_names == 1 && e->name &&
        J->img[S_CAND].nseg && !s_in_image(&J->img[S_CAND], e->name)) {
        snprintf(why, len, "its name occurs nowhere in the candidate's object, and the task "
                           "allows no library");
        return why;
    }
    return NULL;
}

/* Note 8's verdict on the candidate call of this verification run, once
 * the reference has run on the same inputs; passed: its outputs and inputs
 * were right. Flags the record; returns 1 with a message in msg when a
 * check fired. */
static int s_lc_verdict(s_judge_t *J, int c, int second, int passed, char *msg, size_t msglen)
{
    if (!J->lc_on)
        return 0;
    const char *which = second ? " (second run)" : "";
    if (J->lc_ok[S_REF] == 0) {
        /* every task's reference launches a kernel: CUPTI sees nothing here */
        cr_warn("launch checks off: CUPTI saw no launch of the reference in case %d", c);
        s_lc_stop(J);
        return 0;
    }
    int fired = 0;
    msg[0] = '\0';
    if (J->lc_ok[S_CAND] == 0 && !passed) {
        /* Nothing ran and the outputs show it (a grid rounded down to zero
         * blocks, a launch that failed): the honest verdict, INCORRECT,
         * stands without a hack flag. */
        cr_info("case %d%s: the candidate launched no kernel%s", c, which,
                J->lc_failed[S_CAND] ? " (its launches failed)" : "");
    } else if (J->lc_ok[S_CAND] == 0) {
        /* Right answers and no kernel: the work was done another way (on
         * the host, by copies, by code the count does not see). */
        cr_judge_flag(J->rec, "no_kernel_launched");
        snprintf(msg, msglen,
                 "the outputs are right but the candidate launched no kernel%s: the work was "
                 "done some other way (HACKS.md #15)",
                 J->lc_failed[S_CAND] ? " (its launches failed)" : "");
        cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "case %d%s: %s", c, which,
                      msg);
        fired = 1;
    }
    char why[512], name[256] = "";
    const char *found = NULL;
    pthread_mutex_lock(&s_lc_mu);
    s_lc_calibrate(J);
    for (int i = 0; i < s_lc.nk && !found; i++) {
        s_kernel_t *e = &s_lc.k[i];
        if (!(e->who & (1u << S_CAND)) || e->reported)
            continue;
        if ((found = s_lc_foreign(J, e, why, sizeof why)) != NULL) {
            e->reported = 1;
            snprintf(name, sizeof name, "%s", e->name ? e->name : "(unnamed)");
        }
    }
    if (s_lc.full) {
        cr_warn("launch checks: more than %d distinct kernels; later ones not checked",
                S_KERNELS);
        s_lc.full = 0;
    }
    pthread_mutex_unlock(&s_lc_mu);
    if (found) {
        cr_judge_flag(J->rec, "foreign_kernel");
        char m[1024];
        snprintf(m, sizeof m, "the candidate launched kernel %s, which is not its own: %s "
                 "(HACKS.md #14)", name, found);
        cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "case %d%s: %s", c, which,
                      m);
        if (!fired)
            snprintf(msg, msglen, "%.*s", (int)msglen - 1, m);
        fired = 1;
    }
    return fired;
}

/* ---------------------------------------------------------------- calls */

/* Waits (untimed) until the judge's queued work is done, so a candidate
 * that computes on a stream of its own never races the input generator:
 * inputs are complete when solve() is called, as in any framework. */
static int s_ready(s_judge_t *J)
{
    int64_t t0 = cr_time_mono_ns();
    cudaError_t e = cudaDeviceSynchronize();
    return s_step(J, S_ST_SYNC, t0, s_infra(J, e, "preparing inputs"));
}

/* Resets what a candidate may have changed for everyone (HACKS.md #19):
 * persisting-L2 size and lines, the other device limits (s_limits: e.g. a
 * smaller L2 fetch granularity slows the reference) and the cache
 * configuration (PreferShared shrinks the reference's L1), back to what
 * setup found. All are context-wide, so the candidate's runtime and this
 * one see the same values. Called before every candidate and reference
 * call, verification and timed, outside the timed window. All are
 * host-side queries of microseconds, written only when a value changed:
 * the persisting-L2 set-aside too. When a candidate left it above 0, it is
 * set back to 0 and every persisting line reset to normal
 * (cudaCtxResetPersistingL2Cache). At 0 no line is kept out of the flush's
 * reach, so the reset is not repeated while the set-aside stays 0: on an
 * H200 the reset itself made the timed kernel after it 0.10-0.15 us slower
 * (bench/RESULTS.md, session 5). What a candidate could still keep in L2
 * is its own data (inputs are new, at new addresses, every call), and
 * only if the hardware protected persisting lines with no set-aside.
 * Per-kernel attributes (cudaFuncSetAttribute on the reference's
 * kernels) cannot be reset from here; reaching them needs the reference's
 * addresses, which the link audit keeps out of reach. */
static void s_reset_state(s_judge_t *J)
{
    size_t set_aside = 0;
    if (J->d.persist_l2 &&
        (cudaDeviceGetLimit(&set_aside, cudaLimitPersistingL2CacheSize) != cudaSuccess ||
         set_aside != 0)) {
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
        cudaCtxResetPersistingL2Cache();
        J->l2_resets++;
    }
    for (size_t i = 0; i < S_NLIMITS; i++) {
        size_t v = 0;
        if (J->d.limit_ok[i] && cudaDeviceGetLimit(&v, s_limits[i]) == cudaSuccess &&
            v != J->d.limit0[i] && cudaDeviceSetLimit(s_limits[i], J->d.limit0[i]) != cudaSuccess) {
            /* e.g. the malloc heap is fixed once a kernel used it: say so once */
            cr_warn("could not restore device limit %d to %zu (the candidate set %zu)",
                    (int)s_limits[i], J->d.limit0[i], v);
            J->d.limit_ok[i] = 0;
        }
    }
    cudaFuncCache cc; /* a fresh context's is PreferNone: nothing else is the judge's */
    if (cudaDeviceGetCacheConfig(&cc) == cudaSuccess && cc != cudaFuncCachePreferNone)
        cudaDeviceSetCacheConfig(cudaFuncCachePreferNone);
    cudaGetLastError();
}

/* Polls ev against the deadline and the signal flag (note 2). Returns 0,
 * or -1 with a verdict. */
static int s_wait(s_judge_t *J, cudaEvent_t ev, int who, int c)
{
    int64_t start = cr_time_mono_ns(), nap = S_NAP_MIN_NS;
    for (;;) {
        cudaError_t q = cudaEventQuery(ev);
        if (q == cudaSuccess)
            return 0;
        if (q != cudaErrorNotReady)
            return s_cuda_fail(J, who, q, "kernel failed", c);
        int64_t now = cr_time_mono_ns();
        if (s_signalled) {
            s_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                   "case %d: runner interrupted by signal %d while the %s ran", c,
                   (int)s_signalled, s_who[who]);
            J->dead = 1;
            return -1;
        }
        if (now >= J->deadline_ns) {
            s_hard(J, CRUCIBLE__STATUS__STATUS_TIMEOUT,
                   "case %d: the %s's GPU work was still running after %.1f s (run timeout)", c,
                   s_who[who], (double)(now - start) / 1e9);
            J->dead = 1;
            return -1;
        }
        if (now - start > S_SPIN_NS) {
            struct timespec ts = {0, (long)nap};
            nanosleep(&ts, NULL);
            nap = nap * 2 > S_NAP_MAX_NS ? S_NAP_MAX_NS : nap * 2;
        }
    }
}

typedef struct {
    double ev_us;   /* event time: ev0 -> ev1 on the legacy stream */
    double wall_us; /* CLOCK_MONOTONIC: before ev0 -> device synchronised (the tail's
                       launches and drain included, when it had one: note 12) */
} s_time_t;

/* Calls fn(args) for `who` with the buffers in B and waits for all of its
 * work, device-wide. Returns 0 with the times in *tm, or -1 with a verdict. */
static int s_do_call(s_judge_t *J, int who, const s_layout_t *L, const s_bufs_t *B, s_time_t *tm)
{
    const cr_task_t *t = J->t;
    void *ptr[S_NP], *args[S_NP];
    for (int p = 0; p < t->nparams; p++) {
        if (s_is_buf(&t->params[p])) {
            ptr[p] = B->p[p];
            args[p] = &ptr[p];
        } else {
            args[p] = (void *)L->val[p];
        }
    }
    if (J->last_error[who])
        J->last_error[who](); /* clears an error from an earlier call */
    J->cand_ran |= who == S_CAND;
    cudaGetLastError();
    s_lc_begin(J, who); /* verification only: off while timing (note 8) */
    int64_t t0 = cr_time_mono_ns();
    cudaEventRecord(J->d.ev0, cudaStreamLegacy);
    J->fn[who](args);
    cudaError_t rec = cudaEventRecord(J->d.ev1, cudaStreamLegacy);
    s_lc_end(J, who);
    for (int k = 0; k < J->tail_now; k++) /* note 12; an error here shows at the wait */
        s_tail_kernel<<<1, 32, 0, cudaStreamLegacy>>>();
    cudaError_t launch = J->last_error[who] ? (cudaError_t)J->last_error[who]() : cudaSuccess;
    if (launch != cudaSuccess)
        return s_cuda_fail(J, who, launch, "launch failed", L->c);
    if (rec != cudaSuccess)
        return s_cuda_fail(J, who, rec, "device error after the call", L->c);
    if (s_wait(J, J->d.ev1, who, L->c) != 0)
        return -1;
    cudaError_t e = cudaDeviceSynchronize(); /* work on non-blocking streams (note 2) */
    int64_t t1 = cr_time_mono_ns();
    if (e != cudaSuccess)
        return s_cuda_fail(J, who, e, "device error after the call", L->c);
    float ms = 0;
    e = cudaEventElapsedTime(&ms, J->d.ev0, J->d.ev1);
    if (e != cudaSuccess)
        return s_cuda_fail(J, who, e, "event timing", L->c);
    if (tm) {
        tm->ev_us = (double)ms * 1e3;
        tm->wall_us = (double)(t1 - t0) / 1e3;
    }
    return 0;
}

static int s_call(s_judge_t *J, int who, const s_layout_t *L, const s_bufs_t *B, s_time_t *tm)
{
    int64_t t0 = cr_time_mono_ns();
    return s_step(J, who == S_CAND ? S_ST_CAND : S_ST_REF, t0, s_do_call(J, who, L, B, tm));
}

/* ---------------------------------------------------------------- checks */

/* Findings of one run: cr_judge_check_t, shared with the CPU judge, whose
 * comparison rules (cr_judge_compare_outputs) s_cmp_kernel applies on the
 * device, and whose verdict (cr_judge_apply_run) this judge uses as is. */
typedef cr_judge_check_t s_check_t;

/* Copies B's out/inout buffers into K (allocated here) on the device: tens
 * of microseconds where a copy to the host takes milliseconds, so checking
 * timed outputs does not eat the sampling time. Returns 0 or -1 with a
 * verdict. */
static int s_do_keep_out(s_judge_t *J, const s_layout_t *L, const s_bufs_t *B, s_bufs_t *K)
{
    memset(K, 0, sizeof *K);
    const size_t top = J->d.arena_top; /* given back on failure */
    for (int p = 0; p < J->t->nparams; p++) {
        if (!s_is_out(&J->t->params[p]))
            continue;
        cudaError_t e = s_buf_get(J, L->bytes[p] ? L->bytes[p] : 1, &K->base[p], &K->own[p]);
        if (e == cudaSuccess) {
            K->p[p] = K->base[p];
            e = cudaMemcpyAsync(K->p[p], B->p[p], L->bytes[p], cudaMemcpyDeviceToDevice,
                                cudaStreamLegacy);
        }
        if (e != cudaSuccess) {
            s_arena_release(J, top);
            s_free(J, K);
            return s_infra(J, e, "keeping a timed output");
        }
    }
    return 0;
}

static int s_keep_out(s_judge_t *J, const s_layout_t *L, const s_bufs_t *B, s_bufs_t *K)
{
    int64_t t0 = cr_time_mono_ns();
    return s_step(J, S_ST_KEEP, t0, s_do_keep_out(J, L, B, K));
}

/* Element i of device buffer b as a double (cr_inputs_get), for a message. */
static double s_elem(const void *b, cr_dtype_t d, size_t i)
{
    unsigned char v[8] = {0};
    size_t es = cr_dtype_size(d);
    if (cudaMemcpy(v, (const char *)b + i * es, es, cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        return NAN;
    }
    return cr_inputs_get(v, d, 0);
}

/* cr_judge_compare_outputs for device buffers: the candidate's outputs in
 * cand against the expected ones in exp, compared by s_cmp_kernel; only
 * counts, maxima, first indices and the two elements a message quotes come
 * back to the host. Sets every field of *k but inputs_unchanged. Returns 0,
 * or -1 with a verdict. */
static int s_do_compare_dev(s_judge_t *J, const s_layout_t *L, const s_bufs_t *cand,
                            const s_bufs_t *exp, s_check_t *k)
{
    const cr_task_t *t = J->t;
    unsigned long long h[6 * S_NP];
    unsigned long long *cnt = J->d.dcmp, *first = J->d.dcmp + 4 * S_NP;
    k->all_written = 1;
    k->mismatches = 0;
    k->max_abs = k->max_rel = 0;
    k->first_bad = -1;
    k->msg[0] = '\0';
    cudaMemsetAsync(cnt, 0, 4 * S_NP * sizeof *cnt, cudaStreamLegacy);
    cudaMemsetAsync(first, 0xff, 2 * S_NP * sizeof *first, cudaStreamLegacy);
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!s_is_out(prm) || L->numel[p] == 0)
            continue;
        unsigned char pat[8] = {0};
        uint64_t v = 0;
        cr_inputs_poison(pat, prm->dtype, 1);
        memcpy(&v, pat, sizeof v);
        int es = prm->role == CR_ROLE_OUT ? (int)cr_dtype_size(prm->dtype) : 0;
        s_cmp_kernel<<<s_grid(J, L->numel[p]), S_THREADS, 0, cudaStreamLegacy>>>(
            cand->p[p], exp->p[p], (int)prm->dtype, es, v, L->numel[p], t->atol, t->rtol,
            cnt + 4 * p, first + 2 * p);
    }
    if (s_infra(J, cudaGetLastError(), "output comparison launch") ||
        s_infra(J, cudaMemcpy(h, J->d.dcmp, sizeof h, cudaMemcpyDeviceToHost), "output comparison"))
        return -1;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!s_is_out(prm))
            continue;
        const unsigned long long *c = h + 4 * p, *f = h + 4 * S_NP + 2 * p;
        if (c[1]) {
            k->all_written = 0;
            if (!k->msg[0])
                snprintf(k->msg, sizeof k->msg,
                         "output '%s': %llu of %zu elements never written (first at [%llu])",
                         prm->name, c[1], L->numel[p], f[1]);
        }
        double ma, mr;
        memcpy(&ma, &c[2], sizeof ma);
        memcpy(&mr, &c[3], sizeof mr);
        k->max_abs = fmax(k->max_abs, ma);
        k->max_rel = fmax(k->max_rel, mr);
        if (c[0] && k->first_bad < 0) {
            k->first_bad = (int64_t)f[0];
            if (!k->msg[0])
                snprintf(k->msg, sizeof k->msg,
                         "output '%s': %llu of %zu elements differ; first at [%llu]: got %.9g, "
                         "expected %.9g (atol %g, rtol %g)",
                         prm->name, c[0], L->numel[p], f[0],
                         s_elem(cand->p[p], prm->dtype, (size_t)f[0]),
                         s_elem(exp->p[p], prm->dtype, (size_t)f[0]), t->atol, t->rtol);
        }
        k->mismatches += c[0];
    }
    return 0;
}

static int s_compare_dev(s_judge_t *J, const s_layout_t *L, const s_bufs_t *cand,
                         const s_bufs_t *exp, s_check_t *k)
{
    int64_t t0 = cr_time_mono_ns();
    return s_step(J, S_ST_CMP, t0, s_do_compare_dev(J, L, cand, exp, k));
}

/* The reference on set `set` of case L->c, in fresh buffers R (allocated
 * here; the caller frees them). Returns 0 or -1 with a verdict (R freed). */
static int s_reference(s_judge_t *J, const s_layout_t *L, uint32_t set, s_bufs_t *R)
{
    if (s_alloc(J, L, R) != 0)
        return -1;
    int rc = s_fill(J, L, set, R);
    if (rc == 0)
        rc = s_ready(J);
    if (rc == 0) {
        s_reset_state(J);
        rc = s_call(J, S_REF, L, R, NULL);
    }
    if (rc != 0)
        s_free(J, R);
    return rc;
}

/* One verification run of case L->c on set `set` (DESIGN.md §4 steps 1-2):
 * the candidate into *cand (allocated here, freed by the caller so that a
 * later run gets new addresses), then the reference in fresh buffers.
 * Returns 0 with the findings in *k, or -1 with a verdict. */
static int s_verify_set(s_judge_t *J, const s_layout_t *L, uint32_t set, s_bufs_t *cand,
                        s_check_t *k)
{
    s_bufs_t R;
    const char *mut = NULL;
    memset(k, 0, sizeof *k);
    J->lc_flagged = 0;
    if (s_alloc(J, L, cand) != 0 || s_fill(J, L, set, cand) != 0 ||
        s_hash_queue(J, L, cand, 0) != 0 || s_ready(J))
        return -1;
    s_reset_state(J);
    if (s_call(J, S_CAND, L, cand, NULL) != 0 || s_hash_queue(J, L, cand, 1) != 0 ||
        s_hash_compare(J, &mut) != 0)
        return -1;
    k->inputs_unchanged = mut == NULL;
    /* The outputs as they were when the call returned, then the reference,
     * in buffers the candidate never saw. */
    s_bufs_t got;
    if (s_keep_out(J, L, cand, &got) != 0)
        return -1;
    if (s_reference(J, L, set, &R) != 0) {
        s_free(J, &got);
        return -1;
    }
    int rc = s_compare_dev(J, L, &got, &R, k);
    s_free(J, &R);
    s_free(J, &got);
    if (rc != 0)
        return -1;
    if (mut) /* the most serious finding leads the message */
        snprintf(k->msg, sizeof k->msg, "input '%s' was modified by the candidate", mut);
    char lm[sizeof k->msg];
    int passed = k->inputs_unchanged && k->all_written && k->mismatches == 0;
    if (s_lc_verdict(J, L->c, set != 0, passed, lm, sizeof lm)) {
        J->lc_flagged = 1; /* the run fails, whatever its outputs (s_verify) */
        if (!k->msg[0])
            snprintf(k->msg, sizeof k->msg, "%s", lm);
    }
    return 0;
}

/* Applies one run's findings to the record; 1 when the run passed. */
static int s_judge_run(Crucible__RewardRecord *rec, int c, const s_check_t *k, int second)
{
    return cr_judge_apply_run(rec, c, k, second);
}

static void s_case_fields(Crucible__CaseResult *cr, const s_check_t *k)
{
    cr->inputs_unchanged = k->inputs_unchanged;
    cr->all_written = k->all_written;
    cr->mismatches = k->mismatches;
    cr->first_bad_index = k->first_bad;
    cr->max_abs_err = fmax(cr->max_abs_err, k->max_abs);
    cr->max_rel_err = fmax(cr->max_rel_err, k->max_rel);
}

/* Verifies every case. Returns 0 (verdict on the record, J->verdict set for
 * a hard one) or -ENOMEM. */
static int s_verify(s_judge_t *J)
{
    const cr_task_t *t = J->t;
    int64_t t0 = cr_time_mono_ns();
    Crucible__VerifyResult *vr = (Crucible__VerifyResult *)malloc(sizeof *vr);
    if (!vr)
        return -ENOMEM;
    crucible__verify_result__init(vr);
    J->rec->verify = vr;
    vr->cases = (Crucible__CaseResult **)calloc((size_t)t->ncases, sizeof *vr->cases);
    if (!vr->cases)
        return -ENOMEM;
    vr->ok = 1;
    for (int c = 0; c < t->ncases && !J->verdict; c++) {
        Crucible__CaseResult *cr = (Crucible__CaseResult *)malloc(sizeof *cr);
        if (!cr)
            return -ENOMEM;
        crucible__case_result__init(cr);
        vr->cases[vr->n_cases++] = cr;
        cr->index = (uint32_t)c;
        cr->first_bad_index = -1;
        s_layout_t L;
        s_bufs_t first, second;
        s_check_t k1, k2;
        memset(&first, 0, sizeof first);
        memset(&second, 0, sizeof second);
        const size_t mark = s_arena_mark(J); /* this case's buffers, back at its end */
        if (s_layout(J, c, &L) != 0 || s_verify_set(J, &L, 0, &first, &k1) != 0) {
            cr_judge_set_str(&cr->message, J->rec->message);
            vr->ok = 0;
            s_free(J, &first);
            s_arena_release(J, mark);
            break;
        }
        int ok = s_judge_run(J->rec, c, &k1, 0) && !J->lc_flagged;
        s_case_fields(cr, &k1);
        if (k1.msg[0])
            cr_judge_set_str(&cr->message, k1.msg);
        if (ok) {
            /* `first` is still allocated: set 1 lands at new addresses (step 3). */
            int rc = s_verify_set(J, &L, 1, &second, &k2);
            s_free(J, &first);
            s_free(J, &second);
            if (rc != 0) {
                cr_judge_set_str(&cr->message, J->rec->message);
                vr->ok = 0;
                s_arena_release(J, mark);
                break;
            }
            ok = s_judge_run(J->rec, c, &k2, 1) && !J->lc_flagged;
            cr->second_run_passed = ok;
            if (!ok) {
                s_case_fields(cr, &k2);
                char m[600];
                snprintf(m, sizeof m, "second run: %s", k2.msg);
                cr_judge_set_str(&cr->message, m);
            }
        } else {
            s_free(J, &first);
        }
        cr->passed = ok;
        vr->ok &= ok;
        s_arena_release(J, mark);
        cr_debug("case %d: %s", c, ok ? "passed" : cr->message);
    }
    vr->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
    return 0;
}

/* ---------------------------------------------------------------- timing */

typedef struct {
    double ev_us, wall_us; /* see s_time_t */
    unsigned mhz;          /* SM clock of the NVML read covering it; 0 = unknown */
    int throttled;         /* a throttle reason was set before or after */
    int slot;              /* buffer slot it ran in */
    int64_t at_ns;         /* host clock at its end (diagnostic dump only) */
    double gpu_at_us;      /* its ev0 on the GPU's clock, from the case's first (note 10) */
    double adj_us;         /* periodic-stall adjustment (note 10) plus the process level
                              (note 11), subtracted from ev_us */
    unsigned char timed;   /* its event time counts (note 12: it had the tail) */
    unsigned char walled;  /* its wall time counts (note 12: it had none) */
} s_sample_t;

typedef struct {
    s_sample_t *s;         /* CR_JUDGE_MAX_SAMPLES of them; owned */
    size_t n;
    cr_stats_online_t on;  /* running RSE of the event times */
} s_side_t;

/* Adds the sample s_sample just wrote at S->s[S->n], taken in slot; its
 * event time feeds the running RSE when it counts (note 12). */
static void s_side_add(s_side_t *S, int slot)
{
    s_sample_t *x = &S->s[S->n++];
    x->slot = slot;
    if (x->timed)
        cr_stats_online_push(&S->on, x->ev_us);
}

typedef struct {
    uint32_t set;          /* input set the timed call ran on */
    s_bufs_t out;          /* device copies of its out/inout buffers; owned */
    const char *mutated;   /* `in` param it changed, or NULL */
} s_kept_t;

/* Device-to-device copy bandwidth (read + written bytes per second), best
 * of 5 copies of S_COPY_BYTES after one to warm up; 0 when it could not be
 * measured. */
static double s_copy_bw(cudaEvent_t e0, cudaEvent_t e1)
{
    void *a = NULL, *b = NULL;
    double bw = 0;
    if (cudaMalloc(&a, S_COPY_BYTES) == cudaSuccess &&
        cudaMalloc(&b, S_COPY_BYTES) == cudaSuccess) {
        float best = 0;
        for (int i = 0; i < 6; i++) {
            float ms = 0;
            cudaEventRecord(e0, cudaStreamLegacy);
            cudaMemcpyAsync(b, a, S_COPY_BYTES, cudaMemcpyDeviceToDevice, cudaStreamLegacy);
            cudaEventRecord(e1, cudaStreamLegacy);
            if (cudaEventSynchronize(e1) != cudaSuccess ||
                cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
                break;
            if (i > 0 && (best == 0 || ms < best)) /* the first copy warms up */
                best = ms;
        }
        if (best > 0)
            bw = 2.0 * (double)S_COPY_BYTES / (best * 1e-3);
    }
    if (b)
        cudaFree(b);
    if (a)
        cudaFree(a);
    cudaGetLastError();
    return bw;
}

/* A copy bandwidth a roofline floor may use: a floor that is off (inf) or
 * absurd (flags everything) must not come of a bad figure. theory: the
 * device's theoretical bandwidth, 0 = unknown. */
static int s_bw_plausible(double w, double theory)
{
    return isfinite(w) && w >= S_BW_SANE_MIN && w <= S_BW_SANE_MAX &&
           (theory <= 0 || w <= 2 * theory);
}

/* The roofline's bandwidth: the worker's measurement at start when the
 * request carries one, else measured here, once per runner. */
static void s_measure_bw(s_judge_t *J)
{
    if (J->copy_bw > 0)
        return;
    double w = J->req->device_copy_bw;
    if (w > 0) {
        if (s_bw_plausible(w, J->d.theory_bw)) { /* from the worker: checked all the same */
            J->copy_bw = w;
            cr_debug("device copy bandwidth %.0f GB/s, measured by the worker at start",
                     w / 1e9);
            return;
        }
        cr_warn("request's device_copy_bw %g B/s is not plausible (theoretical %.0f GB/s); "
                "measuring here", w, J->d.theory_bw / 1e9);
    }
    J->copy_bw = s_copy_bw(J->d.ev0, J->d.ev1);
    cr_info("device copy bandwidth %.0f GB/s (theoretical %.0f GB/s)", J->copy_bw / 1e9,
            J->d.theory_bw / 1e9);
}

/* One timed call of `who` on fresh set `set` in slot B (note 4). With
 * keep != NULL the candidate's inputs are hashed and its outputs kept for
 * verification. Returns 0 or -1 with a verdict. */
/* What kind of sample s_sample takes (note 12): drawn from the secret
 * stream, or one whose event time counts, or one whose wall time does. */
enum { S_KIND_DRAW, S_KIND_TIMED, S_KIND_CHECK };

static int s_sample(s_judge_t *J, int who, const s_layout_t *L, s_bufs_t *B, uint32_t set,
                    s_kept_t *keep, s_sample_t *out, int kind)
{
    s_place(J, B);
    unsigned m1;
    uint64_t r1;
    s_time_t tm;
    /* Inputs complete before the call (s_ready), then the limits restored
     * while the GPU is idle, then flush and call (note 4). The GPU time of
     * the fill and the flush comes from events around them, only on request
     * (J->gpu_steps): in front of the flush they made the timed kernel
     * ~0.07 us slower on an H200 (bench/RESULTS.md, session 5). */
    const int gpu_diag = J->gpu_steps;
    /* Note 12: with the tail, its event time counts; without, its wall time. */
    const int check = J->tail == 0 || kind == S_KIND_CHECK ||
                      (kind == S_KIND_DRAW && cr_rng_next(&J->tail_pick) % S_CHECK_ONE_IN == 0);
    out->timed = J->tail == 0 || !check;
    out->walled = (unsigned char)check;
    int64_t t0 = cr_time_mono_ns();
    if (gpu_diag)
        cudaEventRecord(J->d.evf, cudaStreamLegacy);
    if (s_fill(J, L, set, B) != 0 || (keep && s_hash_queue(J, L, B, 0) != 0) || s_ready(J))
        return -1;
    int64_t t1 = cr_time_mono_ns();
    s_reset_state(J);
    int64_t t2 = cr_time_mono_ns();
    if (gpu_diag)
        cudaEventRecord(J->d.evq, cudaStreamLegacy);
    if (s_infra(J, cudaMemsetAsync(J->d.flush, 0, J->d.flush_bytes, cudaStreamLegacy),
                "L2 flush") != 0) /* zeros: note 4 */
        return -1;
    J->tail_now = check ? 0 : J->tail;
    int called = s_call(J, who, L, B, &tm);
    J->tail_now = 0;
    if (called != 0)
        return -1;
    int64_t t3 = cr_time_mono_ns();
    float fms = 0, qms = 0;
    if (gpu_diag) {
        if (cudaEventElapsedTime(&fms, J->d.evf, J->d.evq) == cudaSuccess &&
            cudaEventElapsedTime(&qms, J->d.evq, J->d.ev0) == cudaSuccess) {
            J->gpu_fill_us += fms * 1e3;
            J->gpu_flush_us += qms * 1e3;
        }
        cudaGetLastError();
    }
    /* The read after the previous sample is this one's "before" (the GPU
     * ran nothing of the candidate's in between). NVML is read at most
     * every S_CLOCK_PERIOD_NS: a sample that makes a read is marked by that
     * read and the one before; the samples between two reads by the earlier
     * one. So throttling that starts between reads is first seen at the next
     * read, up to S_CLOCK_PERIOD_NS late, and the samples of that window are
     * kept. */
    if (!J->last_clock_ns || t3 - J->last_clock_ns >= S_CLOCK_PERIOD_NS) {
        s_clock_read(J, &m1, &r1);
        J->last_clock_ns = cr_time_mono_ns();
        J->clock_reads++;
        out->throttled = ((J->last_reasons | r1) & CR_NVML_THROTTLE_MASK) != 0;
        J->last_reasons = r1;
        J->last_mhz = m1;
    } else {
        out->throttled = (J->last_reasons & CR_NVML_THROTTLE_MASK) != 0;
    }
    out->mhz = J->last_mhz;
    out->at_ns = t3;
    /* The GPU's clock at this ev0: the time since the previous sample's
     * (note 10). The two events swap, so nothing is recorded for it. */
    float gms = 0;
    if (J->gpu_prev && cudaEventElapsedTime(&gms, J->d.evp, J->d.ev0) == cudaSuccess)
        J->gpu_now_us += (double)gms * 1e3;
    else if (J->gpu_prev)
        cudaGetLastError();
    out->gpu_at_us = J->gpu_now_us;
    out->adj_us = 0;
    cudaEvent_t ev = J->d.evp;
    J->d.evp = J->d.ev0;
    J->d.ev0 = ev;
    J->gpu_prev = 1;
    out->ev_us = tm.ev_us;
    out->wall_us = tm.wall_us;
    J->host_ns[S_PH_FILL] += t1 - t0;
    J->host_ns[S_PH_RESET] += t2 - t1;
    J->host_ns[S_PH_CALL] += t3 - t2;
    J->host_ns[S_PH_CLOCK] += cr_time_mono_ns() - t3;
    J->host_samples++;
    if (keep) {
        keep->set = set;
        if (s_hash_queue(J, L, B, 1) != 0 || s_hash_compare(J, &keep->mutated) != 0 ||
            s_keep_out(J, L, B, &keep->out) != 0)
            return -1;
    }
    return 0;
}

/* Samples kept after the throttle filter, of those whose event times count
 * (or, wall, of those whose wall times count: note 12); fills x with the
 * chosen times. */
static size_t s_kept_times(const s_side_t *S, int all, int wall, double shift, double *x)
{
    size_t n = 0;
    for (size_t i = 0; i < S->n; i++) {
        if ((!all && S->s[i].throttled) || !(wall ? S->s[i].walled : S->s[i].timed))
            continue;
        double v = S->s[i].ev_us - S->s[i].adj_us; /* note 10 */
        if (wall) /* note 4: the wall time less the reference's own gap, never below the event */
            v = fmax(v, S->s[i].wall_us - shift);
        x[n++] = v;
    }
    return n;
}

enum { S_RAW_EV, S_RAW_WALL, S_RAW_GAP }; /* what s_raw_median takes the median of */

/* Median of the kept samples' raw event times, wall times, or the gap
 * (wall - event) between them, each over the samples whose times of that
 * kind count (note 12); 0 with none kept. */
static double s_raw_median(const s_side_t *S, int all, int what, double *tmp)
{
    size_t n = 0;
    for (size_t i = 0; i < S->n; i++)
        if ((all || !S->s[i].throttled) && (what == S_RAW_EV ? S->s[i].timed : S->s[i].walled))
            tmp[n++] = what == S_RAW_EV     ? S->s[i].ev_us
                       : what == S_RAW_WALL ? S->s[i].wall_us
                                            : S->s[i].wall_us - S->s[i].ev_us;
    if (n == 0)
        return 0;
    cr_stats_sort(tmp, n);
    return cr_stats_quantile_sorted(tmp, n, 0.5);
}

/* What the judge's log says of a level (note 11). */
static const char *s_level_text(cr_level_why_t why, double off, int cached)
{
    switch (why) {
    case CR_LEVEL_NO_MEDIAN:
        return "not corrected (no reference median)";
    case CR_LEVEL_LONG:
        return "not corrected (anchor too long)";
    case CR_LEVEL_FAR:
        return "not corrected (too far off for a process level)";
    case CR_LEVEL_FEW:
        return "not corrected (too few reference samples)";
    case CR_LEVEL_APPLIES:
        break;
    }
    return off == 0 ? "at its anchor"
           : cached ? "level taken off the candidate"
                    : "level taken off both sides";
}

/* Summarises both sides of bench case c (the b-th bench case) into br;
 * applies the side-stream and roofline checks. With a cached reference
 * (note 7) B holds only warm-up samples, used for the wall-clock gap and the
 * process level (note 11).
 * Returns 0 or -ENOMEM. */
static int s_summarise(s_judge_t *J, int c, int b, s_side_t *A, s_side_t *B,
                       Crucible__BenchResult *br)
{
    const int cached = J->cached_ref_us != NULL;
    size_t cap = A->n > B->n ? A->n : B->n;
    double *x = (double *)malloc((cap ? cap : 1) * sizeof *x);
    double *y = (double *)malloc((cap ? cap : 1) * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return -ENOMEM;
    }
    size_t thr_a = 0, thr_b = 0;
    for (size_t i = 0; i < A->n; i++)
        thr_a += A->s[i].throttled != 0;
    for (size_t i = 0; i < B->n && !cached; i++)
        thr_b += B->s[i].throttled != 0;
    /* Observe policy: throttled samples are dropped, unless too few remain. */
    int all = A->n - thr_a < S_MIN_KEPT || (!cached && B->n - thr_b < S_MIN_KEPT);
    if (all && (thr_a || thr_b))
        cr_warn("case %d: %zu/%zu samples throttled; keeping them all", c, thr_a + thr_b,
                A->n + B->n);
    br->throttled_dropped = all ? 0 : (uint32_t)(thr_a + thr_b);

    /* Wall-clock cross-check (note 4). */
    double gap_a = s_raw_median(A, all, S_RAW_GAP, x);
    double gap_b = s_raw_median(B, all || cached, S_RAW_GAP, x);
    size_t na = s_kept_times(A, all, 0, 0, x);
    cr_stats_t sa, sb;
    cr_stats_compute(x, na, &sa);
    double excess = gap_a - gap_b;
    int side = excess > fmax(S_SIDE_MIN_US, S_SIDE_FRAC * sa.median);
    if (side) {
        /* A hack flag means HACK_DETECTED (the contract of the hack suite);
         * the wall-clock times below still fill the profile, for people. */
        cr_judge_flag(J->rec, "side_stream");
        cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                      "case %d: the candidate's wall time exceeds its event time by %.1f us "
                      "more than the reference's: its work escaped the legacy stream (HACKS.md "
                      "#7; join side streams before returning)",
                      c, excess);
        cr_warn("case %d: the candidate's wall time exceeds its event time by %.1f us more "
                "than the reference's: work escaped the legacy stream; timing by wall clock",
                c, excess);
        na = s_kept_times(A, all, 1, gap_b, x);
        cr_stats_compute(x, na, &sa);
    }
    if (cached) {
        memset(&sb, 0, sizeof sb);
        sb.n = 1;
        sb.median = sb.med_lo = sb.med_hi = J->cached_ref_us[b];
        sb.rse = J->cached_ref_rse ? J->cached_ref_rse[b] : 0;
    } else {
        size_t nb = s_kept_times(B, all, 0, 0, y);
        cr_stats_compute(y, nb, &sb);
    }
    /* Note 11: this process's reference against the anchor. Interleaved:
     * the reference's median, the anchor from the request, both sides
     * corrected. Cached: the reference's warm-up samples, the cached median
     * as the anchor, the candidate corrected (the reference is the anchor). */
    double anchor = cached ? J->cached_ref_us[b] : J->ref_anchor_us ? J->ref_anchor_us[b] : 0;
    if (anchor > 0 && !side) {
        cr_stats_t sr = sb;
        if (cached) /* returns -EINVAL with no sample, and sr.n 0 then */
            cr_stats_compute(y, s_kept_times(B, all, 0, 0, y), &sr);
        cr_level_why_t why;
        double off = cr_level_offset(sr.median, sr.n, anchor,
                                     cached ? CR_LEVEL_WARMUP : CR_LEVEL_TIMED, &why);
        if (off != 0) {
            for (int k = 0; k < (cached ? 1 : 2); k++) {
                s_side_t *S = k ? B : A;
                for (size_t i = 0; i < S->n; i++)
                    S->s[i].adj_us += off;
            }
            na = s_kept_times(A, all, 0, 0, x);
            cr_stats_compute(x, na, &sa);
            if (!cached)
                cr_stats_compute(y, s_kept_times(B, all, 0, 0, y), &sb);
            br->level_offset_us = off;
        }
        cr_info("case %d: reference %.3f us (%zu %ssamples) against its anchor %.3f us: %s", c,
                sr.median, sr.n, cached ? "warm-up " : "", anchor, s_level_text(why, off, cached));
    }
    /* The median before the stall and level adjustments (notes 10, 11), and
     * the wall-clock median: both the candidate's raw ones. */
    br->raw_median_us = side ? sa.median : s_raw_median(A, all, S_RAW_EV, x);
    br->wall_median_us = s_raw_median(A, all, S_RAW_WALL, x);

    double mhz = 0;
    size_t nm = 0;
    for (int side_i = 0; side_i < (cached ? 1 : 2); side_i++) {
        const s_side_t *S = side_i ? B : A;
        for (size_t i = 0; i < S->n; i++)
            if ((all || !S->s[i].throttled) && S->s[i].mhz) {
                mhz += S->s[i].mhz;
                nm++;
            }
    }
    br->mean_sm_clock_mhz = nm ? mhz / (double)nm : 0;
    br->samples = (uint32_t)sa.n;
    br->median_us = sa.median;
    br->mean_us = sa.mean;
    br->min_us = sa.min;
    br->iqr_us = sa.iqr;
    br->rse = sa.rse;
    br->ref_samples = cached ? 0 : (uint32_t)sb.n; /* 0: none timed in this run */
    br->ref_median_us = sb.median;
    br->ref_rse = sb.rse;
    cr_stats_speedup(&sa, &sb, &br->speedup, &br->speedup_lo, &br->speedup_hi);

    /* Roofline floor (HACKS.md #16). */
    double bytes = 0, flops = 0, floor_s = 0;
    cr_task_bytes(J->t, c, &bytes);
    cr_task_flops(J->t, c, &flops);
    double bw = fmax(J->copy_bw * S_BW_MARGIN, J->d.theory_bw);
    if (bytes > 0 && bw > 0)
        floor_s = bytes / bw;
    double rate = J->d.sms * J->d.max_clock_mhz * 1e6 * S_FLOPS_PER_SM_CLK;
    if (flops > 0 && rate > 0)
        floor_s = fmax(floor_s, flops / rate);
    br->floor_us = floor_s * 1e6;
    if (br->floor_us > 0 && sa.n > 0 && sa.median < br->floor_us) {
        cr_judge_flag(J->rec, "below_roofline");
        cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                      "case %d: median %.3f us is below the roofline floor %.3f us (%.4g bytes "
                      "at %.0f GB/s, %.4g flops at %.0f TFLOP/s): impossible on this GPU",
                      c, sa.median, br->floor_us, bytes, bw / 1e9, flops, rate / 1e12);
    }
    free(x);
    free(y);
    return 0;
}

/* Checks the kept timed outputs against the reference, run now in fresh
 * buffers (so no reference result for a timed set ever sat in memory while
 * the candidate ran). Returns 0 or -1 with a verdict. */
static int s_check_kept(s_judge_t *J, const s_layout_t *L, s_kept_t *kept, unsigned nkept)
{
    for (unsigned i = 0; i < nkept; i++) {
        if (kept[i].mutated) {
            cr_judge_flag(J->rec, "input_mutated");
            cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                          "case %d: input '%s' was modified by the candidate during timing",
                          L->c, kept[i].mutated);
            return 0;
        }
        s_bufs_t R;
        if (s_reference(J, L, kept[i].set, &R) != 0)
            return -1;
        s_check_t k;
        memset(&k, 0, sizeof k);
        int rc = s_compare_dev(J, L, &kept[i].out, &R, &k);
        s_free(J, &R);
        if (rc != 0)
            return -1;
        if (k.all_written && k.mismatches == 0)
            continue;
        cr_judge_flag(J->rec, "timed_output_mismatch");
        cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_INCORRECT, "case %d: timed run: %s", L->c,
                      k.msg);
        return 0;
    }
    return 0;
}

/* Periodic stalls (note 10): fits them on both sides' samples of the case,
 * sets each sample's adj_us and the stall fields of br. Returns 0 or
 * -ENOMEM. */
static int s_stall_adjust(s_judge_t *J, int c, s_side_t *A, s_side_t *B,
                          Crucible__BenchResult *br)
{
    const size_t all = A->n + B->n;
    double *buf = (double *)malloc((all ? all : 1) * 3 * sizeof *buf);
    unsigned char *grp = (unsigned char *)malloc(all ? all : 1);
    size_t *at = (size_t *)malloc((all ? all : 1) * sizeof *at);
    if (!buf || !grp || !at) {
        free(buf);
        free(grp);
        free(at);
        return -ENOMEM;
    }
    double *st = buf, *du = buf + all, *adj = buf + 2 * all;
    size_t n = 0;
    for (size_t i = 0; i < all; i++) { /* the samples whose event times count (note 12) */
        const s_sample_t *x = i < A->n ? &A->s[i] : &B->s[i - A->n];
        if (!x->timed)
            continue;
        st[n] = x->gpu_at_us;
        du[n] = x->ev_us;
        grp[n] = i >= A->n;
        at[n++] = i;
    }
    cr_stall_fit_t fit;
    int64_t t0 = cr_time_mono_ns();
    int rc = cr_stall_fit(st, du, grp, n, S_STALL_TMIN_US, S_STALL_TMAX_US, &fit, adj);
    double ms = (double)(cr_time_mono_ns() - t0) / 1e6;
    if (rc == 0 && fit.found) {
        for (size_t k = 0; k < n; k++)
            (at[k] < A->n ? &A->s[at[k]] : &B->s[at[k] - A->n])->adj_us = adj[k];
        br->stall_period_us = fit.period_us;
        br->stall_us = fit.d_us[0];
        cr_info("case %d: periodic stall every %.4f us (periodogram %.0f, r %.2f), %.3f / %.3f "
                "us each, %.3f / %.3f per sample (candidate / reference); times adjusted to "
                "the expected count (fit %.1f ms)",
                c, fit.period_us, fit.power, fit.r, fit.d_us[0], fit.d_us[1], fit.mean_n[0],
                fit.mean_n[1], ms);
    } else if (rc == 0) {
        cr_debug("case %d: no periodic stall (best period %.4f us: periodogram %.0f, r %.2f; "
                 "fit %.1f ms)", c, fit.period_us, fit.power, fit.r, ms);
    }
    free(buf);
    free(grp);
    free(at);
    return rc == -ENOMEM ? -ENOMEM : 0;
}

/* Times bench case c, the b-th bench case (DESIGN.md §4, timing; note 7).
 * Returns 0 (results in br, verdicts on the record) or -1 with a hard
 * verdict, or -ENOMEM. */
static int s_time_case(s_judge_t *J, int c, int b, Crucible__BenchResult *br)
{
    const int cached = J->cached_ref_us != NULL;
    s_layout_t L;
    s_bufs_t slot[S_SLOTS];
    s_side_t A, Bs;
    s_kept_t kept[S_VERIFY_MAX + 1];
    unsigned nkept = 0;
    int nslots = 0, rc = -1;
    memset(slot, 0, sizeof slot);
    memset(kept, 0, sizeof kept);
    memset(&A, 0, sizeof A);
    memset(&Bs, 0, sizeof Bs);
    br->case_index = (uint32_t)c;
    int64_t ph[5] = {cr_time_mono_ns(), 0, 0, 0, 0}; /* start, slots, warm, timed, checked */
    if (s_layout(J, c, &L) != 0)
        return -1;
    const size_t mark = s_arena_mark(J);
    A.s = (s_sample_t *)malloc(CR_JUDGE_MAX_SAMPLES * sizeof *A.s);
    Bs.s = (s_sample_t *)malloc(CR_JUDGE_MAX_SAMPLES * sizeof *Bs.s);
    if (!A.s || !Bs.s) {
        rc = -ENOMEM;
        goto done;
    }
    /* Two slots already change addresses every call; a third if it fits;
     * wide room for placement where memory allows. */
    for (; nslots < S_SLOTS; nslots++)
        if (s_alloc_q(J, &L, &slot[nslots], 1, 1) != 0 &&
            s_alloc_q(J, &L, &slot[nslots], nslots >= 2, 0) != 0)
            break;
    if (nslots < 2)
        goto done;
    {
        cr_rng_t pick;
        cr_rng_seed(&pick, J->seed, (uint32_t)c, S_SET_SAMPLING, 0);
        uint32_t set = S_SET_TIMED;
        unsigned call = 0;
        s_sample_t sm;
        size_t kept_bytes = 0;

        /* Warm-up (DESIGN.md §4): by time and until the SM clock settles (three
         * NVML reads >= 5 ms apart within 1%). With NVML watching the clock
         * the floor is S_WARMUP_NVML_S; without it, nothing says the clock is
         * up, so S_WARMUP_MIN_S. Bench cases after the first follow a timing
         * loop that kept the GPU busy up to now: their warm-up only waits for
         * a settled clock (S_WARMUP_NEXT_S at least, for the new case's own
         * code paths). */
        J->gpu_prev = 0; /* a new GPU clock origin per case (note 10) */
        J->gpu_now_us = 0;
        int64_t w0 = ph[1] = cr_time_mono_ns();
        double warm_min = b > 0 ? S_WARMUP_NEXT_S : J->d.nvml ? S_WARMUP_NVML_S : S_WARMUP_MIN_S;
        double warm_max = fmin(S_WARMUP_MAX_S, fmax(warm_min, J->budget_s / 2));
        unsigned last_mhz = 0;
        int stable = J->d.nvml ? 0 : S_CLOCK_STABLE_READS;
        /* cached, a reference short enough for the level (note 11): enough of
         * its warm-up samples with the tail to measure it (note 12) */
        const size_t level_samples = cached ? cr_level_warmup_samples(J->cached_ref_us[b]) : 0;
        size_t ref_timed = 0;
        for (;;) {
            /* cached: the reference's warm-up samples are kept for their gap and the
             * process level (notes 7, 11) */
            s_sample_t *bw = cached && Bs.n < CR_JUDGE_MAX_SAMPLES ? &Bs.s[Bs.n++] : &sm;
            uint64_t reads = J->clock_reads;
            if (s_sample(J, S_CAND, &L, &slot[call++ % nslots], set++, NULL, &sm,
                         S_KIND_DRAW) != 0 ||
                s_sample(J, S_BASE, &L, &slot[call++ % nslots], set++, NULL, bw, S_KIND_DRAW) != 0)
                goto done;
            bw->slot = (int)((call - 1) % (unsigned)nslots);
            ref_timed += bw != &sm && bw->timed;
            if (J->d.nvml && J->clock_reads != reads) { /* a new NVML read this pair */
                unsigned m = J->last_mhz;
                stable = (m && last_mhz && fabs((double)m - last_mhz) <= 0.01 * last_mhz)
                             ? stable + 1 : 0;
                last_mhz = m;
            }
            double el = (double)(cr_time_mono_ns() - w0) / 1e9;
            if ((el >= warm_min && stable >= S_CLOCK_STABLE_READS &&
                 ref_timed >= level_samples) || el >= warm_max)
                break;
        }

        /* A B A B until both sides' RSE is under the target or the budget is
         * spent; A A A with a cached reference, stopping on A's RSE alone
         * within the candidate's share of the budget (note 7). */
        const double budget = J->budget_s * (cached ? CR_JUDGE_CACHED_BUDGET_SHARE : 1.0);
        int64_t t0 = ph[2] = cr_time_mono_ns();
        while (A.n < CR_JUDGE_MAX_SAMPLES) {
            int verify = nkept < S_VERIFY_MAX && kept_bytes + L.out_bytes <= S_VERIFY_BYTES &&
                         cr_rng_next(&pick) % S_VERIFY_ONE_IN == 0;
            int ka = (int)(call++ % (unsigned)nslots);
            int kb = cached ? 0 : (int)(call++ % (unsigned)nslots);
            if (s_sample(J, S_CAND, &L, &slot[ka], set++, verify ? &kept[nkept] : NULL,
                         &A.s[A.n], S_KIND_DRAW) != 0)
                goto done;
            if (verify) {
                nkept++;
                kept_bytes += L.out_bytes;
            }
            s_side_add(&A, ka);
            if (!cached) {
                if (s_sample(J, S_BASE, &L, &slot[kb], set++, NULL, &Bs.s[Bs.n],
                             S_KIND_DRAW) != 0)
                    goto done;
                s_side_add(&Bs, kb);
            }

            int64_t now = cr_time_mono_ns();
            double el = (double)(now - t0) / 1e9;
            int enough = A.on.n >= CR_JUDGE_MIN_SAMPLES;
            if (A.on.n >= S_MIN_SAMPLES_PREF && el >= S_MIN_TIMING_FRAC * budget &&
                cr_stats_online_rse(&A.on) < J->rse_target &&
                (cached || cr_stats_online_rse(&Bs.on) < J->rse_target))
                break;
            if ((enough && el >= budget) || el >= S_HARD_CAP * budget ||
                now >= J->deadline_ns - J->reserve_ns)
                break;
            if (s_signalled) {
                s_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                       "case %d: runner interrupted by signal %d", c, (int)s_signalled);
                goto done;
            }
        }
        /* Note 12: each side ends with a sample whose event time counts and
         * S_CHECK_MIN whose wall times do, however few the loop took (a slow
         * kernel near its deadline); under the cached policy the reference's
         * are warm-up samples. */
        for (int side = 0; side < 2; side++) {
            s_side_t *S = side ? &Bs : &A;
            size_t nt = 0, nw = 0;
            for (size_t i = 0; i < S->n; i++) {
                nt += S->s[i].timed;
                nw += S->s[i].walled;
            }
            for (;;) {
                int kind = nt == 0 ? S_KIND_TIMED : nw < S_CHECK_MIN ? S_KIND_CHECK : -1;
                if (kind < 0 || S->n >= CR_JUDGE_MAX_SAMPLES ||
                    (kind == S_KIND_CHECK && cr_time_mono_ns() >= J->deadline_ns - J->reserve_ns))
                    break;
                int k = (int)(call++ % (unsigned)nslots);
                if (s_sample(J, side ? S_BASE : S_CAND, &L, &slot[k], set++, NULL, &S->s[S->n],
                             kind) != 0)
                    goto done;
                nt += S->s[S->n].timed;
                nw += S->s[S->n].walled;
                s_side_add(S, k);
            }
        }
        /* At least one timed output is always checked. */
        if (nkept == 0 && s_sample(J, S_CAND, &L, &slot[call++ % nslots], set++, &kept[nkept++],
                                   &sm, S_KIND_DRAW) != 0)
            goto done;
    }
    for (int s = 0; s < nslots; s++)
        s_free(J, &slot[s]);
    br->verified_samples = nkept;
    ph[3] = cr_time_mono_ns();
    if (s_check_kept(J, &L, kept, nkept) != 0)
        goto done;
    ph[4] = cr_time_mono_ns();
    rc = s_stall_adjust(J, c, &A, &Bs, br);
    if (rc == 0)
        rc = s_summarise(J, c, b, &A, &Bs, br);
    for (int side = 0; J->dump && side < 2; side++) {
        const s_side_t *S = side ? &Bs : &A;
        for (size_t i = 0; i < S->n; i++)
            fprintf(J->dump, "%d,%s,%zu,%d,%.3f,%.3f,%u,%d,%.1f,%.3f,%.3f,%d\n", c,
                    side ? (cached ? "base_warmup" : "base") : "cand", i,
                    S->s[i].slot, S->s[i].ev_us, S->s[i].wall_us, S->s[i].mhz,
                    S->s[i].throttled, A.n ? (double)(S->s[i].at_ns - A.s[0].at_ns) / 1e3 : 0.0,
                    S->s[i].gpu_at_us, S->s[i].adj_us, S->s[i].timed);
    }
    cr_debug("case %d: %u+%u samples, median %.3f us vs %.3f us (wall %.3f), speedup %.3f", c,
             br->samples, br->ref_samples, br->median_us, br->ref_median_us, br->wall_median_us,
             br->speedup);
    if (J->host_samples) { /* where this case's samples spent their host time */
        double k = 1e3 * (double)J->host_samples;
        char gpu[80] = "";
        if (J->gpu_steps) /* measured on request only (s_sample) */
            snprintf(gpu, sizeof gpu, "; GPU us per sample: fill %.1f, flush %.1f",
                     J->gpu_fill_us * 1e3 / k, J->gpu_flush_us * 1e3 / k);
        cr_info("case %d: %llu samples (warm-up included), host us per sample: fill %.1f, "
                "reset %.1f, call %.1f, clock %.1f%s; "
                "seconds: slots %.3f, warm-up %.3f, timing %.3f, %u timed outputs checked %.3f",
                c, (unsigned long long)J->host_samples, (double)J->host_ns[S_PH_FILL] / k,
                (double)J->host_ns[S_PH_RESET] / k, (double)J->host_ns[S_PH_CALL] / k,
                (double)J->host_ns[S_PH_CLOCK] / k, gpu, (double)(ph[1] - ph[0]) / 1e9,
                (double)(ph[2] - ph[1]) / 1e9, (double)(ph[3] - ph[2]) / 1e9, nkept,
                (double)(ph[4] - ph[3]) / 1e9);
        memset(J->host_ns, 0, sizeof J->host_ns);
        J->host_samples = 0;
        J->gpu_fill_us = J->gpu_flush_us = 0;
    }
done:
    for (int s = 0; s < nslots; s++)
        s_free(J, &slot[s]);
    for (unsigned i = 0; i < nkept; i++)
        s_free(J, &kept[i].out);
    s_arena_release(J, mark);
    free(A.s);
    free(Bs.s);
    return rc;
}

static int s_time(s_judge_t *J)
{
    const cr_task_t *t = J->t;
    int64_t t0 = cr_time_mono_ns();
    Crucible__ProfileResult *pr = (Crucible__ProfileResult *)malloc(sizeof *pr);
    if (!pr)
        return -ENOMEM;
    crucible__profile_result__init(pr);
    J->rec->profile = pr;
    pr->cache_flushed = 1;
    const char *pol = J->req->options && J->req->options->clock_policy &&
                              J->req->options->clock_policy[0]
                          ? J->req->options->clock_policy : "observe";
    cr_judge_set_str(&pr->clock_policy, pol);
    cr_judge_set_str(&pr->ref_policy, J->cached_ref_us ? "cached" : "interleaved");
    pr->cases = (Crucible__BenchResult **)calloc((size_t)t->nbench + 1, sizeof *pr->cases);
    if (!pr->cases)
        return -ENOMEM;
    int pin = cr_topo_pin_self(J->req->cpu);
    if (pin != 0)
        cr_warn("could not pin to cpu %d: %s; timing unpinned", J->req->cpu, cr_strerror(pin));
    if (t->nbench > 0)
        s_measure_bw(J);
    double logsum = 0;
    int nsp = 0, rc = 0;
    for (int b = 0; b < t->nbench && rc == 0; b++) {
        Crucible__BenchResult *br = (Crucible__BenchResult *)malloc(sizeof *br);
        if (!br)
            return -ENOMEM;
        crucible__bench_result__init(br);
        pr->cases[pr->n_cases++] = br;
        rc = s_time_case(J, t->bench[b], b, br);
        if (rc == 0 && J->rec->status != CRUCIBLE__STATUS__STATUS_OK)
            break; /* a timed output failed: the verdict is in */
        if (br->speedup > 0) {
            logsum += log(br->speedup);
            nsp++;
        }
    }
    pr->speedup_geomean = nsp ? exp(logsum / nsp) : 0;
    pr->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
    return rc == -ENOMEM ? rc : 0;
}

/* ---------------------------------------------------------------- setup */

/* The object's own cudaGetLastError through S_LAST_ERROR_SYM (note 1). */
static s_last_error_fn s_find_last_error(void *entry)
{
    Dl_info info;
    if (!entry || !dladdr(entry, &info) || !info.dli_fname)
        return NULL;
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
    if (!h)
        return NULL;
    void *sym = dlsym(h, S_LAST_ERROR_SYM);
    dlclose(h); /* drops only the reference taken here: the caller's keeps it loaded */
    s_last_error_fn fn = NULL;
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

/* The part of a judge's setup that no request decides: the context, the
 * device's facts, NVML, events, scratch and flush buffers, the arena
 * (note 9). On failure
 * returns the CUDA error with *what naming the step (NVML is optional: its
 * failure leaves D->nvml NULL and says why in D->nvml_err). Writes no
 * verdict, so that a prestarted runner can run it before it has a record. */
static cudaError_t s_setup_device(s_dev_t *D, const char **what)
{
    *what = "no usable CUDA device";
    int64_t t0 = cr_time_mono_ns();
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaFree(0); /* creates the context now, not inside the first timed call */
    if (e != cudaSuccess)
        return e;
    int64_t t1 = cr_time_mono_ns();
    cudaDeviceProp prop;
    int v = 0;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        snprintf(D->name, sizeof D->name, "%s", prop.name);
    cudaDeviceGetPCIBusId(D->bus, sizeof D->bus, 0);
    cudaDeviceGetAttribute(&D->sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceGetAttribute(&D->l2_bytes, cudaDevAttrL2CacheSize, 0);
    if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, 0) == cudaSuccess)
        D->max_clock_mhz = v / 1e3;
    int mem_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0) == cudaSuccess)
        D->theory_bw = 2.0 * mem_khz * 1e3 * bus_bits / 8; /* double data rate */
    cudaGetLastError();

    if (cr_nvml_open(s_nvml_lib, D->bus, &D->nvml, D->nvml_err, sizeof D->nvml_err) == 0) {
        cr_nvml_info_t info;
        if (cr_nvml_info(D->nvml, &info) == 0 && info.max_sm_mhz)
            D->max_clock_mhz = fmax(D->max_clock_mhz, info.max_sm_mhz);
    }
    if (D->max_clock_mhz <= 0)
        D->max_clock_mhz = 3000; /* above every GPU's SM clock: the flop floor stays a floor */
    int64_t t2 = cr_time_mono_ns();

    D->persist_l2 = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) == cudaSuccess;
    /* The limits s_reset_state restores: as the runner found them before
     * any candidate code ran when it was prestarted (the worker's way), else
     * as found now, which a constructor of the candidate's may already have
     * changed (a gap only the prestart closes). The cache configuration goes
     * back to a fresh context's, cudaFuncCachePreferNone, either way. */
    s_snapshot();
    memcpy(D->limit0, s_snap.limit0, sizeof D->limit0);
    memcpy(D->limit_ok, s_snap.ok, sizeof D->limit_ok);
    cudaGetLastError();
    size_t fl = 2 * (size_t)(D->l2_bytes > 0 ? D->l2_bytes : 0);
    D->flush_bytes = fl < S_FLUSH_MIN ? S_FLUSH_MIN : fl;
    if ((e = cudaEventCreate(&D->ev0)) != cudaSuccess ||
        (e = cudaEventCreate(&D->ev1)) != cudaSuccess ||
        (e = cudaEventCreate(&D->evf)) != cudaSuccess ||
        (e = cudaEventCreate(&D->evq)) != cudaSuccess ||
        (e = cudaEventCreate(&D->evp)) != cudaSuccess) {
        *what = "event";
        return e;
    }
    *what = "hash scratch";
    if ((e = cudaMalloc((void **)&D->dscratch, 2 * S_NP * sizeof *D->dscratch)) != cudaSuccess)
        return e;
    *what = "compare scratch";
    if ((e = cudaMalloc((void **)&D->dcmp, 6 * S_NP * sizeof *D->dcmp)) != cudaSuccess)
        return e;
    *what = "L2 flush buffer";
    if ((e = cudaMalloc(&D->flush, D->flush_bytes)) != cudaSuccess)
        return e;
    size_t freeb = 0, total = 0;
    if (cudaMemGetInfo(&freeb, &total) == cudaSuccess) {
        size_t want = freeb / S_ARENA_SHARE;
        want = (want < S_ARENA_MAX ? want : S_ARENA_MAX) / S_ARENA_GRAIN * S_ARENA_GRAIN;
        if (want >= S_ARENA_MIN && cudaMalloc((void **)&D->arena, want) == cudaSuccess)
            D->arena_bytes = want;
        else
            D->arena = NULL;
    }
    cudaGetLastError(); /* no arena: every buffer from cudaMalloc, as before */
    D->setup_s[0] = (double)(t1 - t0) / 1e9;
    D->setup_s[1] = (double)(t2 - t1) / 1e9;
    D->setup_s[2] = (double)(cr_time_mono_ns() - t2) / 1e9;
    return cudaSuccess;
}

/* What cr_cuda_judge_prestart made (s_setup_device) for the judge to come;
 * NULL when it made nothing or it failed. */
static s_dev_t *s_pre;

/* cr_cuda_judge_leave_device: the process ends after its report, so the
 * judge leaves its device state to process exit (s_release_device skipped). */
static int s_leave_device;

/* Frees what s_setup_device made; with dead (the context is gone) only
 * host state is released. */
static void s_release_device(s_dev_t *D, int dead)
{
    cr_nvml_close(&D->nvml);
    if (dead)
        return;
    void *bufs[] = {D->flush, D->arena, D->dscratch, D->dcmp};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i])
            cudaFree(bufs[i]);
    cudaEvent_t evs[] = {D->ev0, D->ev1, D->evf, D->evq, D->evp};
    for (size_t i = 0; i < sizeof evs / sizeof *evs; i++)
        if (evs[i])
            cudaEventDestroy(evs[i]);
}

/* The device state: the prestart's when there is one, else made now.
 * Returns 0, or -1 with an INFRA_ERROR (or OOM) verdict. */
static int s_setup(s_judge_t *J)
{
    if (s_pre) { /* made while the previous runner measured: taken over */
        J->d = *s_pre;
        free(s_pre);
        s_pre = NULL;
    } else {
        const char *what = NULL;
        cudaError_t e = s_setup_device(&J->d, &what);
        if (e != cudaSuccess) {
            s_infra(J, e, what);
            return -1;
        }
    }
    if (!J->d.nvml) {
        if (J->policy.lock) {
            s_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "clock policy lock needs NVML: %s",
                   J->d.nvml_err);
            return -1;
        }
        cr_warn("NVML unavailable (%s): SM clock and throttling not observed", J->d.nvml_err);
    }
    return 0;
}

static int s_lock(s_judge_t *J)
{
    if (!J->policy.lock)
        return 0;
    if (!s_atexit_done) {
        atexit(s_atexit_reset);
        s_atexit_done = 1;
    }
    /* Only while locked: otherwise SIGTERM keeps its default (the runner
     * dies, as the supervisor means), and a flag nobody polls helps nobody. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &J->old_term);
    sigaction(SIGINT, &sa, &J->old_int);
    J->handlers = 1;
    int rc = cr_nvml_lock(J->d.nvml, J->policy.mhz, &J->locked_mhz);
    if (rc != 0) {
        J->locked_mhz = 0;
        s_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "clock lock on %s failed: %s", J->d.bus,
               cr_nvml_last_error(J->d.nvml));
        return -1;
    }
    s_locked = J->d.nvml;
    cr_info("clocks of %s locked at %u MHz", J->d.bus, J->locked_mhz);
    return 0;
}

void cr_cuda_judge_set_nvml_library(const char *path)
{
    s_nvml_lib = path;
}

void cr_cuda_judge_leave_device(int on)
{
    s_leave_device = on;
}

int cr_cuda_judge_run(const Crucible__RunnerRequest *req, const cr_task_t *task, void *ref_entry,
                      void *cand_entry, void *base_entry, Crucible__RewardRecord *rec)
{
    s_judge_t *J = (s_judge_t *)calloc(1, sizeof *J);
    if (!J)
        return -ENOMEM;
    int rc = 0;
    int64_t ph[4] = {0, 0, 0, 0}; /* setup, its end, verify starts, verify ends */
    J->req = req;
    J->t = task;
    J->rec = rec;
    cr_judge_set_str(&rec->backend, "cuda");
    void *entries[3] = {cand_entry, ref_entry, base_entry ? base_entry : ref_entry};
    for (int i = 0; i < 3; i++) {
        memcpy(&J->fn[i], &entries[i], sizeof J->fn[i]);
        J->last_error[i] = s_find_last_error(entries[i]);
    }
    const Crucible__JobOptions *o = req->options;
    double run_s = o && o->run_timeout_s > 0 ? o->run_timeout_s : S_RUN_TIMEOUT_S;
    J->deadline_ns = cr_time_mono_ns() +
                     (int64_t)(fmax(0.2, run_s * S_DEADLINE_FRAC - S_DEADLINE_MARGIN_S) * 1e9);
    J->reserve_ns = (int64_t)(run_s * S_RESERVE_FRAC * 1e9);
    J->budget_s = o && o->time_budget_s > 0 ? o->time_budget_s : CR_JUDGE_DEFAULT_BUDGET_S;
    J->rse_target = o && o->rse_target > 0 ? o->rse_target : CR_JUDGE_DEFAULT_RSE;
    J->cached_ref_us = cr_judge_cached_ref(req, task, &J->cached_ref_rse);
    J->ref_anchor_us = J->cached_ref_us ? NULL
                                        : cr_judge_per_bench(req->ref_anchor_us,
                                                             req->n_ref_anchor_us, task,
                                                             "reference anchors",
                                                             "no level taken off");

    if (!ref_entry || !cand_entry || req->seed.len != sizeof J->seed) {
        s_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
               "cuda judge: missing entry point or seed (%zu bytes, need 32)", req->seed.len);
        goto done;
    }
    memcpy(J->seed, req->seed.data, sizeof J->seed);
    {
        cr_rng_t hk;
        cr_rng_seed(&hk, J->seed, 0, S_SET_HASHKEY, 0);
        J->hash_key = hk.s[0];
        cr_rng_seed(&J->place, J->seed, 0, S_SET_PLACEMENT, 0);
    }
    /* Diagnostics: every timed sample as CSV (case,side,i,slot,event_us,
     * wall_us,sm_mhz,throttled,us since the case's first candidate sample,
     * GPU us of its ev0 in the case, adjustment us: stall and level, notes 10
     * and 11, 1 when its event time counts: note 12), appended to the file
     * this names. */
    if (getenv("CR_CUDA_JUDGE_SAMPLES"))
        J->dump = fopen(getenv("CR_CUDA_JUDGE_SAMPLES"), "ae");
    /* Diagnostics: GPU time of every sample's fill and flush in the case
     * log line (events around them, which cost the timed kernel a little). */
    J->gpu_steps = getenv("CR_CUDA_JUDGE_GPU_STEPS") != NULL;
    /* Diagnostics: CR_CUDA_JUDGE_TAIL=N queues N launches behind a timed
     * call instead of S_TAIL_LAUNCHES (0: none, every sample's times count;
     * note 12). */
    J->tail = S_TAIL_LAUNCHES;
    if (const char *v = getenv("CR_CUDA_JUDGE_TAIL"); v && v[0]) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 0 || n > 1024)
            cr_warn("CR_CUDA_JUDGE_TAIL='%s' is not a count of 0-1024; queueing %d", v,
                    S_TAIL_LAUNCHES);
        else
            J->tail = (int)n;
    }
    cr_rng_seed(&J->tail_pick, J->seed, 0, S_SET_TAIL, 0);
    if (cr_clock_policy_parse(o ? o->clock_policy : NULL, &J->policy) != 0) {
        s_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
               "clock policy '%s': expected observe, lock:base or lock:<MHz>", o->clock_policy);
        goto done;
    }
    ph[0] = cr_time_mono_ns();
    if (s_setup(J) != 0)
        goto done;
    if (J->d.name[0])
        cr_judge_set_str(&rec->device, J->d.name);
    if (s_lock(J) != 0)
        goto done;
    ph[1] = cr_time_mono_ns();

    rec->status = CRUCIBLE__STATUS__STATUS_OK;
    s_lc_start(J);
    ph[2] = cr_time_mono_ns();
    rc = s_verify(J);
    if (!J->dead)
        s_lc_stop(J); /* before timing: no callback in a timed window (note 8) */
    ph[3] = cr_time_mono_ns();
    if (rc != 0 || J->verdict)
        goto done;
    if (rec->status != CRUCIBLE__STATUS__STATUS_OK || req->verify_only)
        goto done;
    rc = s_time(J);

done:
    if (rc == -ENOMEM) {
        J->verdict = 0;
        s_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cuda judge: out of host memory");
        rc = 0;
    }
    s_unlock(J);
    if (!s_leave_device)
        s_release_device(&J->d, J->dead);
    if (ph[0]) {
        char steps[400];
        size_t len = 0;
        for (int i = 0; i < S_ST_N && len < sizeof steps; i++)
            len += (size_t)snprintf(steps + len, sizeof steps - len, "%s%s %.3f", i ? ", " : "",
                                    s_step_name[i], (double)J->step_ns[i] / 1e9);
        cr_info("cuda judge seconds: setup %.3f, launch checks on %.3f, verify %.3f (checks "
                "off included), timing and clean-up %.3f; by step: %s; persisting-L2 resets %llu",
                (double)(ph[1] - ph[0]) / 1e9, ph[2] ? (double)(ph[2] - ph[1]) / 1e9 : 0.0,
                ph[3] ? (double)(ph[3] - ph[2]) / 1e9 : 0.0,
                ph[3] ? (double)(cr_time_mono_ns() - ph[3]) / 1e9 : 0.0, steps,
                (unsigned long long)J->l2_resets);
    }
    if (J->dump)
        fclose(J->dump);
    if (J->handlers) {
        sigaction(SIGTERM, &J->old_term, NULL);
        sigaction(SIGINT, &J->old_int, NULL);
    }
    free(J);
    return rc;
}

int cr_cuda_judge_measure(double *copy_bw)
{
    *copy_bw = 0;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaFree(0);
    if (e == cudaSuccess)
        e = cudaEventCreate(&e0);
    if (e == cudaSuccess)
        e = cudaEventCreate(&e1);
    if (e == cudaSuccess)
        *copy_bw = s_copy_bw(e0, e1);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (e != cudaSuccess || !s_bw_plausible(*copy_bw, 0)) {
        fprintf(stderr, "crucible-runner: device bandwidth not measured: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e)
                : *copy_bw <= 0  ? "the copies failed"
                                 : "an implausible figure");
        *copy_bw = 0;
        return -1;
    }
    return 0;
}

int cr_cuda_judge_prestart(void)
{
    if (s_pre)
        return 0;
    s_dev_t *P = (s_dev_t *)calloc(1, sizeof *P);
    if (!P)
        return -1;
    /* the context (the slow part of a runner's start), the limits to restore
     * taken before any candidate code, and the rest of the setup */
    const char *what = NULL;
    cudaError_t e = s_setup_device(P, &what);
    if (e != cudaSuccess) {
        cr_info("prestart: %s: %s", what, cudaGetErrorString(e));
        cudaGetLastError();
        s_release_device(P, 0);
        free(P);
        return -1;
    }
    s_pre = P;
    /* CUPTI subscribed now, its callbacks enabled by the judge (note 8). */
    char used[PATH_MAX + 64];
    int64_t t0 = cr_time_mono_ns();
    if (s_lc_subscribe(used, sizeof used) != 0)
        cr_info("prestart: CUPTI not subscribed (%s); the judge tries again", used);
    cr_info("prestart seconds: context %.3f, NVML %.3f, buffers %.3f, CUPTI %.3f", P->setup_s[0],
            P->setup_s[1], P->setup_s[2], (double)(cr_time_mono_ns() - t0) / 1e9);
    return 0;
}
