/* cuda_judge.h — the CUDA backend of crucible-runner.
 *
 * Verifies and times a candidate's cr_entry against the reference's on the
 * GPU this process was started for (device 0 of its CUDA_VISIBLE_DEVICES),
 * following docs/design.md §4 and docs/hacks.md; its design and invariants
 * are docs/cuda-judge.md, its code worker/runner/cuda/:
 *
 *   verify, per case   inputs drawn ON THE GPU from (seed, case, set, param);
 *                      outputs poisoned; the candidate first; launch errors and
 *                      a device-wide synchronise after every call; inputs
 *                      hashed before/after; the reference afterwards in fresh
 *                      buffers; allclose on the device (cr_inputs_compare's
 *                      rules, s_cmp_kernel); a
 *                      second candidate run on new inputs at new addresses;
 *                      the kernels each candidate call launches counted
 *                      through CUPTI when it loads (no_kernel_launched,
 *                      foreign_kernel: docs/cuda-judge.md §8).
 *   time, per bench    warm-up by time and SM clock; candidate and reference
 *                      (or baseline) interleaved A B A B; before each sample
 *                      fresh inputs, poisoned outputs, device limits, cache
 *                      configuration and persisting L2 restored where a
 *                      candidate changed them, and an L2 flush
 *                      (2x its size), all outside the timed window;
 *                      events on the legacy stream around the call plus a
 *                      device-wide synchronise, with the wall clock as a
 *                      cross-check for work hidden on other streams; a random
 *                      subset of timed outputs verified afterwards; adaptive
 *                      stop on the relative standard error; a roofline floor.
 *   clocks             NVML: "observe" drops samples taken while throttled;
 *                      "lock:base" / "lock:<MHz>" locks and resets on every
 *                      exit path (also SIGTERM/SIGINT and exit()).
 *
 * The judge never blocks on a candidate kernel without a deadline of its
 * own: it polls events (spinning briefly, then sleeping) and gives up with
 * TIMEOUT when the run's time is spent. After a CUDA_FAULT or TIMEOUT the
 * CUDA context is unusable (a fault is sticky; a kernel may still run): the
 * judge then makes no further CUDA call, and its caller must write the
 * report and leave with _exit() (runtime teardown could wait on the kernel).
 *
 * With CR_CUDA_JUDGE_SAMPLES set, every timed sample is appended to the file
 * it names as CSV (case,side,i,slot,event_us,wall_us,sm_mhz,throttled): a
 * diagnostic for timing questions, off by default.
 *
 * Candidate objects are built by the worker from cr_task_shim_source()'s
 * translation unit with CR_CUDA_COMPILE_FLAGS (+ CR_CUDA_CUBLAS_FLAGS when
 * the task's "allow" lists "cublas"). */
#ifndef CR_CUDA_JUDGE_H
#define CR_CUDA_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* the project's C headers, seen from C++ (cuda/kernels.cu) */
#endif

#include "crucible.pb-c.h"
#include "task.h"

/* nvcc flags for a candidate/reference/baseline shared object, in the order
 * they follow "nvcc": sm_<cc> is the target GPU's compute capability
 * (e.g. "-arch=sm_90"), then "-o lib.so shim.cu". */
#define CR_CUDA_COMPILE_FLAGS                                                                  \
    "-O3 -std=c++17 -Xcompiler -fPIC -shared -cudart shared -Xlinker -Bsymbolic "               \
    "-DCCCL_DISABLE_NVTX"
#define CR_CUDA_CUBLAS_FLAGS "-lcublas"

/* Prepares device 0 (the worker's GPU, by CUDA_VISIBLE_DEVICES) ahead of a
 * request, `crucible-runner --prestart`: the CUDA context, the device's
 * facts, NVML (call cr_cuda_judge_set_nvml_library first to use another
 * library), events, scratch, the flush buffer and the buffer arenas
 * (docs/cuda-judge.md §9), and the candidate's and reference's executors,
 * each with its own context and CUPTI subscription (§8; docs/judge.md §5).
 * 0, or -1 when the runtime failed (logged; the judge meets it again). */
int cr_cuda_judge_prestart(void);

/* Measures device 0's device-to-device copy bandwidth (bytes read plus
 * written per second, best of 5 copies of 256 MiB) into *copy_bw:
 * `crucible-runner --measure-device`, run once by a worker at start.
 * 0, or -1 with the reason on stderr (no device, failed copies, or a figure
 * outside 1e9..1e14 B/s) and *copy_bw 0. *peak_flops gets the flop rate no
 * kernel of this GPU reaches (cr_judge_gpu_peak_flops: its SMs at its
 * highest clock), the torch judge's flops floor; 0 when unknown. */
int cr_cuda_judge_measure(double *copy_bw, double *peak_flops);

/* Judges one candidate (docs/judge.md §5): the reference, the baseline
 * (req->baseline_so, optional) and the candidate each run in an executor of
 * its own (crucible-executor-cuda beside this program), the prestart's where
 * there are some; this process loads none of them. req supplies the objects,
 * the seed (32 bytes), options (time budget, RSE target, run timeout, clock
 * policy), cpu (core to pin to), scratch_dir, sandbox_uid and verify_only.
 *
 * Fills rec: status (OK, INCORRECT, HACK_DETECTED, CUDA_FAULT, OOM, TIMEOUT,
 * RUNTIME_ERROR, INVALID_TASK, INFRA_ERROR), message, verify, profile,
 * hack_flags, device and backend. Returns 0 when rec holds a verdict
 * (whatever it is), or a negative code when rec could not be filled at all
 * (out of host memory). */
int cr_cuda_judge_run(const Crucible__RunnerRequest *req, const cr_task_t *task,
                      Crucible__RewardRecord *rec);

/* on != 0: the calling process ends right after this judge's report (the
 * runner _exits), so cr_cuda_judge_run leaves its device state (buffers,
 * arena, events, NVML) to process exit instead of releasing it before it
 * returns. The release would hold the runner's report back by milliseconds
 * (bench/RESULTS.md, session 8); process exit tears it down while the next
 * runner measures, as it does the context. Clocks under a lock policy are
 * reset before the return either way. Default 0. */
void cr_cuda_judge_leave_device(int on);

/* on != 0: this process judges one request after another (`crucible-runner
 * --serve`). The judge then keeps, for the jobs that follow, its context and
 * device state, and the reference's executor while the reference object
 * stays the same and did nothing wrong; each job's candidate gets a fresh
 * executor, started during the job before it and ready before any timing
 * (docs/judge.md §5). Default 0. */
void cr_cuda_judge_serve(int on);

/* Serving: 1 once the judge's own context broke (a job's report says why);
 * the process should take no more requests. */
int cr_cuda_judge_broken(void);

/* The judge's head before a call of an executor that times itself with CUDA
 * events of its own (the torch backend, docs/torch.md §4; cuda/head.c): on
 * this process's context of device 0 (made at the first call, with a flush
 * buffer of twice the L2), an L2 flush and then a spin of spin_us µs of the
 * GPU's clock, queued on the legacy stream; returns without waiting. The GPU
 * runs one context at a time, so the executor's work queued meanwhile starts
 * when the head ends. Waits first for the last head (cr_cuda_head_wait).
 * 0, or -1 with the reason in err. */
int cr_cuda_head_queue(double spin_us, char *err, size_t len);

/* The judge's idle probe after a self-timing executor's command: a one-cycle
 * kernel and an event on this process's context, waited for by spinning; *us
 * is how long that took (the GPU runs one context's kernels at a time: work an
 * executor left queued delays it). 0; 1 when the GPU was still busy after 2 s
 * (err says so); -1 on a CUDA error (err). */
int cr_cuda_head_probe(double *us, char *err, size_t len);

/* Waits (at most 50 ms) for the last queued head to end: 0 when it has (or
 * none was queued), -1 with the reason in err. */
int cr_cuda_head_wait(char *err, size_t len);

/* Which NVML library the judge opens (NULL = libnvidia-ml.so.1). Tests set it
 * to tests/fake_nvml's library so that lock policies never touch a real GPU.
 * The string must outlive the judge. */
void cr_cuda_judge_set_nvml_library(const char *path);

#ifdef __cplusplus
}
#endif

#endif
