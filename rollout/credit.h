/* credit.h — spreading a trajectory's per-turn rewards over its turns.
 *
 * Named and versioned like the reward formulas (common/reward.h); the
 * version is bumped whenever the numbers a formula gives change.
 *   discounted@1 — R_t = S_t + gamma * R_{t+1}, R after the last turn = 0
 *                  (gamma 1: the sum of this turn's and every later reward;
 *                  gamma 0: the turn's own reward).
 *   best@1       — R_t = max(S_t, S_{t+1}, ..., S_last): a turn is worth the
 *                  best kernel it led to (best-of-turns).
 * S_t is the judge's reward of turn t (the batch's --reward formula); a
 * turn without one (an infrastructure outcome) counts 0 in the returns and
 * is left out of its advantage group.
 * Advantages are group-relative per (task, turn): the returns of every
 * sample of the task that reached turn t, normalised as
 * cr_reward_advantages does (mean and population std of the group). */
#ifndef CR_CREDIT_H
#define CR_CREDIT_H

#include <stddef.h>

/* 1 when spec ("discounted", "best@1") names a known formula. */
int cr_credit_known(const char *spec);

/* Writes "name@version" of spec's formula into out. 0, or CR_E_USAGE. */
int cr_credit_name(const char *spec, char *out, size_t len);

/* The returns of one trajectory: ret[t] for rewards r[0..n) (has[t] == 0
 * counts as 0). 0, or CR_E_USAGE for an unknown formula (ret untouched). */
int cr_credit_returns(const char *spec, double gamma, const double *r, const int *has, int n,
                      double *ret);

#endif
