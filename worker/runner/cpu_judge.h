/* cpu_judge.h — the CPU backend of crucible-runner: verifies and times a
 * candidate's cr_entry against the reference's, inside this process.
 *
 * The judge owns every buffer; the candidate only ever sees pointers to
 * judge-made inputs and poisoned outputs. Verification follows docs/design.md §4:
 * candidate first, then the reference on pristine copies in fresh buffers,
 * then a second candidate run on new inputs at new addresses. Timing
 * interleaves candidate and reference (A B A B) with the last-level cache
 * flushed before every sample and inputs rotating through a pool, each call's
 * inputs made new by a random perturbation; under the
 * `cached` reference policy (cached_ref_us set) only the candidate is timed
 * and the reference's medians come from the request.
 *
 * Verdicts accumulate on a RewardRecord: status (worst wins: HACK_DETECTED
 * over INCORRECT over OK), message (the first failure of the worst kind),
 * hack_flags (each once). Everything hung on the record is malloc'd so that
 * crucible__reward_record__free_unpacked(rec, NULL) releases it. */
#ifndef CR_CPU_JUDGE_H
#define CR_CPU_JUDGE_H

#include "crucible.pb-c.h"
#include "judge_const.h" /* defaults, sample counts, budgets: one value for both judges */
#include "task.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cr_exec cr_exec_t;

typedef struct {
    const cr_task_t *task;    /* borrowed */
    cr_exec_t *cand;          /* the candidate's executor (exec.h); borrowed */
    cr_exec_t *ref;           /* the reference's: the truth for every check; borrowed */
    cr_exec_t *base;          /* what the candidate is timed against: the baseline's
                                 executor, or ref; borrowed */
    unsigned char seed[32];   /* secret per-evaluation seed (docs/design.md §4) */
    double time_budget_s;     /* s, per bench case; > 0 */
    double rse_target;        /* relative standard error to stop at; > 0 */
    int judge_cpu;            /* core the judge pins itself to while timing; < 0 = none */
    int ncpu;                 /* cores the task's threads may use */
    uint64_t llc_bytes;       /* bytes of last-level cache to flush (twice this is written) */
    double host_copy_bw;      /* bytes/s of memcpy on this host; 0 = unknown (no floor) */
    int load_fp_changed;      /* the candidate's constructors left the FP state changed */
    char load_fp_why[160];    /* how */
    const double *cached_ref_us;  /* us, one per bench case: `base` medians to reuse instead
                                     of timing it (cr_judge_cached_ref); NULL = time it;
                                     borrowed */
    const double *cached_ref_rse; /* their relative standard errors; NULL = unknown; borrowed */
} cr_cpu_judge_t;

/* Findings of one candidate run; the same checks serve both backends. */
typedef struct {
    int inputs_unchanged; /* every `in` buffer hashes as before the call */
    int all_written;      /* no `out` element still poisoned */
    int background;       /* threads outlived the call and the task allows none, or
                             (threads allowed) kept working after it returned */
    int aborted;          /* the candidate's executor ended during the run (its store into
                             a read-only input faulted): no later run can follow */
    uint64_t handlers;    /* signals the candidate installed handlers for (bit n-1 =
                             signal n; CPU judge; cleared by memset elsewhere) */
    int fp_env;           /* the call returned with the floating-point control state
                             changed (CPU judge; cleared by memset elsewhere) */
    uint64_t mismatches;  /* over every out/inout param */
    double max_abs;       /* largest |got - expected| between finite values */
    double max_rel;       /* largest |got - expected| / |expected| */
    int64_t first_bad;    /* index in the first param that mismatches; -1 none */
    char msg[512];        /* the first problem, "" when none */
    char why_bg[160];     /* what made background true; "" = the default text */
    char why_fp[160];     /* how the FP state differs, when fp_env */
} cr_judge_check_t;

/* Compares the candidate's out/inout buffers with the expected ones, both
 * in host memory: cand[p], exp[p] and numel[p] are indexed by param (other
 * params are skipped). An `out` element still holding poison where the
 * expected value is not the poison pattern counts as unwritten. Sets every
 * field of *k but inputs_unchanged and background, msg included. */
void cr_judge_compare_outputs(const cr_task_t *t, void *const *cand, void *const *exp,
                              const size_t *numel, cr_judge_check_t *k);

/* Records one verification run of case c on rec: hack flags (input_mutated,
 * output_unwritten, background_thread, fp_env_changed, second_run_mismatch
 * when second) and
 * the status with a message naming the case. Returns 1 when the run passed. */
int cr_judge_apply_run(Crucible__RewardRecord *rec, int c, const cr_judge_check_t *k,
                       int second);

/* Replaces a record string field (malloc'd, or protobuf's shared empty
 * string) with a copy of s; on ENOMEM the old text stays. */
void cr_judge_set_str(char **field, const char *s);

/* Adds flag to rec->hack_flags unless already present. */
void cr_judge_flag(Crucible__RewardRecord *rec, const char *flag);

/* Raises rec->status to status if that is worse, and sets rec->message when
 * the status rose or no message was set yet. */
void cr_judge_fail(Crucible__RewardRecord *rec, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets a status the judge's severity order does not cover (INFRA_ERROR,
 * RUNTIME_ERROR, TIMEOUT, INVALID_TASK), replacing any earlier verdict and
 * its message. */
void cr_judge_hard(Crucible__RewardRecord *rec, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The verdict when executor x stopped serving (cr_exec_fault): the one
 * rule for every way an executor can end, for every backend. A reference
 * or baseline that crashes, hangs or will not load makes the task invalid,
 * never the candidate wrong; an executor that could not start is the
 * judge's problem (INFRA_ERROR). */
void cr_judge_exec_verdict(Crucible__RewardRecord *rec, const cr_exec_t *x, int candidate);

/* The reference (or baseline) medians the request asks the judge to reuse
 * (RunnerRequest.cached_ref_median_us, the `cached` policy): returns them
 * when there is exactly one finite, positive value per bench case of t, and
 * sets *rse to cached_ref_rse when that matches too (else NULL). Returns NULL
 * when the request carries none, or ones that do not fit the task (logged):
 * the judge then measures the reference interleaved, which is always right. */
const double *cr_judge_cached_ref(const Crucible__RunnerRequest *req, const cr_task_t *t,
                                  const double **rse);

/* v[0..n) when it holds exactly one finite, positive value per bench case of
 * t; NULL when n is 0 or it does not fit (logged, naming `what` and what the
 * judge does `instead`). */
const double *cr_judge_per_bench(const double *v, size_t n, const cr_task_t *t, const char *what,
                                 const char *instead);

/* Threads of this process now (/proc/self/task), or -1 when unknown. */
int cr_judge_thread_count(void);

/* Who an executor's arenas serve, for cr_cpu_judge_arenas. */
enum { CR_JUDGE_ROLE_CANDIDATE, CR_JUDGE_ROLE_REFERENCE, CR_JUDGE_ROLE_BASELINE };

/* The input (*ro) and output (*rw) arena bytes an executor of that role
 * needs for every case of t: the most any one case keeps alive at once.
 * Returns 0, or CR_E_TASK when a shape does not evaluate. */
int cr_cpu_judge_arenas(const cr_task_t *t, int role, size_t *ro, size_t *rw);

/* Runs every case (docs/design.md §4 steps 1-3) and sets rec->verify and the
 * verdict on rec. Returns 0 when a verdict was reached (whatever it is), or a
 * negative code for a failure of the judge itself (out of memory, a shape that
 * does not evaluate) with err describing it; rec is then partly filled. */
int cr_cpu_judge_verify(const cr_cpu_judge_t *j, Crucible__RewardRecord *rec, char *err,
                        size_t errlen);

/* Times every bench case and sets rec->profile; a timed output that fails
 * verification makes rec INCORRECT ("timed_output_mismatch"), a timed call
 * that changed an input or left the FP state changed HACK_DETECTED
 * ("input_mutated", "fp_env_changed"), a median below the roofline floor
 * HACK_DETECTED ("below_roofline"). Call it only after a passing
 * cr_cpu_judge_verify. Pins the calling thread to j->judge_cpu. Same return
 * contract as cr_cpu_judge_verify, plus CR_E_EXEC when an executor stopped
 * serving (cr_exec_fault says how; the caller turns it into the verdict). */
int cr_cpu_judge_time(const cr_cpu_judge_t *j, Crucible__RewardRecord *rec, char *err,
                      size_t errlen);

#endif
