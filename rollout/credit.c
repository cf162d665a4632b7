/* credit.c — the credit formulas of credit.h. */
#include "credit.h"

#include "error.h"
#include "reward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*s_credit_fn)(double gamma, const double *s, int n, double *ret);

static void s_discounted(double gamma, const double *s, int n, double *ret)
{
    double next = 0;
    for (int t = n - 1; t >= 0; t--)
        next = ret[t] = s[t] + gamma * next;
}

static void s_best(double gamma, const double *s, int n, double *ret)
{
    (void)gamma;
    double best = -INFINITY;
    for (int t = n - 1; t >= 0; t--)
        best = ret[t] = fmax(best, s[t]);
}

static const struct {
    cr_formula_key_t key; /* name@version, as the reward formulas */
    s_credit_fn fn;
} s_formulas[] = {
    {{"discounted", 1}, s_discounted},
    {{"best", 1}, s_best},
};

static int s_find(const char *spec)
{
    return cr_formula_find(spec, "discounted", s_formulas,
                           sizeof s_formulas / sizeof s_formulas[0], sizeof s_formulas[0]);
}

int cr_credit_known(const char *spec)
{
    return s_find(spec) >= 0;
}

int cr_credit_name(const char *spec, char *out, size_t len)
{
    int i = s_find(spec);
    if (i < 0)
        return CR_E_USAGE;
    snprintf(out, len, "%s@%d", s_formulas[i].key.name, s_formulas[i].key.version);
    return 0;
}

int cr_credit_returns(const char *spec, double gamma, const double *r, const int *has, int n,
                      double *ret)
{
    int i = s_find(spec);
    if (i < 0)
        return CR_E_USAGE;
    double s[64]; /* turns per sample: at most the config's 64 */
    double *sp = n <= 64 ? s : malloc((size_t)n * sizeof *sp);
    if (!sp)
        return CR_E_USAGE;
    for (int t = 0; t < n; t++)
        sp[t] = has[t] && isfinite(r[t]) ? r[t] : 0;
    s_formulas[i].fn(gamma, sp, n, ret);
    if (sp != s)
        free(sp);
    return 0;
}
