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

/* ---------------------------------------------------------------- level */

double cr_level_offset(double ref_us, size_t n_ref, double anchor_us, cr_level_from_t from,
                       cr_level_why_t *why)
{
    const int warm = from == CR_LEVEL_WARMUP;
    if (!isfinite(ref_us) || !isfinite(anchor_us) || ref_us <= 0 || anchor_us <= 0 || n_ref == 0)
        *why = CR_LEVEL_NO_MEDIAN;
    else if (anchor_us > (warm ? CR_LEVEL_WARMUP_REF_MAX_US : CR_LEVEL_REF_MAX_US))
        *why = CR_LEVEL_LONG;
    else if (warm && n_ref < CR_LEVEL_WARMUP_MIN_SAMPLES)
        *why = CR_LEVEL_FEW;
    else if (fabs(ref_us - anchor_us) > CR_LEVEL_MAX_US)
        *why = CR_LEVEL_FAR;
    else
        *why = CR_LEVEL_APPLIES;
    return *why == CR_LEVEL_APPLIES ? ref_us - anchor_us : 0;
}

/* a warm-up that stops at its target has enough samples for the level */
_Static_assert(CR_LEVEL_WARMUP_SAMPLES >= CR_LEVEL_WARMUP_MIN_SAMPLES, "warm-up sample target");

size_t cr_level_warmup_samples(double anchor_us)
{
    return isfinite(anchor_us) && anchor_us > 0 && anchor_us <= CR_LEVEL_WARMUP_REF_MAX_US
               ? CR_LEVEL_WARMUP_SAMPLES
               : 0;
}

/* ---------------------------------------------------------------- stalls */

#define S_STALL_SPAN0_US 40000.0 /* first periodogram pass: this much of the run ... */
#define S_STALL_SPAN0_MIN 256    /* ... or the first this many samples, if that is longer */
#define S_STALL_PHASES 256       /* phase grid over one period */
#define S_STALL_WINSOR 0.01      /* the signal is clipped to these quantiles per group */
#define S_STALL_FINE 32.0        /* refining steps: 1/(this x span) in frequency */
#define S_STALL_PEAKS 8          /* coarse peaks refined (aliases among them) */
#define S_STALL_MULTIPLES 3      /* the period found, twice and three times it: tried */

typedef struct {
    double m; /* mid time of the sample, from the first start */
    double y; /* its time less its group's centre, clipped (S_STALL_WINSOR) */
} s_pt_t;

static int s_cmp_pt(const void *a, const void *b)
{
    double x = ((const s_pt_t *)a)->m, y = ((const s_pt_t *)b)->m;
    return (x > y) - (x < y);
}

/* |sum y e^(2 pi i f m)|^2 / sum y^2 over the first k points: ~1 for noise. */
static double s_power(const s_pt_t *p, size_t k, double f)
{
    double c = 0, s = 0, yy = 0;
    for (size_t i = 0; i < k; i++) {
        double a = 2 * M_PI * f * p[i].m;
        c += p[i].y * cos(a);
        s += p[i].y * sin(a);
        yy += p[i].y * p[i].y;
    }
    return yy > 0 ? (c * c + s * s) / yy : 0;
}

/* Every frequency in [f0, f1] at step df over the first k points, by
 * rotating each point's phasor (no trigonometry per step). Keeps the
 * frequencies of the `want` strongest local maxima in best[] (strongest
 * first) and returns how many it found. */
static int s_scan(const s_pt_t *p, size_t k, double f0, double f1, double df, double *work,
                  double *best, int want)
{
    double *zr = work, *zi = work + k, *rr = work + 2 * k, *ri = work + 3 * k;
    for (size_t i = 0; i < k; i++) {
        double a = 2 * M_PI * f0 * p[i].m, b = 2 * M_PI * df * p[i].m;
        zr[i] = p[i].y * cos(a);
        zi[i] = p[i].y * sin(a);
        rr[i] = cos(b);
        ri[i] = sin(b);
    }
    double pw[S_STALL_PEAKS], prev2 = -1, prev = -1;
    int got = 0;
    const long steps = (long)((f1 - f0) / df) + 1;
    for (long j = 0; j <= steps; j++) {
        double c = 0, s = 0;
        for (size_t i = 0; j < steps && i < k; i++) {
            c += zr[i];
            s += zi[i];
            double r = zr[i] * rr[i] - zi[i] * ri[i];
            zi[i] = zr[i] * ri[i] + zi[i] * rr[i];
            zr[i] = r;
        }
        double cur = j < steps ? c * c + s * s : -1;
        if (j > 0 && prev >= prev2 && prev > cur) { /* step j-1 is a local maximum */
            int fresh = got < want, at = fresh ? got++ : want - 1;
            if (fresh || prev > pw[at]) {
                pw[at] = prev;
                best[at] = f0 + (double)(j - 1) * df;
                for (; at > 0 && pw[at] > pw[at - 1]; at--) { /* keep them sorted */
                    double t = pw[at];
                    pw[at] = pw[at - 1];
                    pw[at - 1] = t;
                    t = best[at];
                    best[at] = best[at - 1];
                    best[at - 1] = t;
                }
            }
        }
        prev2 = prev;
        prev = cur;
    }
    return got;
}

static double s_stall_count(double s, double w, double phase, double T)
{
    return floor((s + w - phase) / T) - floor((s - phase) / T);
}

int cr_stall_fit(const double *start, const double *dur, const unsigned char *grp, size_t n,
                 double tmin_us, double tmax_us, cr_stall_fit_t *fit, double *adj)
{
    memset(fit, 0, sizeof *fit);
    if (!start || !dur || !grp || !adj || !(tmin_us > 0) || !(tmax_us > tmin_us))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        adj[i] = 0;
    if (n < CR_STALL_MIN_SAMPLES)
        return 0;
    s_pt_t *p = (s_pt_t *)malloc(n * sizeof *p);
    double *tmp = (double *)malloc(4 * n * sizeof *tmp);
    double *cnt = (double *)malloc(n * sizeof *cnt);
    double *sig = (double *)malloc(n * sizeof *sig);
    int rc = -ENOMEM;
    if (!p || !tmp || !cnt || !sig)
        goto out;
    rc = 0;

    /* Per group: median, clip limits, and the centred, clipped signal. */
    double med[2] = {0, 0}, lo[2] = {0, 0}, hi[2] = {0, 0}, t0 = start[0];
    size_t ng[2] = {0, 0};
    for (size_t i = 0; i < n; i++)
        t0 = start[i] < t0 ? start[i] : t0;
    for (int g = 0; g < 2; g++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if ((grp[i] != 0) == g)
                tmp[k++] = dur[i];
        ng[g] = k;
        if (!k)
            continue;
        cr_stats_sort(tmp, k);
        med[g] = cr_stats_quantile_sorted(tmp, k, 0.5);
        lo[g] = cr_stats_quantile_sorted(tmp, k, S_STALL_WINSOR);
        hi[g] = cr_stats_quantile_sorted(tmp, k, 1 - S_STALL_WINSOR);
    }
    double ym[2] = {0, 0}, yy[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        int g = grp[i] != 0;
        sig[i] = (dur[i] < lo[g] ? lo[g] : dur[i] > hi[g] ? hi[g] : dur[i]) - med[g];
        ym[g] += sig[i];
    }
    for (size_t i = 0; i < n; i++) {
        int g = grp[i] != 0;
        sig[i] -= ym[g] / (double)ng[g];
        yy[g] += sig[i] * sig[i];
        p[i].m = start[i] - t0 + dur[i] / 2;
        p[i].y = sig[i];
    }
    /* Sorted by time, so that a pass over the first D us is a prefix. */
    qsort(p, n, sizeof *p, s_cmp_pt);

    /* Periodogram: a coarse scan over the first S_STALL_SPAN0_US (a
     * frequency step of 1/(4D) cannot step over a peak of width 1/D), then
     * doubling spans, each searching half the last span's peak width
     * either side of its peak at steps of 1/(S_STALL_FINE D): the period must
     * hold its phase to a fraction of a stall over the whole run (10^4
     * periods a second). */
    const double span = p[n - 1].m, f0 = 1 / tmax_us, f1 = 1 / tmin_us;
    double D = span < S_STALL_SPAN0_US ? span : S_STALL_SPAN0_US;
    if (n > S_STALL_SPAN0_MIN && p[S_STALL_SPAN0_MIN - 1].m > D)
        D = p[S_STALL_SPAN0_MIN - 1].m;
    if (!(D > 0))
        goto out;
    size_t k = 0;
    while (k < n && p[k].m <= D)
        k++;
    /* Sampling at a near-regular rate makes aliases of a period; they lose
     * their power as the span grows and the true period does not, so the
     * strongest few of the coarse pass are all refined. */
    double cand[S_STALL_PEAKS], f = 0;
    const int ncand = s_scan(p, k, f0, f1, 1 / (4 * D), tmp, cand, S_STALL_PEAKS);
    const double D0 = D;
    const size_t k0 = k;
    fit->power = -1;
    for (int c = 0; c < ncand; c++) {
        double fc = cand[c];
        for (D = D0, k = k0; D < span;) {
            const double half = 1 / (2 * D); /* half the last span's peak width */
            D = 2 * D < span ? 2 * D : span;
            while (k < n && p[k].m <= D)
                k++;
            double fb = fc;
            if (s_scan(p, k, fc - half, fc + half, 1 / (S_STALL_FINE * D), tmp, &fb, 1) == 1)
                fc = fb;
        }
        double pw = s_power(p, n, fc);
        if (pw > fit->power) {
            fit->power = pw;
            f = fc;
        }
    }
    if (!(f > 0))
        goto out;
    fit->period_us = 1 / f;
    if (fit->power < CR_STALL_MIN_POWER)
        goto out;

    /* Phase: the grid point whose stall counts correlate best with the
     * times, groups pooled (each centred on its own mean count). Rare
     * stalls (a short kernel) leave harmonics as strong as the fundamental
     * in the periodogram, so whole multiples of the period are tried too. */
    const double f_peak = f;
    double best_r = -2;
    for (int mult = 1; mult <= S_STALL_MULTIPLES && mult / f_peak <= tmax_us; mult++) {
        const double Tm = mult / f_peak;
        for (int j = 0; j < S_STALL_PHASES; j++) {
            double ph = Tm * j / S_STALL_PHASES, sn[2] = {0, 0}, snn[2] = {0, 0};
            double sny[2] = {0, 0};
            for (size_t i = 0; i < n; i++) {
                int g = grp[i] != 0;
                double c = s_stall_count(start[i] - t0, dur[i], ph, Tm);
                sn[g] += c;
                snn[g] += c * c;
                sny[g] += c * sig[i];
            }
            double cov = 0, var = 0;
            for (int g = 0; g < 2; g++) {
                if (!ng[g])
                    continue;
                cov += sny[g]; /* the signal is centred: sum (c - mean c) y = sum c y */
                var += snn[g] - sn[g] * sn[g] / (double)ng[g];
            }
            double r = var > 0 && yy[0] + yy[1] > 0 ? cov / sqrt(var * (yy[0] + yy[1])) : 0;
            if (r > best_r) {
                best_r = r;
                fit->phase_us = ph;
                fit->period_us = Tm;
            }
        }
    }
    const double T = fit->period_us;
    fit->r = best_r;
    if (best_r < CR_STALL_MIN_R)
        goto out;

    /* Time per stall, per group: the least-squares slope of time on count. */
    double sn[2] = {0, 0}, snn[2] = {0, 0}, sny[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        int g = grp[i] != 0;
        cnt[i] = s_stall_count(start[i] - t0, dur[i], fit->phase_us, T);
        sn[g] += cnt[i];
        snn[g] += cnt[i] * cnt[i];
        sny[g] += cnt[i] * sig[i];
    }
    for (int g = 0; g < 2; g++) {
        if (!ng[g])
            continue;
        fit->mean_n[g] = sn[g] / (double)ng[g];
        double var = snn[g] - sn[g] * sn[g] / (double)ng[g];
        double d = var > 0 ? sny[g] / var : 0;
        fit->d_us[g] = d > 0 && d <= CR_STALL_MAX_SHARE * med[g] ? d : 0;
        fit->found |= fit->d_us[g] > 0;
    }
    if (fit->found)
        for (size_t i = 0; i < n; i++) {
            int g = grp[i] != 0;
            double d = fit->d_us[g];
            adj[i] = d * (cnt[i] - (dur[i] - d * cnt[i]) / T);
        }
out:
    free(p);
    free(tmp);
    free(cnt);
    free(sig);
    return rc;
}
