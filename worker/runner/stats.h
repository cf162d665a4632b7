/* stats.h — summary statistics of timing samples, pure functions.
 *
 * The judge reports medians (robust to the odd preempted sample), the mean's
 * relative standard error (its stopping rule) and a distribution-free
 * confidence interval for the median from order statistics, which gives the
 * speedup its interval without assuming normal timing noise. */
#ifndef CR_STATS_H
#define CR_STATS_H

#include <stddef.h>
#include <stdint.h>

/* z for a two-sided 95% interval. */
#define CR_STATS_Z95 1.959963984540054

typedef struct {
    size_t n;      /* samples */
    double median; /* same unit as the samples */
    double mean;
    double min;
    double max;
    double q1;     /* 25th percentile (linear interpolation) */
    double q3;     /* 75th percentile */
    double iqr;    /* q3 - q1 */
    double stddev; /* sample standard deviation (n - 1); 0 when n < 2 */
    double rse;    /* stddev / sqrt(n) / mean; 0 when n < 2 or mean == 0 */
    double med_lo; /* ~95% order-statistic interval for the median */
    double med_hi;
} cr_stats_t;

/* Running mean and variance (Welford), for the adaptive stopping rule. */
typedef struct {
    size_t n;    /* samples pushed */
    double mean; /* running mean */
    double m2;   /* sum of squared deviations from the mean */
} cr_stats_online_t;

void cr_stats_online_push(cr_stats_online_t *o, double x);
/* Relative standard error of the mean so far; +Inf when n < 2 or mean <= 0. */
double cr_stats_online_rse(const cr_stats_online_t *o);

/* Sorts x in place (ascending). */
void cr_stats_sort(double *x, size_t n);

/* Quantile q in [0,1] of sorted data with linear interpolation between order
 * statistics (type 7, the default of R and numpy). n must be > 0. */
double cr_stats_quantile_sorted(const double *sorted, size_t n, double q);

/* 0-based ranks [*lo, *hi] of the order statistics that bracket the median
 * with confidence ~ the normal approximation to Binomial(n, 1/2) at z:
 * lo = floor(n/2 - z*sqrt(n)/2), hi = ceil(1 + n/2 + z*sqrt(n)/2) (1-based),
 * clamped to the data. n must be > 0. */
void cr_stats_median_ci_ranks(size_t n, double z, size_t *lo, size_t *hi);

/* Fills *out from n samples (x is not modified; a sorted copy is made).
 * Returns 0, -EINVAL when n == 0 (then *out is zeroed), -ENOMEM. */
int cr_stats_compute(const double *x, size_t n, cr_stats_t *out);

/* Speedup of a over b as b.median / a.median with an interval built from the
 * two median intervals: [b.med_lo / a.med_hi, b.med_hi / a.med_lo]. Each side
 * is a 95% interval, so the joint one is conservative (>= ~90% when the two
 * are independent, in practice wider than 95%). 0s when a is degenerate. */
void cr_stats_speedup(const cr_stats_t *a, const cr_stats_t *b, double *speedup, double *lo,
                      double *hi);

#endif
