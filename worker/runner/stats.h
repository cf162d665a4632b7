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

/* Periodic stalls. Some GPUs pause all work for ~1 us at a fixed period
 * (an H200 here: 1.3-1.4 us every 100.148 us, on the GPU's clock). A sample
 * of length w then holds floor(w/T) or floor(w/T)+1 of them, at random, and a
 * kernel near half a period long has two modes a stall apart: its median
 * jumps between them from run to run while its mean does not. The fit finds
 * the period from the samples themselves (start times on one clock), and
 * each sample's stall count; the adjustment replaces a sample's count n by
 * its expectation w'/T (w' = w - d n, the sample's stall-free length), so a
 * group keeps the machine's average stall cost and loses only the luck of
 * the count. */
typedef struct {
    int found;        /* 1: a period passed every check; adj[] is set */
    double period_us; /* T */
    double phase_us;  /* stalls at phase + k*T on the start clock */
    double power;     /* normalised periodogram peak (~1 for noise) */
    double r;         /* correlation of stall count and time, groups pooled */
    double d_us[2];   /* time per stall, per group; 0 = not corrected */
    double mean_n[2]; /* mean stall count per sample, per group */
} cr_stall_fit_t;

#define CR_STALL_MIN_SAMPLES 64  /* fewer: no fit */
#define CR_STALL_MIN_POWER 30.0  /* periodogram peak / noise level to accept a period */
#define CR_STALL_MIN_R 0.3       /* and this correlation of count and time */
#define CR_STALL_MAX_SHARE 0.25  /* a stall costs at most this share of a group's median */

/* Samples i < n: start[i] (us, any origin, one clock), dur[i] (us), group
 * grp[i] (0 or 1, e.g. candidate and reference). Searches periods in
 * [tmin_us, tmax_us]; with a period found, adj[i] = d (n_i - w'_i/T) with the
 * sample's group's d (subtract it from dur[i]), else adj[i] = 0. Returns 0
 * (see fit->found), -EINVAL, -ENOMEM. */
int cr_stall_fit(const double *start, const double *dur, const unsigned char *grp, size_t n,
                 double tmin_us, double tmax_us, cr_stall_fit_t *fit, double *adj);

/* Process level. Every runner process on a GPU times at a level of its own:
 * an offset common to every kernel it times (an H200 here: a spread of
 * 0.1-0.2 us over ten processes, whatever the kernel's length, buffers,
 * stream or context). A reference timed beside the candidate carries the
 * same offset, so its distance from an anchor (the same reference's median
 * measured earlier on the same GPU) measures it. */
#define CR_LEVEL_REF_MAX_US 100.0
#define CR_LEVEL_MAX_US 0.3
/* A reference measured only in the warm-up (the cached policy) has few
 * samples. On the H200 its level cut the spread of a ~11 us candidate's
 * medians from 1.56% to 0.94% (12 us reference) but raised a ~52 us one's
 * from 0.22% to 0.35% (66 us reference: too few samples of a reference that
 * straddles the GPU's periodic stall). Only short anchors, then; the limit
 * lies between the two references measured. */
#define CR_LEVEL_WARMUP_REF_MAX_US 30.0
/* ... and at least this many of its samples: with the H200's ~0.26 us
 * interquartile range at 8-12 us, the median of 30 is within ~0.05 us (its
 * standard error), a third of the 0.1-0.2 us levels. A 20 ms warm-up holds
 * ~40 pairs of a ~11 us case. */
#define CR_LEVEL_WARMUP_MIN_SAMPLES 30
/* ... and the warm-up goes on until it has this many where they can be a
 * level (docs/cuda-judge.md §12: with work queued behind every timed call,
 * 20 ms held only 29-47 of a ~8 us reference, and the cached policy's
 * medians of that case spread 1.6-3.3%; with 80, 0.47-0.68%). */
#define CR_LEVEL_WARMUP_SAMPLES 80
typedef enum {
    CR_LEVEL_TIMED,  /* the reference timed beside the candidate (interleaved) */
    CR_LEVEL_WARMUP, /* the reference's warm-up samples only (cached) */
} cr_level_from_t;
typedef enum {
    CR_LEVEL_APPLIES,   /* the distance is the level */
    CR_LEVEL_NO_MEDIAN, /* no usable anchor or reference median */
    CR_LEVEL_LONG,      /* anchor over CR_LEVEL_REF_MAX_US (CR_LEVEL_WARMUP_REF_MAX_US
                           from the warm-up): a long reference's own spread
                           outweighs the level */
    CR_LEVEL_FAR,       /* distance over CR_LEVEL_MAX_US: more than a process level,
                           the reference itself changed */
    CR_LEVEL_FEW,       /* from the warm-up, fewer than CR_LEVEL_WARMUP_MIN_SAMPLES */
} cr_level_why_t;
/* The offset to take off the times, ref_us - anchor_us, when *why is
 * CR_LEVEL_APPLIES; else 0. ref_us is the median of n_ref samples of the
 * reference measured as `from` says. */
double cr_level_offset(double ref_us, size_t n_ref, double anchor_us, cr_level_from_t from,
                       cr_level_why_t *why);
/* Reference samples a warm-up should take for the level against anchor_us:
 * CR_LEVEL_WARMUP_SAMPLES where cr_level_offset could take one from the
 * warm-up (a usable anchor within CR_LEVEL_WARMUP_REF_MAX_US), else 0. */
size_t cr_level_warmup_samples(double anchor_us);

#endif
