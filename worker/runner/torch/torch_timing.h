/* torch_timing.h — the torch judge's timing rules, apart from its commands
 * (torch_judge.c) so that they are tested on figures alone
 * (tests/test_torch_timing.c): the cross-check of a GPU executor's CUDA
 * events against the judge's wall clock, STAGE and FETCH held to the
 * reference's, and the size of the judge's head. docs/torch.md §4. */
#ifndef CR_TORCH_TIMING_H
#define CR_TORCH_TIMING_H

#include "crucible.pb-c.h"

#include <stddef.h>

/* The head (torch_judge.c note 5): CR_TORCH_HEAD_START_US before the first
 * pairs, then from the reference's last CR_TORCH_HEAD_KEEP host times. */
#define CR_TORCH_HEAD_START_US 400.0
#define CR_TORCH_HEAD_KEEP 16

/* A timing run's figures, one entry a pair, in microseconds. */
typedef struct {
    double *a, *b, *aw, *bw; /* candidate, reference (used), their wall clocks */
    double *fa, *fb;         /* their FETCH commands */
    double *sa, *sb;         /* their STAGE commands */
    double *head;            /* the judge's spin before each pair (0 none) */
    size_t n;
    unsigned verified;
} cr_torch_samples_t;

/* A pair's two wall times (a command of each side, *wc the candidate's)
 * less what of each executor's main thread's wait for a core in it
 * (cr_exec_wait_us; < 0 unknown: both left as they are) is past hidden_us
 * (RUN's: the head, which the GPU spins meanwhile; 0 for STAGE and FETCH).
 * The reference's comes off whole; the candidate's only up to its pair's +
 * CR_TORCH_WAIT_SLACK_US (torch_timing.c). */
#define CR_TORCH_WAIT_SLACK_US 50.0
void cr_torch_take_waits(double *wc, double *wr, double wait_c, double wait_r, double hidden_us);

/* The median of v[0..n); 0 for none. */
double cr_torch_median(const double *v, size_t n);

/* On a GPU: what the candidate's events missed, pair by pair against the
 * reference's harness cost; counted into S->a past a small bound, and
 * HACK_DETECTED / timing_mismatch on rec past a larger one. */
void cr_torch_cross_check(cr_torch_samples_t *S, Crucible__RewardRecord *rec);

/* STAGE and FETCH held to the reference's (counted into S->a on the CPU,
 * gpu 0; flagged on rec on both). */
void cr_torch_aside_checks(cr_torch_samples_t *S, int gpu, Crucible__RewardRecord *rec);

/* The next pair's spin from the reference's last n (<= CR_TORCH_HEAD_KEEP)
 * host times, and the host time that figure stands for. */
double cr_torch_head_next(const double *span, size_t n);
double cr_torch_head_host_us(const double *span, size_t n);

#endif
