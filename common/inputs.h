/* inputs.h — deterministic input generation from a secret seed.
 *
 * The runner draws every input from (seed, case, set, param) so each draw is
 * reproducible inside one evaluation and unpredictable outside it. The
 * generator is xoshiro256** seeded through BLAKE2b of the tuple. */
#ifndef CR_INPUTS_H
#define CR_INPUTS_H

#include "task.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t s[4]; /* xoshiro256** state */
} cr_rng_t;

/* Seeds rng from the 32-byte secret and the stream coordinates. */
void cr_rng_seed(cr_rng_t *rng, const unsigned char seed[32], uint32_t case_idx, uint32_t set_idx,
                 uint32_t param_idx);

uint64_t cr_rng_next(cr_rng_t *rng);
double cr_rng_uniform(cr_rng_t *rng);  /* [0, 1) */
double cr_rng_normal(cr_rng_t *rng);   /* N(0, 1) */

/* Fills n elements of dtype d at buf from dist. Floats are rounded to the
 * dtype (fp16/bf16 stored as their 16-bit patterns). */
void cr_inputs_fill(void *buf, cr_dtype_t d, size_t n, const cr_dist_t *dist, cr_rng_t *rng);

/* Poisons n elements: floats get a signalling-free NaN with the payload
 * CR_POISON_F32/F64/F16/BF16, integers the byte 0xA5 pattern.
 * cr_inputs_count_poison counts elements still holding it. For 8-bit types
 * the pattern is also an ordinary value: a caller checking "all written"
 * should not count elements where the reference holds the pattern too. */
void cr_inputs_poison(void *buf, cr_dtype_t d, size_t n);
size_t cr_inputs_count_poison(const void *buf, cr_dtype_t d, size_t n, int64_t *first);

#define CR_POISON_F32 0x7fc0deadu
#define CR_POISON_F64 0x7ff8dead0000deadull
#define CR_POISON_F16 0x7e5au  /* quiet NaN in binary16 */
#define CR_POISON_BF16 0x7fdau /* quiet NaN in bfloat16 (0x7e5a would be a finite 7e37) */

/* Converts element i of buf to double (for comparison and reporting). */
double cr_inputs_get(const void *buf, cr_dtype_t d, size_t i);

/* Stores v as element i of buf: rounded to the dtype (nearest even for
 * 16-bit floats), integers rounded to nearest and clamped to their range,
 * bools as v != 0. The inverse of cr_inputs_get. */
void cr_inputs_set(void *buf, cr_dtype_t d, size_t i, double v);

/* allclose over n elements: |a - r| <= atol + rtol*|r|; NaN/Inf in a where r
 * is finite fails; where r is NaN, a must be NaN. Reports max abs/rel error,
 * mismatch count and the first bad index (-1 when none). Returns mismatches. */
uint64_t cr_inputs_compare(const void *a, const void *r, cr_dtype_t d, size_t n, double atol,
                           double rtol, double *max_abs, double *max_rel, int64_t *first_bad);

#endif
