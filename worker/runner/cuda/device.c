/* device.c — the CUDA judge's device state (see cuda_int.h): what setup
 * makes once per process (context, the device's facts, NVML, events,
 * scratch, the flush buffer and the arena of §9) and releases, and the
 * global state a candidate may change for everyone, reset before every
 * call. */
#include "cuda_int.h"

#define S_FLUSH_MIN (256ull << 20) /* flush at least 256 MiB: triton's do_bench default */
#define S_ARENA_MAX (4ull << 30)   /* an executor's arena (§9): at most 4 GiB (the
                                      judge's own half of it) ... */
#define S_ARENA_SHARE 32           /* ... and at most 1/32 of the free device memory (the
                                      judge's 1/64): a runner's three take 5/64, so the
                                      running runner, the worker's four spares (its
                                      default) and the last job's runner still ending hold
                                      at most 1 - (59/64)^6 = 39% of a small GPU's memory */
#define S_ARENA_MIN (64ull << 20)  /* below this, cudaMalloc per buffer */

/* Device limits a candidate may change for everyone (cudaDeviceSetLimit);
 * the persisting-L2 size has its own reset (cr__cuda_reset_state). */
static const enum cudaLimit s_limits[] = {
    cudaLimitStackSize,         cudaLimitPrintfFifoSize,
    cudaLimitMallocHeapSize,    cudaLimitDevRuntimeSyncDepth,
    cudaLimitDevRuntimePendingLaunchCount, cudaLimitMaxL2FetchGranularity,
};
_Static_assert(sizeof s_limits / sizeof s_limits[0] == CR_CUDA_NLIMITS, "CR_CUDA_NLIMITS");

/* The device limits as first seen by this process (s_snapshot). */
static struct {
    int taken;
    size_t limit0[CR_CUDA_NLIMITS];
    int ok[CR_CUDA_NLIMITS]; /* readable on this device */
} s_snap;

static void s_snapshot(void)
{
    if (s_snap.taken)
        return;
    for (size_t i = 0; i < CR_CUDA_NLIMITS; i++)
        s_snap.ok[i] = cudaDeviceGetLimit(&s_snap.limit0[i], s_limits[i]) == cudaSuccess;
    cudaGetLastError();
    s_snap.taken = 1;
}

/* Which NVML library to open (cr_cuda_judge_set_nvml_library). */
static const char *s_nvml_lib;       /* NULL = libnvidia-ml.so.1 */

/* Resets what a candidate may have changed for everyone (docs/hacks.md #19):
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
 * reach, so the reset is not repeated while the set-aside stays 0: the
 * reset itself slows the timed kernel after it (docs/cuda-judge.md §4).
 * What a candidate could still keep in L2
 * is its own data (inputs are new, at new addresses, every call), and
 * only if the hardware protected persisting lines with no set-aside.
 * Per-kernel attributes (cudaFuncSetAttribute on the reference's
 * kernels) cannot be reset from here; reaching them needs the reference's
 * addresses, which the link audit keeps out of reach. */
void cr__cuda_reset_state(cr__cuda_judge_t *J)
{
    size_t set_aside = 0;
    if (J->d.persist_l2 &&
        (cudaDeviceGetLimit(&set_aside, cudaLimitPersistingL2CacheSize) != cudaSuccess ||
         set_aside != 0)) {
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
        cudaCtxResetPersistingL2Cache();
        J->l2_resets++;
    }
    for (size_t i = 0; i < CR_CUDA_NLIMITS; i++) {
        size_t v = 0;
        if (J->d.limit_ok[i] && cudaDeviceGetLimit(&v, s_limits[i]) == cudaSuccess &&
            v != J->d.limit0[i] && cudaDeviceSetLimit(s_limits[i], J->d.limit0[i]) != cudaSuccess) {
            /* e.g. the malloc heap is fixed once a kernel used it: say so once */
            cr_warn("could not restore device limit %d to %zu (the candidate set %zu)",
                    (int)s_limits[i], J->d.limit0[i], v);
            J->d.limit_ok[i] = 0;
        }
    }
    enum cudaFuncCache cc; /* a fresh context's is PreferNone: nothing else is the judge's */
    if (cudaDeviceGetCacheConfig(&cc) == cudaSuccess && cc != cudaFuncCachePreferNone)
        cudaDeviceSetCacheConfig(cudaFuncCachePreferNone);
    cudaGetLastError();
}

/* What cr__cuda_reset_state restores, taken in an executor's context
 * before any client code runs there (executor.c): the persisting-L2
 * set-aside support and the device limits as a fresh context has them. The
 * cache configuration goes back to a fresh context's,
 * cudaFuncCachePreferNone. */
void cr__cuda_state_init(cr__cuda_dev_t *D)
{
    D->persist_l2 = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) == cudaSuccess;
    s_snapshot();
    memcpy(D->limit0, s_snap.limit0, sizeof D->limit0);
    memcpy(D->limit_ok, s_snap.ok, sizeof D->limit_ok);
    cudaGetLastError();
}

/* The part of a judge's setup that no request decides: the context, the
 * device's facts, NVML, events, scratch and flush buffers, the arena
 * (§9), on device D->dev (0, or a rank's GPU: ranks.c). On failure
 * returns the CUDA error with *what naming the step (NVML is optional: its
 * failure leaves D->nvml NULL and says why in D->nvml_err). Writes no
 * verdict, so that a prestarted runner can run it before it has a record. */
cudaError_t cr__cuda_setup_device(cr__cuda_dev_t *D, const char **what)
{
    *what = "no usable CUDA device";
    int64_t t0 = cr_time_mono_ns();
    cudaError_t e = cudaSetDevice(D->dev);
    if (e == cudaSuccess)
        e = cudaFree(0); /* creates the context now, not inside the first timed call */
    if (e != cudaSuccess)
        return e;
    int64_t t1 = cr_time_mono_ns();
    struct cudaDeviceProp prop;
    int v = 0;
    if (cudaGetDeviceProperties(&prop, D->dev) == cudaSuccess)
        snprintf(D->name, sizeof D->name, "%s", prop.name);
    cudaDeviceGetPCIBusId(D->bus, sizeof D->bus, D->dev);
    cudaDeviceGetAttribute(&D->sms, cudaDevAttrMultiProcessorCount, D->dev);
    cudaDeviceGetAttribute(&D->l2_bytes, cudaDevAttrL2CacheSize, D->dev);
    if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, D->dev) == cudaSuccess)
        D->max_clock_mhz = v / 1e3;
    int mem_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, D->dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, D->dev) == cudaSuccess)
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

    cr__cuda_state_init(D);
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
    if ((e = cudaMalloc((void **)&D->dscratch, 2 * CR_CUDA_NP * sizeof *D->dscratch)) !=
        cudaSuccess)
        return e;
    *what = "compare scratch";
    if ((e = cudaMalloc((void **)&D->dcmp, 6 * CR_CUDA_NP * sizeof *D->dcmp)) != cudaSuccess)
        return e;
    *what = "L2 flush buffer";
    if ((e = cudaMalloc(&D->flush, D->flush_bytes)) != cudaSuccess)
        return e;
    if ((e = cudaEventCreateWithFlags(&D->evx, cudaEventDisableTiming)) != cudaSuccess) {
        *what = "probe event";
        return e;
    }
    size_t freeb = 0, total = 0;
    if ((e = cudaMemGetInfo(&freeb, &total)) != cudaSuccess) {
        *what = "device memory";
        return e;
    }
    for (int a = 0; a < CR_CUDA_AR_N; a++) {
        /* the judge's own: kept outputs; the executors': every buffer they are called on */
        size_t want = freeb / (a == CR_CUDA_AR_JUDGE ? 2 * S_ARENA_SHARE : S_ARENA_SHARE);
        size_t cap = a == CR_CUDA_AR_JUDGE ? S_ARENA_MAX / 2 : S_ARENA_MAX;
        want = (want < cap ? want : cap) / CR_CUDA_ARENA_GRAIN * CR_CUDA_ARENA_GRAIN;
        cr__cuda_arena_t *A = &D->ar[a];
        if (want >= S_ARENA_MIN && cudaMalloc((void **)&A->base, want) == cudaSuccess)
            A->bytes = want;
        else
            A->base = NULL;
        cudaGetLastError(); /* the judge's: cudaMalloc per buffer instead */
        if (a == CR_CUDA_AR_JUDGE)
            continue;
        *what = "executor arena";
        if (!A->base)
            return cudaErrorMemoryAllocation;
        if ((e = cudaIpcGetMemHandle(&D->ar_handle[a], A->base)) != cudaSuccess) {
            *what = "executor arena's IPC handle";
            return e;
        }
    }
    D->setup_s[0] = (double)(t1 - t0) / 1e9;
    D->setup_s[1] = (double)(t2 - t1) / 1e9;
    D->setup_s[2] = (double)(cr_time_mono_ns() - t2) / 1e9;
    return cudaSuccess;
}

/* Frees what cr__cuda_setup_device made; with dead (the context is gone) only
 * host state is released. */
void cr__cuda_release_device(cr__cuda_dev_t *D, int dead)
{
    cr_nvml_close(&D->nvml);
    if (dead)
        return;
    void *bufs[] = {D->flush, D->ar[0].base, D->ar[1].base, D->ar[2].base, D->dscratch,
                    D->dcmp};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i])
            cudaFree(bufs[i]);
    cudaEvent_t evs[] = {D->ev0, D->ev1, D->evf, D->evq, D->evp, D->evx};
    for (size_t i = 0; i < sizeof evs / sizeof *evs; i++)
        if (evs[i])
            cudaEventDestroy(evs[i]);
}

void cr_cuda_judge_set_nvml_library(const char *path)
{
    s_nvml_lib = path;
}
