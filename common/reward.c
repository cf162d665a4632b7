/* reward.c — the reward formulas of reward.h and GRPO advantages.
 *
 * Components are additive: reward = correct + speed - penalty, each the
 * contribution of its term, so a trainer can see why a sample scored what
 * it did. No formula penalises yet; the field is kept for ones that will. */
#include "reward.h"

#include "error.h"
#include "record.h"
#include "wire.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double correct; /* contribution of correctness */
    double speed;   /* contribution of speed */
    double penalty; /* subtracted */
} s_terms_t;

/* ok: status OK; hacked: a hack flag fired; s: geometric-mean speedup (0 = none). */
typedef s_terms_t (*s_formula_fn)(int ok, int hacked, double s);

static s_terms_t s_default(int ok, int hacked, double s)
{
    s_terms_t t = {0, 0, 0};
    if (ok && !hacked) {
        t.correct = 0.3;
        t.speed = 0.7 * fmin(s, 4.0) / 4.0; /* cap 4: see reward.h */
    }
    return t;
}

/* Kevin and Dr. Kernel: "correct" means OK with no hack flag. A kernel the
 * judge caught cheating is not a correct one, so a flag zeroes both terms,
 * never only the speed one (docs/hacks.md #20). */
static s_terms_t s_kevin(int ok, int hacked, double s)
{
    int correct = ok && !hacked;
    s_terms_t t = {correct ? 0.3 : 0, correct ? s : 0, 0};
    return t;
}

static s_terms_t s_drkernel(int ok, int hacked, double s)
{
    int correct = ok && !hacked;
    s_terms_t t = {correct ? 0.5 : 0, correct ? 0.5 * fmin(s, 3.0) : 0, 0};
    return t;
}

/* One formula: its key, its terms, and the key spelt "name@version" as
 * records carry it (written once here, not formatted per record). */
#define S_FORMULA(name, version, fn) {{name, version}, fn, name "@" #version}
static const struct {
    cr_formula_key_t key; /* name@version */
    s_formula_fn fn;
    const char *full;     /* "name@version" */
} s_formulas[] = {
    S_FORMULA("default", 1, s_default),
    S_FORMULA("kevin", 2, s_kevin),       /* 2: a hack flag zeroes the correct term too */
    S_FORMULA("drkernel", 2, s_drkernel), /* 2: likewise */
};

int cr_formula_find(const char *spec, const char *def, const void *table, size_t n,
                    size_t stride)
{
    if (!spec || !*spec)
        spec = def;
    const char *at = strchr(spec, '@');
    size_t len = at ? (size_t)(at - spec) : strlen(spec);
    for (size_t i = 0; i < n; i++) {
        const cr_formula_key_t *k = (const cr_formula_key_t *)((const char *)table + i * stride);
        if (strlen(k->name) != len || strncmp(k->name, spec, len) != 0)
            continue;
        if (at) {
            char *end = NULL;
            long v = strtol(at + 1, &end, 10);
            if (!at[1] || *end || v != k->version)
                return -1;
        }
        return (int)i;
    }
    return -1;
}

static int s_find(const char *spec)
{
    return cr_formula_find(spec, "default", s_formulas, sizeof s_formulas / sizeof s_formulas[0],
                           sizeof s_formulas[0]);
}

int cr_reward_known(const char *name)
{
    return s_find(name) >= 0;
}

int cr_reward_apply(Crucible__RewardRecord *rec, const char *formula)
{
    int i = s_find(formula);
    if (i < 0)
        return CR_E_USAGE;
    /* a worker's record decoded into the coordinator's arena gets its parts
     * there (wire.h), any other on the heap */
    int arena = cr_wire_in_arena(&rec->components);
    size_t flen = strlen(s_formulas[i].full) + 1;
    Crucible__RewardComponents *c = arena ? cr_wire_arena_alloc(sizeof *c) : malloc(sizeof *c);
    char *fname = arena ? cr_wire_arena_alloc(flen) : malloc(flen);
    if (!c || !fname) {
        if (!arena) {
            free(c);
            free(fname);
        }
        return -ENOMEM;
    }
    memcpy(fname, s_formulas[i].full, flen);
    crucible__reward_components__init(c);
    c->formula = fname;

    int infra = cr_status_is_infra(rec->status);
    int ok = rec->status == CRUCIBLE__STATUS__STATUS_OK;
    int hacked = rec->n_hack_flags > 0 || rec->status == CRUCIBLE__STATUS__STATUS_HACK_DETECTED;
    double s = rec->profile ? rec->profile->speedup_geomean : 0;
    if (!isfinite(s) || s < 0)
        s = 0; /* a broken measurement earns nothing rather than everything */
    if (!infra) {
        s_terms_t t = s_formulas[i].fn(ok, hacked, s);
        c->correct = t.correct;
        c->speed = t.speed;
        c->penalty = t.penalty;
    }
    if (rec->components && !arena)
        crucible__reward_components__free_unpacked(rec->components, NULL);
    rec->components = c;
    rec->has_reward = !infra;
    rec->reward = infra ? 0 : c->correct + c->speed - c->penalty;
    return 0;
}

void cr_reward_advantages(const double *r, const int *has, int n, double *adv)
{
    double sum = 0, sq = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (has[i]) {
            sum += r[i];
            k++;
        }
    }
    double mean = k ? sum / k : 0;
    for (int i = 0; i < n; i++)
        if (has[i])
            sq += (r[i] - mean) * (r[i] - mean);
    double sd = k ? sqrt(sq / k) : 0; /* population std, as GRPO normalises within the group */
    for (int i = 0; i < n; i++)
        adv[i] = has[i] ? (r[i] - mean) / (sd + 1e-6) : 0;
}
