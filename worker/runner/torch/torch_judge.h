/* torch_judge.h — the torch backend of crucible-runner (docs/torch.md).
 *
 * A "language": "torch" task is a KernelBench-format problem (Model,
 * get_inputs, get_init_inputs); a candidate defines ModelNew. Both run in
 * Python executors (worker/runner/torch/crucible_torch.py), one per role,
 * started, frozen and timed by exec.c exactly as crucible-executor is; this
 * judge never imports torch and never runs client code. It learns the
 * inputs' and outputs' shapes from the reference's executor, draws every
 * input itself from the secret seed, and makes every verdict with the CPU
 * judge's helpers (cr_judge_compare_outputs, cr_judge_apply_run,
 * cr_judge_fail): the same comparison and the same rule as for C tasks. */
#ifndef CR_TORCH_JUDGE_H
#define CR_TORCH_JUDGE_H

#include "crucible.pb-c.h"
#include "exec.h"
#include "task.h"

#include <stdint.h>

/* What the runner hands the torch judge: its settings for this request and
 * its one rule for how an executor ended (runner.c). */
typedef struct {
    const char *harness;   /* crucible-torch's path */
    int exec_cpu;          /* core the timed executor is pinned to; < 0 = none */
    int judge_cpu;         /* core this process keeps to while timing; < 0 = none */
    int64_t deadline_ns;   /* CLOCK_MONOTONIC deadline of every command; 0 = none */
    double time_budget_s;  /* s of timing; > 0 */
    double rse_target;     /* relative standard error to stop at; > 0 */
    int cuda;              /* 1: run the models on the GPU (the runner has CUDA and the
                              task does not ask for "device": "cpu") */
    double host_copy_bw;   /* B/s of memcpy on this host (RunnerRequest); 0 = unknown */
    double device_copy_bw; /* B/s of the GPU's device copies (RunnerRequest); 0 = unknown */
    double device_peak_flops; /* flop/s above the GPU's peak (RunnerRequest); 0 = unknown */
    /* the judge's head before every timed RUN on a GPU (torch_judge.c note 5):
     * cr_cuda_head_queue where the runner has CUDA, else NULL (the executor
     * then flushes the L2 itself, and its events hold its host's way to its
     * launches) */
    int (*head_queue)(double spin_us, char *err, size_t len);
    /* and the judge's idle probe after every timed FETCH (cr_cuda_head_probe):
     * what an executor left queued on the GPU, timed as part of its call */
    int (*head_probe)(double *us, char *err, size_t len);
} cr_torch_env_t;

/* Judges req's candidate against task's reference (both torch "objects":
 * crucible-torch compile's JSON) and fills rec: verdict, verify, profile,
 * the KernelBench fields. Every failure lands on rec; never fails itself. */
void cr_torch_judge_run(const Crucible__RunnerRequest *req, const cr_task_t *task,
                        const cr_torch_env_t *env, Crucible__RewardRecord *rec);

/* on != 0: this process judges one request after another (`crucible-runner
 * --serve`): as a CPU job ends, the next job's two executors are started (they
 * import torch before their sandbox, seconds a job then no longer waits
 * for), each in a scratch folder of its own beside the job's. Default 0. */
void cr_torch_judge_serve(int on);

/* Serving: ends the executors started ahead for a torch job, when the next
 * job is not one: each is pinned to the timing core and imports torch for
 * seconds, which another backend's timing there must not share. */
void cr_torch_judge_drop_spares(void);

#endif
