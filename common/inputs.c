/* inputs.c — see inputs.h.
 *
 * Why each piece is as it is:
 * - BLAKE2b keyed by the secret seed turns (case, set, param) into a 256-bit
 *   xoshiro state: streams are independent, reproducible inside one
 *   evaluation, and unpredictable without the seed (docs/hacks.md #5).
 * - 16-bit floats are converted by hand (round to nearest even) so the judge
 *   does not depend on compiler support for _Float16 / __bf16.
 * - Poison is a NaN with a payload for floats, so an unwritten element both
 *   counts as unwritten and fails any numeric comparison. */
#include "inputs.h"

#include <math.h>
#include <sodium.h>
#include <string.h>

/* Domain tag: a future generator version gets a different tag, so old and
 * new streams never coincide by accident. */
static const char s_domain[] = "crucible-inputs-v1";

static uint64_t s_load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void s_store_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

void cr_rng_seed(cr_rng_t *rng, const unsigned char seed[32], uint32_t case_idx, uint32_t set_idx,
                 uint32_t param_idx)
{
    unsigned char msg[sizeof s_domain + 12];
    unsigned char out[32];
    memcpy(msg, s_domain, sizeof s_domain);
    s_store_le32(msg + sizeof s_domain, case_idx);
    s_store_le32(msg + sizeof s_domain + 4, set_idx);
    s_store_le32(msg + sizeof s_domain + 8, param_idx);
    crypto_generichash(out, sizeof out, msg, sizeof msg, seed, 32);
    for (int i = 0; i < 4; i++)
        rng->s[i] = s_load_le64(out + 8 * i);
    /* xoshiro's one forbidden state; BLAKE2b makes it a 2^-256 event. */
    if (!(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]))
        rng->s[0] = 1;
}

static inline uint64_t s_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** 1.0 (Blackman & Vigna). */
uint64_t cr_rng_next(cr_rng_t *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = s_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s_rotl(s[3], 45);
    return result;
}

double cr_rng_uniform(cr_rng_t *rng)
{
    /* Top 53 bits: every double in [0,1) on the 2^-53 grid, equally likely. */
    return (double)(cr_rng_next(rng) >> 11) * 0x1.0p-53;
}

/* Marsaglia's polar form of Box–Muller: two independent N(0,1) from one
 * accepted pair of uniforms, no trigonometry (about 3x faster to fill with). */
static void s_normal_pair(cr_rng_t *rng, double *z0, double *z1)
{
    double u, v, s;
    do {
        u = 2.0 * cr_rng_uniform(rng) - 1.0;
        v = 2.0 * cr_rng_uniform(rng) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double m = sqrt(-2.0 * log(s) / s);
    *z0 = u * m;
    *z1 = v * m;
}

double cr_rng_normal(cr_rng_t *rng)
{
    /* cr_rng_t has no room to keep the pair's second value: it is dropped. */
    double z0, z1;
    s_normal_pair(rng, &z0, &z1);
    return z0;
}

/* ---- 16-bit floats ---- */

static uint32_t s_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float s_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE binary16 from float, round to nearest even, subnormals and Inf/NaN kept. */
static uint16_t s_f32_to_f16(float f)
{
    uint32_t x = s_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) /* Inf or NaN (NaN stays quiet) */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) /* overflow */
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal half, or zero */
        if (e < -10)
            return sign;
        man |= 0x800000u; /* implicit bit */
        int shift = 14 - e;
        uint32_t h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* may carry into the exponent, up to Inf: that is correct rounding */
    return (uint16_t)(sign | h);
}

static float s_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f)
        return s_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return s_bits_f32(sign);
        /* subnormal: value = man * 2^-24 */
        float v = (float)man * 0x1.0p-24f;
        return sign ? -v : v;
    }
    return s_bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

/* bfloat16 is the top half of a float; round to nearest even, NaN kept quiet. */
static uint16_t s_f32_to_bf16(float f)
{
    uint32_t x = s_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float s_bf16_to_f32(uint16_t h)
{
    return s_bits_f32((uint32_t)h << 16);
}

/* ---- fill ---- */

static double s_draw(const cr_dist_t *dist, cr_rng_t *rng)
{
    switch (dist->kind) {
    case CR_DIST_UNIFORM:
        return dist->a + (dist->b - dist->a) * cr_rng_uniform(rng);
    case CR_DIST_INT: {
        double lo = ceil(dist->a), hi = ceil(dist->b);
        if (!(hi > lo))
            return lo;
        /* span < 2^53 for any range a task can name; modulo bias is below 2^-11 */
        uint64_t span = (uint64_t)(hi - lo);
        return lo + (double)(cr_rng_next(rng) % span);
    }
    case CR_DIST_NORMAL:
    default:
        return dist->a + dist->b * cr_rng_normal(rng);
    }
}

/* Rounds to the nearest integer and clamps into [lo, hi]. */
static double s_clampi(double v, double lo, double hi)
{
    if (isnan(v))
        return 0;
    v = nearbyint(v);
    return v < lo ? lo : v > hi ? hi : v;
}

void cr_inputs_set(void *buf, cr_dtype_t d, size_t i, double v)
{
    switch (d) {
    case CR_DT_F32: ((float *)buf)[i] = (float)v; break;
    case CR_DT_F64: ((double *)buf)[i] = v; break;
    case CR_DT_F16: ((uint16_t *)buf)[i] = s_f32_to_f16((float)v); break;
    case CR_DT_BF16: ((uint16_t *)buf)[i] = s_f32_to_bf16((float)v); break;
    case CR_DT_I8: ((int8_t *)buf)[i] = (int8_t)s_clampi(v, INT8_MIN, INT8_MAX); break;
    case CR_DT_U8: ((uint8_t *)buf)[i] = (uint8_t)s_clampi(v, 0, UINT8_MAX); break;
    case CR_DT_I16: ((int16_t *)buf)[i] = (int16_t)s_clampi(v, INT16_MIN, INT16_MAX); break;
    case CR_DT_I32: ((int32_t *)buf)[i] = (int32_t)s_clampi(v, INT32_MIN, INT32_MAX); break;
    case CR_DT_U32: ((uint32_t *)buf)[i] = (uint32_t)s_clampi(v, 0, UINT32_MAX); break;
    case CR_DT_I64:
        /* 2^63 is not representable as int64: clamp just inside it. */
        ((int64_t *)buf)[i] = (int64_t)s_clampi(v, -0x1p63, 0x1p63 - 1024);
        break;
    case CR_DT_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    default: break;
    }
}

void cr_inputs_fill(void *buf, cr_dtype_t d, size_t n, const cr_dist_t *dist, cr_rng_t *rng)
{
    /* Bools are 50/50 around the distribution's centre, or 0/1 from an int draw. */
    double centre = dist->kind == CR_DIST_NORMAL ? dist->a : 0.5 * (dist->a + dist->b);
    double z1 = 0;
    for (size_t i = 0; i < n; i++) {
        double v;
        if (dist->kind == CR_DIST_NORMAL) { /* both values of each pair are used */
            double z0;
            if (i % 2 == 0)
                s_normal_pair(rng, &z0, &z1);
            else
                z0 = z1;
            v = dist->a + dist->b * z0;
        } else {
            v = s_draw(dist, rng);
        }
        if (d == CR_DT_BOOL && dist->kind != CR_DIST_INT)
            v = v >= centre;
        cr_inputs_set(buf, d, i, v);
    }
}

/* ---- poison ---- */

void cr_inputs_poison(void *buf, cr_dtype_t d, size_t n)
{
    switch (d) {
    case CR_DT_F32: {
        uint32_t p = CR_POISON_F32;
        for (size_t i = 0; i < n; i++)
            memcpy((char *)buf + 4 * i, &p, 4);
        break;
    }
    case CR_DT_F64: {
        uint64_t p = CR_POISON_F64;
        for (size_t i = 0; i < n; i++)
            memcpy((char *)buf + 8 * i, &p, 8);
        break;
    }
    case CR_DT_F16:
    case CR_DT_BF16: {
        uint16_t p = d == CR_DT_F16 ? CR_POISON_F16 : CR_POISON_BF16;
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)buf)[i] = p;
        break;
    }
    default:
        memset(buf, 0xA5, n * cr_dtype_size(d));
        break;
    }
}

size_t cr_inputs_count_poison(const void *buf, cr_dtype_t d, size_t n, int64_t *first)
{
    size_t es = cr_dtype_size(d), count = 0;
    unsigned char pat[8];
    switch (d) {
    case CR_DT_F32: { uint32_t p = CR_POISON_F32; memcpy(pat, &p, 4); break; }
    case CR_DT_F64: { uint64_t p = CR_POISON_F64; memcpy(pat, &p, 8); break; }
    case CR_DT_F16: { uint16_t p = CR_POISON_F16; memcpy(pat, &p, 2); break; }
    case CR_DT_BF16: { uint16_t p = CR_POISON_BF16; memcpy(pat, &p, 2); break; }
    default: memset(pat, 0xA5, sizeof pat); break;
    }
    if (first)
        *first = -1;
    const unsigned char *b = buf;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(b + i * es, pat, es) == 0) {
            if (first && *first < 0)
                *first = (int64_t)i;
            count++;
        }
    }
    return count;
}

/* ---- read back and compare ---- */

double cr_inputs_get(const void *buf, cr_dtype_t d, size_t i)
{
    switch (d) {
    case CR_DT_F32: return ((const float *)buf)[i];
    case CR_DT_F64: return ((const double *)buf)[i];
    case CR_DT_F16: return s_f16_to_f32(((const uint16_t *)buf)[i]);
    case CR_DT_BF16: return s_bf16_to_f32(((const uint16_t *)buf)[i]);
    case CR_DT_I8: return ((const int8_t *)buf)[i];
    case CR_DT_U8: return ((const uint8_t *)buf)[i];
    case CR_DT_I16: return ((const int16_t *)buf)[i];
    case CR_DT_I32: return ((const int32_t *)buf)[i];
    case CR_DT_U32: return ((const uint32_t *)buf)[i];
    case CR_DT_I64: return (double)((const int64_t *)buf)[i];
    case CR_DT_BOOL: return ((const uint8_t *)buf)[i] != 0;
    default: return NAN;
    }
}

uint64_t cr_inputs_compare(const void *a, const void *r, cr_dtype_t d, size_t n, double atol,
                           double rtol, double *max_abs, double *max_rel, int64_t *first_bad)
{
    uint64_t bad = 0;
    double mabs = 0, mrel = 0;
    int64_t first = -1;
    for (size_t i = 0; i < n; i++) {
        double x = cr_inputs_get(a, d, i), y = cr_inputs_get(r, d, i);
        int ok;
        if (isnan(y)) {
            ok = isnan(x);
        } else if (isinf(y)) {
            ok = x == y; /* same infinity, same sign */
        } else if (!isfinite(x)) {
            ok = 0;
        } else {
            /* Errors are only meaningful between finite numbers; a NaN/Inf
             * mismatch is counted but kept out of the maxima. */
            double err = fabs(x - y);
            if (err > mabs)
                mabs = err;
            if (y != 0 && err / fabs(y) > mrel)
                mrel = err / fabs(y);
            ok = err <= atol + rtol * fabs(y);
        }
        if (!ok) {
            if (first < 0)
                first = (int64_t)i;
            bad++;
        }
    }
    if (max_abs)
        *max_abs = mabs;
    if (max_rel)
        *max_rel = mrel;
    if (first_bad)
        *first_bad = first;
    return bad;
}
