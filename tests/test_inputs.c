/* test_inputs.c — input generation, poison, comparison (common/inputs.c)
 * and the judge's statistics (worker/runner/stats.c). */
#include "../worker/runner/stats.h"
#include "hash.h"
#include "inputs.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char s_seed_a[32] = {1, 2, 3, 4, 5, 6, 7, 8};
static const unsigned char s_seed_b[32] = {1, 2, 3, 4, 5, 6, 7, 9};

static void s_init(void)
{
    cr_assert_eq(cr_hash_global_init(), 0);
}

TestSuite(inputs, .init = s_init, .timeout = 30);

static uint64_t s_first(const unsigned char *seed, uint32_t c, uint32_t s, uint32_t p)
{
    cr_rng_t r;
    cr_rng_seed(&r, seed, c, s, p);
    return cr_rng_next(&r);
}

Test(inputs, rng_is_deterministic_per_tuple)
{
    cr_rng_t a, b;
    cr_rng_seed(&a, s_seed_a, 3, 1, 2);
    cr_rng_seed(&b, s_seed_a, 3, 1, 2);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(cr_rng_next(&a), cr_rng_next(&b));
    uint64_t base = s_first(s_seed_a, 3, 1, 2);
    /* Every coordinate and the seed change the stream. */
    cr_assert_neq(base, s_first(s_seed_a, 4, 1, 2));
    cr_assert_neq(base, s_first(s_seed_a, 3, 2, 2));
    cr_assert_neq(base, s_first(s_seed_a, 3, 1, 3));
    cr_assert_neq(base, s_first(s_seed_b, 3, 1, 2));
    /* The tuple is not just summed: (1,2) and (2,1) differ. */
    cr_assert_neq(s_first(s_seed_a, 1, 2, 0), s_first(s_seed_a, 2, 1, 0));
}

Test(inputs, fill_differs_between_seeds_and_sets)
{
    float x[256], y[256], z[256];
    cr_dist_t d = {CR_DIST_NORMAL, 0, 1};
    cr_rng_t r;
    cr_rng_seed(&r, s_seed_a, 0, 0, 0);
    cr_inputs_fill(x, CR_DT_F32, 256, &d, &r);
    cr_rng_seed(&r, s_seed_b, 0, 0, 0);
    cr_inputs_fill(y, CR_DT_F32, 256, &d, &r);
    cr_rng_seed(&r, s_seed_a, 0, 1, 0);
    cr_inputs_fill(z, CR_DT_F32, 256, &d, &r);
    int same_xy = 0, same_xz = 0;
    for (int i = 0; i < 256; i++) {
        same_xy += x[i] == y[i];
        same_xz += x[i] == z[i];
    }
    cr_assert_lt(same_xy, 3);
    cr_assert_lt(same_xz, 3);
}

Test(inputs, distributions_are_roughly_right)
{
    enum { N = 200000 };
    double *v = malloc(N * sizeof *v);
    cr_assert_not_null(v);
    cr_rng_t r;

    cr_dist_t nd = {CR_DIST_NORMAL, 2.0, 3.0};
    cr_rng_seed(&r, s_seed_a, 0, 0, 0);
    cr_inputs_fill(v, CR_DT_F64, N, &nd, &r);
    double sum = 0, ss = 0;
    int neg = 0;
    for (int i = 0; i < N; i++) {
        sum += v[i];
        neg += v[i] < 0;
    }
    double mean = sum / N;
    for (int i = 0; i < N; i++)
        ss += (v[i] - mean) * (v[i] - mean);
    cr_assert_float_eq(mean, 2.0, 0.05);
    cr_assert_float_eq(sqrt(ss / (N - 1)), 3.0, 0.05);
    /* P(N(2,3) < 0) = Phi(-2/3) = 0.2525 */
    cr_assert_float_eq((double)neg / N, 0.2525, 0.01);

    cr_dist_t ud = {CR_DIST_UNIFORM, -1.0, 3.0};
    cr_rng_seed(&r, s_seed_a, 0, 0, 1);
    cr_inputs_fill(v, CR_DT_F64, N, &ud, &r);
    sum = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(v[i] >= -1.0 && v[i] < 3.0, "uniform out of range: %g", v[i]);
        sum += v[i];
    }
    cr_assert_float_eq(sum / N, 1.0, 0.02);

    int32_t *iv = malloc(N * sizeof *iv);
    cr_dist_t id = {CR_DIST_INT, -3, 4};
    int hist[7] = {0};
    cr_rng_seed(&r, s_seed_a, 0, 0, 2);
    cr_inputs_fill(iv, CR_DT_I32, N, &id, &r);
    for (int i = 0; i < N; i++) {
        cr_assert(iv[i] >= -3 && iv[i] < 4, "int out of range: %d", iv[i]);
        hist[iv[i] + 3]++;
    }
    for (int k = 0; k < 7; k++)
        cr_assert_float_eq((double)hist[k] / N, 1.0 / 7, 0.01, "bucket %d", k);

    /* Integer dtypes clamp a wide normal into their range. */
    int8_t b[1000];
    cr_dist_t wide = {CR_DIST_NORMAL, 0, 1000};
    cr_rng_seed(&r, s_seed_a, 0, 0, 3);
    cr_inputs_fill(b, CR_DT_I8, 1000, &wide, &r);
    int lo = 0, hi = 0;
    for (int i = 0; i < 1000; i++) {
        lo += b[i] == INT8_MIN;
        hi += b[i] == INT8_MAX;
    }
    cr_assert(lo > 300 && hi > 300);

    /* Bools are about half true. */
    uint8_t bo[10000];
    cr_dist_t bn = {CR_DIST_NORMAL, 0, 1};
    cr_rng_seed(&r, s_seed_a, 0, 0, 4);
    cr_inputs_fill(bo, CR_DT_BOOL, 10000, &bn, &r);
    int t = 0;
    for (int i = 0; i < 10000; i++) {
        cr_assert(bo[i] <= 1);
        t += bo[i];
    }
    cr_assert(t > 4500 && t < 5500, "true count %d", t);
    free(iv);
    free(v);
}

Test(inputs, poison_and_count_every_dtype)
{
    unsigned char buf[100 * 8];
    for (int d = 0; d < CR_DT__COUNT; d++) {
        size_t es = cr_dtype_size((cr_dtype_t)d);
        cr_inputs_poison(buf, (cr_dtype_t)d, 100);
        int64_t first = 7;
        cr_assert_eq(cr_inputs_count_poison(buf, (cr_dtype_t)d, 100, &first), 100, "dtype %d", d);
        cr_assert_eq(first, 0);
        /* Write elements 0..9 and 50 with ordinary values. */
        for (int i = 0; i < 10; i++)
            cr_inputs_set(buf, (cr_dtype_t)d, (size_t)i, 1.0);
        cr_inputs_set(buf, (cr_dtype_t)d, 50, 0.0);
        cr_assert_eq(cr_inputs_count_poison(buf, (cr_dtype_t)d, 100, &first), 89, "dtype %d", d);
        cr_assert_eq(first, 10);
        if (cr_dtype_is_float((cr_dtype_t)d))
            cr_assert(isnan(cr_inputs_get(buf, (cr_dtype_t)d, 99)), "float poison is NaN (%d)",
                      d);
        (void)es;
    }
    uint32_t bits;
    float f;
    cr_inputs_poison(&f, CR_DT_F32, 1);
    memcpy(&bits, &f, 4);
    cr_assert_eq(bits, CR_POISON_F32);
}

static uint64_t s_cmp(const float *a, const float *r, size_t n, double atol, double rtol,
                      int64_t *first)
{
    double ma, mr;
    return cr_inputs_compare(a, r, CR_DT_F32, n, atol, rtol, &ma, &mr, first);
}

Test(inputs, compare_semantics)
{
    int64_t first;
    float r[4] = {1.0f, -2.0f, 100.0f, 0.0f};
    float a[4] = {1.0f, -2.0f, 100.0f, 0.0f};
    cr_assert_eq(s_cmp(a, r, 4, 0, 0, &first), 0);
    cr_assert_eq(first, -1);

    /* |a - r| <= atol + rtol*|r|: 100.5 vs 100 passes with rtol 1e-2, not 1e-3. */
    a[2] = 100.5f;
    cr_assert_eq(s_cmp(a, r, 4, 0, 1e-2, &first), 0);
    cr_assert_eq(s_cmp(a, r, 4, 0, 1e-3, &first), 1);
    cr_assert_eq(first, 2);
    /* atol covers a zero reference, rtol does not. */
    a[2] = 100.0f;
    a[3] = 1e-6f;
    cr_assert_eq(s_cmp(a, r, 4, 1e-5, 0, &first), 0);
    cr_assert_eq(s_cmp(a, r, 4, 0, 0.5, &first), 1);
    a[3] = 0;

    double ma, mr;
    a[1] = -2.2f;
    cr_assert_eq(cr_inputs_compare(a, r, CR_DT_F32, 4, 0, 0, &ma, &mr, &first), 1);
    cr_assert_float_eq(ma, 0.2, 1e-6);
    cr_assert_float_eq(mr, 0.1, 1e-6);
    a[1] = -2.0f;

    /* NaN or Inf where the reference is finite fails, even with huge tolerances. */
    a[0] = NAN;
    cr_assert_eq(s_cmp(a, r, 4, 1e30, 1e30, &first), 1);
    cr_assert_eq(first, 0);
    a[0] = INFINITY;
    cr_assert_eq(s_cmp(a, r, 4, 1e30, 1e30, &first), 1);
    a[0] = 1.0f;

    /* Where the reference is NaN the candidate must be NaN. */
    r[1] = NAN;
    cr_assert_eq(s_cmp(a, r, 4, 1e30, 1e30, &first), 1);
    a[1] = NAN;
    cr_assert_eq(s_cmp(a, r, 4, 0, 0, &first), 0);
    /* Where it is Inf the candidate must be the same Inf. */
    r[2] = INFINITY;
    a[2] = -INFINITY;
    cr_assert_eq(s_cmp(a, r, 4, 1e30, 1e30, &first), 1);
    a[2] = INFINITY;
    cr_assert_eq(s_cmp(a, r, 4, 0, 0, &first), 0);

    /* Poisoned (unwritten) elements never compare equal to a number. */
    float p[4];
    cr_inputs_poison(p, CR_DT_F32, 4);
    float rr[4] = {0, 1, 2, 3};
    cr_assert_eq(s_cmp(p, rr, 4, 1e30, 1e30, &first), 4);

    /* Integers: exact with tiny tolerances. */
    int32_t ia[3] = {1, 2, 3}, ir[3] = {1, 2, 4};
    cr_assert_eq(cr_inputs_compare(ia, ir, CR_DT_I32, 3, 1e-5, 1e-5, &ma, &mr, &first), 1);
    cr_assert_eq(first, 2);
}

/* NaN stays NaN, and every other 16-bit pattern survives get -> set. */
static void s_round_trip_16(cr_dtype_t d)
{
    uint16_t h;
    cr_inputs_set(&h, d, 0, NAN);
    cr_assert(isnan(cr_inputs_get(&h, d, 0)));
    for (uint32_t b = 0; b < 0x10000; b++) {
        uint16_t in = (uint16_t)b, out;
        double v = cr_inputs_get(&in, d, 0);
        if (isnan(v))
            continue;
        cr_inputs_set(&out, d, 0, v);
        cr_assert_eq(out, in, "%s %#06x -> %a -> %#06x", cr_dtype_name(d), in, v, out);
    }
}

Test(inputs, fp16_known_values_and_round_trip)
{
    uint16_t h;
    struct {
        double v;
        uint16_t bits;
    } known[] = {
        {1.0, 0x3c00},   {-2.0, 0xc000},        {65504.0, 0x7bff},    {65520.0, 0x7c00},
        {0x1p-24, 0x0001}, {0x1p-25, 0x0000},   {0x1.8p-25, 0x0001},  {0x1p-14, 0x0400},
        {1.0 + 0x1p-11, 0x3c00}, /* tie: rounds to even (down) */
        {1.0 + 3 * 0x1p-11, 0x3c02}, /* tie: rounds to even (up) */
        {INFINITY, 0x7c00}, {-INFINITY, 0xfc00}, {0.1, 0x2e66},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        cr_inputs_set(&h, CR_DT_F16, 0, known[i].v);
        cr_assert_eq(h, known[i].bits, "%a -> %#06x, want %#06x", known[i].v, h, known[i].bits);
    }
    s_round_trip_16(CR_DT_F16);
}

Test(inputs, bf16_known_values_and_round_trip)
{
    uint16_t h;
    cr_inputs_set(&h, CR_DT_BF16, 0, 1.0);
    cr_assert_eq(h, 0x3f80);
    cr_inputs_set(&h, CR_DT_BF16, 0, -3.0);
    cr_assert_eq(h, 0xc040);
    cr_inputs_set(&h, CR_DT_BF16, 0, 1.0 + 0x1p-8); /* tie: to even */
    cr_assert_eq(h, 0x3f80);
    s_round_trip_16(CR_DT_BF16);
    /* Its poison is a NaN too. */
    cr_inputs_poison(&h, CR_DT_BF16, 1);
    cr_assert(isnan(cr_inputs_get(&h, CR_DT_BF16, 0)));
}

/* ---------------------------------------------------------------- stats */

TestSuite(stats, .timeout = 30);

Test(stats, summary_of_known_data)
{
    double x[] = {5, 1, 4, 2, 3, 100}; /* sorted: 1 2 3 4 5 100 */
    cr_stats_t s;
    cr_assert_eq(cr_stats_compute(x, 6, &s), 0);
    cr_assert_eq(x[0], 5, "input left unsorted");
    cr_assert_eq(s.n, 6);
    cr_assert_float_eq(s.median, 3.5, 1e-12);
    cr_assert_float_eq(s.mean, 115.0 / 6, 1e-12);
    cr_assert_float_eq(s.min, 1, 1e-12);
    cr_assert_float_eq(s.max, 100, 1e-12);
    /* type-7 quartiles: h = 0.25*5 = 1.25 -> 2.25; h = 3.75 -> 4.75 */
    cr_assert_float_eq(s.q1, 2.25, 1e-12);
    cr_assert_float_eq(s.q3, 4.75, 1e-12);
    cr_assert_float_eq(s.iqr, 2.5, 1e-12);
    double ss = 0;
    for (int i = 0; i < 6; i++)
        ss += (x[i] - s.mean) * (x[i] - s.mean);
    cr_assert_float_eq(s.stddev, sqrt(ss / 5), 1e-9);
    cr_assert_float_eq(s.rse, s.stddev / sqrt(6) / s.mean, 1e-12);
    cr_assert(s.med_lo <= s.median && s.median <= s.med_hi);

    double one = 7;
    cr_assert_eq(cr_stats_compute(&one, 1, &s), 0);
    cr_assert_float_eq(s.median, 7, 0);
    cr_assert_float_eq(s.stddev, 0, 0);
    cr_assert_float_eq(s.rse, 0, 0);
    cr_assert_eq(cr_stats_compute(x, 0, &s), -EINVAL);
}

Test(stats, median_ci_ranks)
{
    size_t lo, hi;
    /* n = 100, z = 1.96: ranks 40 and 61 (1-based) -> 39, 60. */
    cr_stats_median_ci_ranks(100, CR_STATS_Z95, &lo, &hi);
    cr_assert_eq(lo, 39);
    cr_assert_eq(hi, 60);
    /* Tiny n: the whole range. */
    cr_stats_median_ci_ranks(3, CR_STATS_Z95, &lo, &hi);
    cr_assert_eq(lo, 0);
    cr_assert_eq(hi, 2);
    cr_stats_median_ci_ranks(1, CR_STATS_Z95, &lo, &hi);
    cr_assert_eq(lo, 0);
    cr_assert_eq(hi, 0);
}

Test(stats, median_ci_covers_about_95_percent)
{
    /* Samples from Uniform(0,1), true median 0.5: the interval should cover
     * it in about 95% of trials (the binomial rounding makes it >= 95%). */
    cr_rng_t r;
    cr_rng_seed(&r, s_seed_a, 9, 9, 9);
    int cover = 0, trials = 2000;
    double x[51];
    for (int t = 0; t < trials; t++) {
        for (int i = 0; i < 51; i++)
            x[i] = cr_rng_uniform(&r);
        cr_stats_t s;
        cr_stats_compute(x, 51, &s);
        cover += s.med_lo <= 0.5 && 0.5 <= s.med_hi;
    }
    double frac = (double)cover / trials;
    cr_assert(frac > 0.93 && frac < 0.995, "coverage %.3f", frac);
}

Test(stats, online_rse_matches_batch)
{
    double x[] = {10, 11, 9, 10.5, 9.5, 10.2, 9.8};
    cr_stats_online_t o = {0};
    cr_assert(isinf(cr_stats_online_rse(&o)));
    for (int i = 0; i < 7; i++)
        cr_stats_online_push(&o, x[i]);
    cr_stats_t s;
    cr_stats_compute(x, 7, &s);
    cr_assert_float_eq(o.mean, s.mean, 1e-12);
    cr_assert_float_eq(cr_stats_online_rse(&o), s.rse, 1e-12);
}

Test(stats, speedup_interval)
{
    double a[21], b[21];
    for (int i = 0; i < 21; i++) {
        a[i] = 10 + (i % 7) * 0.1; /* ~10.3 */
        b[i] = 20 + (i % 5) * 0.1; /* ~20.2 */
    }
    cr_stats_t sa, sb;
    cr_stats_compute(a, 21, &sa);
    cr_stats_compute(b, 21, &sb);
    double sp, lo, hi;
    cr_stats_speedup(&sa, &sb, &sp, &lo, &hi);
    cr_assert_float_eq(sp, sb.median / sa.median, 1e-12);
    cr_assert(lo <= sp && sp <= hi && lo > 1.8 && hi < 2.2, "%g [%g, %g]", sp, lo, hi);
    cr_stats_t empty = {0};
    cr_stats_speedup(&empty, &sb, &sp, &lo, &hi);
    cr_assert_eq(sp, 0);
}

/* ---------------------------------------------------------------- stalls */

/* One run's samples: start, time, adjustment, group (0 candidate, 1 reference). */
typedef struct {
    double st[4000], du[4000], adj[4000];
    unsigned char grp[4000];
    size_t n;
} s_stall_run_t;

static double s_unit(uint64_t *s) /* uniform in (0, 1) */
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
}

/* Samples as the CUDA judge takes them on a GPU that stalls for d us every
 * T us (phase ph): candidate and reference alternate, ~140 us apart with a
 * few us of jitter; each takes its clean time w[group], plus d per stall
 * inside it, plus noise of sd 0.05 us. */
static void s_stall_run(s_stall_run_t *r, size_t pairs, const double w[2], double T, double d,
                        double ph, uint64_t seed)
{
    double t = 0;
    r->n = 0;
    for (size_t i = 0; i < 2 * pairs; i++) {
        int g = (int)(i & 1);
        double k = floor((t + w[g] - ph) / T) - floor((t - ph) / T);
        double u1 = s_unit(&seed), u2 = s_unit(&seed);
        double noise = 0.05 * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        r->st[r->n] = t;
        r->du[r->n] = w[g] + d * k + noise;
        r->grp[r->n++] = (unsigned char)g;
        t += 140 + 10 * s_unit(&seed);
    }
}

/* s_stall_run with the H200's period, then cr_stall_fit over 20-2000 us. */
static void s_stall_fit_run(s_stall_run_t *r, size_t pairs, double w0, double w1, double d,
                            double ph, uint64_t seed, cr_stall_fit_t *f)
{
    const double w[2] = {w0, w1};
    s_stall_run(r, pairs, w, 100.148, d, ph, seed);
    cr_assert_eq(cr_stall_fit(r->st, r->du, r->grp, r->n, 20, 2000, f, r->adj), 0);
}

static double s_group_median(const s_stall_run_t *r, int g, int adjusted)
{
    double x[4000];
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->grp[i] == g)
            x[k++] = r->du[i] - (adjusted ? r->adj[i] : 0);
    cr_stats_sort(x, k);
    return cr_stats_quantile_sorted(x, k, 0.5);
}

Test(stats, stall_fit_finds_the_period_and_steadies_the_median)
{
    /* ~50 us, half a period: a stall in half the samples, the median's worst case. */
    static s_stall_run_t r;
    const double w0 = 50.07, T = 100.148, d = 1.4;
    double lo = 1e9, hi = 0, rlo = 1e9, rhi = 0;
    for (int run = 0; run < 6; run++) {
        cr_stall_fit_t f;
        s_stall_fit_run(&r, 1000, w0, 64.4, d, 13.7 * run, 1000 + (uint64_t)run, &f);
        cr_assert(f.found, "run %d: period %.4f power %.0f r %.2f", run, f.period_us, f.power,
                  f.r);
        cr_assert(fabs(f.period_us - T) < 0.01, "run %d: period %.4f", run, f.period_us);
        cr_assert(fabs(f.d_us[0] - d) < 0.1 && fabs(f.d_us[1] - d) < 0.1, "d %.3f %.3f",
                  f.d_us[0], f.d_us[1]);
        /* Each sample's count goes to its expectation w/T: the median sits
         * at the clean time plus the average stall cost. */
        double m = s_group_median(&r, 0, 1), raw = s_group_median(&r, 0, 0);
        cr_assert(fabs(m - (w0 + d * w0 / T)) < 0.05, "run %d: median %.3f", run, m);
        lo = fmin(lo, m);
        hi = fmax(hi, m);
        rlo = fmin(rlo, raw);
        rhi = fmax(rhi, raw);
    }
    cr_assert(hi / lo - 1 < 0.001, "adjusted medians spread %.3f%%", (hi / lo - 1) * 100);
    cr_assert(rhi / rlo - 1 > 0.005, "the raw medians should jump between the modes (%.3f%%)",
              (rhi / rlo - 1) * 100);
}

Test(stats, stall_fit_takes_the_fundamental_for_a_short_kernel)
{
    /* ~8 us: a stall in ~8% of samples; its harmonics are as strong. */
    static s_stall_run_t r;
    cr_stall_fit_t f;
    s_stall_fit_run(&r, 1500, 7.5, 8.1, 0.8, 42.0, 7, &f);
    cr_assert(f.found && fabs(f.period_us - 100.148) < 0.01, "period %.4f (found %d)",
              f.period_us, f.found);
}

Test(stats, stall_fit_leaves_plain_noise_alone)
{
    static s_stall_run_t r;
    cr_stall_fit_t f;
    s_stall_fit_run(&r, 1000, 51.6, 64.4, 0, 0, 99, &f);
    cr_assert_not(f.found, "found a period %.4f in noise (power %.0f, r %.2f)", f.period_us,
                  f.power, f.r);
    for (size_t i = 0; i < r.n; i++)
        cr_assert_eq(r.adj[i], 0);
}

Test(stats, stall_fit_needs_samples_and_a_band)
{
    static s_stall_run_t r;
    cr_stall_fit_t f;
    s_stall_fit_run(&r, 20, 51.6, 64.4, 1.4, 0, 5, &f); /* 40 samples: too few */
    cr_assert_not(f.found);
    cr_assert_eq(cr_stall_fit(r.st, r.du, r.grp, r.n, 0, 2000, &f, r.adj), -EINVAL);
    cr_assert_eq(cr_stall_fit(r.st, r.du, r.grp, r.n, 200, 100, &f, r.adj), -EINVAL);
}

/* cr_level_offset (docs/cuda-judge.md §11): the reference's distance from its
 * anchor, only where it can be a process level; from the warm-up (cached
 * policy) only for short anchors and enough samples. */
Test(stats, level_offset_only_for_a_process_level)
{
    const cr_level_from_t T = CR_LEVEL_TIMED, W = CR_LEVEL_WARMUP;
    cr_level_why_t why;
    cr_assert_float_eq(cr_level_offset(8.10, 500, 8.00, T, &why), 0.10, 1e-12);
    cr_assert_eq(why, CR_LEVEL_APPLIES);
    cr_assert_float_eq(cr_level_offset(65.0, 500, 65.2, T, &why), -0.2, 1e-9);
    cr_assert_eq(why, CR_LEVEL_APPLIES);
    cr_assert_eq(cr_level_offset(8.0, 500, 8.0, T, &why), 0); /* at the anchor: nothing off */
    cr_assert_eq(why, CR_LEVEL_APPLIES);
    cr_assert_eq(cr_level_offset(8.5, 500, 8.0, T, &why), 0); /* 0.5 us: the reference changed */
    cr_assert_eq(why, CR_LEVEL_FAR);
    cr_assert_eq(cr_level_offset(1375.3, 500, 1375.2, T, &why), 0); /* its own spread */
    cr_assert_eq(why, CR_LEVEL_LONG);
    cr_assert_eq(cr_level_offset(0, 500, 8.0, T, &why), 0);
    cr_assert_eq(why, CR_LEVEL_NO_MEDIAN);
    cr_assert_eq(cr_level_offset(8.0, 500, NAN, T, &why), 0);
    cr_assert_eq(why, CR_LEVEL_NO_MEDIAN);
    cr_assert_eq(cr_level_offset(8.0, 500, -8.0, T, &why), 0);
    cr_assert_eq(why, CR_LEVEL_NO_MEDIAN);
    cr_assert_eq(cr_level_offset(8.1, 0, 8.0, T, &why), 0); /* no sample */
    cr_assert_eq(why, CR_LEVEL_NO_MEDIAN);
    /* from the warm-up */
    cr_assert_float_eq(cr_level_offset(12.2, CR_LEVEL_WARMUP_MIN_SAMPLES, 12.1, W, &why), 0.1,
                       1e-9);
    cr_assert_eq(why, CR_LEVEL_APPLIES);
    cr_assert_eq(cr_level_offset(12.2, CR_LEVEL_WARMUP_MIN_SAMPLES - 1, 12.1, W, &why), 0);
    cr_assert_eq(why, CR_LEVEL_FEW);
    cr_assert_eq(cr_level_offset(66.1, 100, 66.0, W, &why), 0, "interleaved would take it");
    cr_assert_eq(why, CR_LEVEL_LONG);
    cr_assert_float_eq(cr_level_offset(66.1, 100, 66.0, T, &why), 0.1, 1e-9);
    cr_assert_eq(cr_level_offset(12.6, 100, 12.1, W, &why), 0);
    cr_assert_eq(why, CR_LEVEL_FAR);
    /* how long a cached warm-up goes on for it: only where it could apply */
    cr_assert_eq(cr_level_warmup_samples(12.1), CR_LEVEL_WARMUP_SAMPLES);
    cr_assert_eq(cr_level_warmup_samples(CR_LEVEL_WARMUP_REF_MAX_US), CR_LEVEL_WARMUP_SAMPLES);
    cr_assert_eq(cr_level_warmup_samples(66.0), 0, "the warm-up would not take it");
    cr_assert_eq(cr_level_warmup_samples(0), 0);
    cr_assert_eq(cr_level_warmup_samples(NAN), 0);
}
