/* stats.c — see stats.h. */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cr_stats_online_push(cr_stats_online_t *o, double x)
{
    o->n++;
    double d = x - o->mean;
    o->mean += d / (double)o->n;
    o->m2 += d * (x - o->mean);
}

double cr_stats_online_rse(const cr_stats_online_t *o)
{
    if (o->n < 2 || o->mean <= 0)
        return INFINITY;
    double sd = sqrt(o->m2 / (double)(o->n - 1));
    return sd / sqrt((double)o->n) / o->mean;
}

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cr_stats_sort(double *x, size_t n)
{
    qsort(x, n, sizeof *x, s_cmp);
}

double cr_stats_quantile_sorted(const double *s, size_t n, double q)
{
    if (q <= 0 || n == 1)
        return s[0];
    if (q >= 1)
        return s[n - 1];
    double h = q * (double)(n - 1);
    size_t i = (size_t)h;
    double frac = h - (double)i;
    return i + 1 < n ? s[i] + frac * (s[i + 1] - s[i]) : s[i];
}

void cr_stats_median_ci_ranks(size_t n, double z, size_t *lo, size_t *hi)
{
    double half = z * sqrt((double)n) / 2.0;
    /* 1-based ranks j = n/2 - z*sqrt(n)/2, k = 1 + n/2 + z*sqrt(n)/2: the
     * normal approximation to the binomial (Conover, Practical
     * Nonparametric Statistics, §3.2), rounded outwards. */
    double l = floor((double)n / 2.0 - half);
    double h = ceil(1.0 + (double)n / 2.0 + half);
    if (l < 1)
        l = 1;
    if (h > (double)n)
        h = (double)n;
    *lo = (size_t)l - 1;
    *hi = (size_t)h - 1;
}

int cr_stats_compute(const double *x, size_t n, cr_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return -EINVAL;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return -ENOMEM;
    memcpy(s, x, n * sizeof *s);
    cr_stats_sort(s, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += s[i];
    double mean = sum / (double)n, ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (s[i] - mean) * (s[i] - mean);
    out->n = n;
    out->mean = mean;
    out->min = s[0];
    out->max = s[n - 1];
    out->median = cr_stats_quantile_sorted(s, n, 0.5);
    out->q1 = cr_stats_quantile_sorted(s, n, 0.25);
    out->q3 = cr_stats_quantile_sorted(s, n, 0.75);
    out->iqr = out->q3 - out->q1;
    out->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
    out->rse = n > 1 && mean > 0 ? out->stddev / sqrt((double)n) / mean : 0;
    size_t lo, hi;
    cr_stats_median_ci_ranks(n, CR_STATS_Z95, &lo, &hi);
    out->med_lo = s[lo];
    out->med_hi = s[hi];
    free(s);
    return 0;
}

void cr_stats_speedup(const cr_stats_t *a, const cr_stats_t *b, double *speedup, double *lo,
                      double *hi)
{
    *speedup = *lo = *hi = 0;
    if (a->n == 0 || b->n == 0 || a->median <= 0 || a->med_lo <= 0 || a->med_hi <= 0)
        return;
    *speedup = b->median / a->median;
    *lo = b->med_lo / a->med_hi;
    *hi = b->med_hi / a->med_lo;
}
