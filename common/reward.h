/* reward.h — named, versioned reward formulas applied to a record.
 *
 * Formulas (name@version):
 *   default@1  — 0 unless status OK and no hack flag; then
 *                0.3 + 0.7 * min(speedup_geomean, 4) / 4. Cap 4: above it a
 *                speedup is more likely a measurement artefact than a win.
 *   kevin@2    — 0.3*correct + speedup*correct (Kevin-32B).
 *   drkernel@2 — 0.5*correct + 0.5*min(speedup, 3) (Dr. Kernel).
 *   (@1 of both paid the 0.3 / 0.5 "correct" term to an OK record with a
 *   hack flag; @2 counts such a record as not correct.)
 * Infrastructure outcomes (cr_status_is_infra) get has_reward = 0. A hack
 * flag (or status HACK_DETECTED) makes the whole reward 0 under every
 * formula: a flagged result is not a correct one. */
#ifndef CR_REWARD_H
#define CR_REWARD_H

#include "crucible.pb-c.h"

/* Sets rec->has_reward, rec->reward and rec->components (allocated with
 * malloc, owned by the record as protobuf-c free_unpacked expects; a
 * previous components message is replaced). formula is a name with or
 * without "@version"; NULL or "" is "default". Returns 0 or CR_E_USAGE for
 * an unknown formula (record untouched). */
int cr_reward_apply(Crucible__RewardRecord *rec, const char *formula);

/* 1 when name names a known formula. */
int cr_reward_known(const char *name);

/* The head of an entry of a table of named, versioned formulas (the reward
 * formulas here, the credit formulas of rollout/credit.h). */
typedef struct {
    const char *name; /* without version */
    int version;      /* current version; bumped whenever the numbers change */
} cr_formula_key_t;

/* The index in table (n entries of stride bytes, each starting with a
 * cr_formula_key_t) of spec, "name" or "name@version" (the current version
 * only); NULL or "" is def. -1 when none matches. */
int cr_formula_find(const char *spec, const char *def, const void *table, size_t n,
                    size_t stride);

/* Group-relative advantages: adv[i] = (r[i] - mean) / (std + 1e-6) over the
 * members with a reward; members without (has[i] == 0) get 0. */
void cr_reward_advantages(const double *r, const int *has, int n, double *adv);

#endif
