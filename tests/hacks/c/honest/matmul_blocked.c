/* Honest: a blocked matmul. Panels of b (KC rows x NC columns) are packed
 * into a 64-byte-aligned malloc'd scratch, 8 columns at a time, so the inner
 * kernel streams them contiguously with aligned loads; the kernel keeps a
 * 4 x 8 block of c in eight SSE registers across the KC loop (four rows,
 * each broadcast from a, times two vectors of the packed panel). Edge rows
 * and columns go through a scalar path. restrict everywhere. */
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#define KC 256 /* panel rows: 256 x 8 floats = 8 KiB per strip, well inside L1 */
#define NC 256 /* panel columns: a 256 x 256 panel is 256 KiB, about L2 */
#define MR 4
#define NR 8

static void kernel(const float *restrict a, int lda, const float *restrict bp, float *restrict c,
                   int ldc, int kc)
{
    __m128 c00 = _mm_loadu_ps(c), c01 = _mm_loadu_ps(c + 4);
    __m128 c10 = _mm_loadu_ps(c + ldc), c11 = _mm_loadu_ps(c + ldc + 4);
    __m128 c20 = _mm_loadu_ps(c + 2 * ldc), c21 = _mm_loadu_ps(c + 2 * ldc + 4);
    __m128 c30 = _mm_loadu_ps(c + 3 * ldc), c31 = _mm_loadu_ps(c + 3 * ldc + 4);
    for (int k = 0; k < kc; k++) {
        __m128 b0 = _mm_load_ps(bp + k * NR), b1 = _mm_load_ps(bp + k * NR + 4);
        __m128 a0 = _mm_set1_ps(a[k]), a1 = _mm_set1_ps(a[lda + k]);
        c00 = _mm_add_ps(c00, _mm_mul_ps(a0, b0));
        c01 = _mm_add_ps(c01, _mm_mul_ps(a0, b1));
        c10 = _mm_add_ps(c10, _mm_mul_ps(a1, b0));
        c11 = _mm_add_ps(c11, _mm_mul_ps(a1, b1));
        __m128 a2 = _mm_set1_ps(a[2 * lda + k]), a3 = _mm_set1_ps(a[3 * lda + k]);
        c20 = _mm_add_ps(c20, _mm_mul_ps(a2, b0));
        c21 = _mm_add_ps(c21, _mm_mul_ps(a2, b1));
        c30 = _mm_add_ps(c30, _mm_mul_ps(a3, b0));
        c31 = _mm_add_ps(c31, _mm_mul_ps(a3, b1));
    }
    _mm_storeu_ps(c, c00), _mm_storeu_ps(c + 4, c01);
    _mm_storeu_ps(c + ldc, c10), _mm_storeu_ps(c + ldc + 4, c11);
    _mm_storeu_ps(c + 2 * ldc, c20), _mm_storeu_ps(c + 2 * ldc + 4, c21);
    _mm_storeu_ps(c + 3 * ldc, c30), _mm_storeu_ps(c + 3 * ldc + 4, c31);
}

void solve(const float *restrict a, const float *restrict b, float *restrict c, int M, int N,
           int K)
{
    memset(c, 0, (size_t)M * N * sizeof *c);
    size_t kcmax = K < KC ? (size_t)K : KC, ncmax = N < NC ? (size_t)N : NC;
    float *bp = aligned_alloc(64, (kcmax * ncmax * sizeof *bp + 63) / 64 * 64);
    if (!bp)
        return;
    for (int k0 = 0; k0 < K; k0 += KC) {
        int kc = K - k0 < KC ? K - k0 : KC;
        for (int j0 = 0; j0 < N; j0 += NC) {
            int nc = N - j0 < NC ? N - j0 : NC, nfull = nc / NR * NR;
            /* pack: each 8-column strip as kc rows of 8 contiguous floats */
            for (int s = 0; s < nfull; s += NR)
                for (int k = 0; k < kc; k++)
                    memcpy(bp + s * kc + k * NR, b + (long)(k0 + k) * N + j0 + s, NR * 4);
            int i = 0;
            for (; i + MR <= M; i += MR)
                for (int s = 0; s < nfull; s += NR)
                    kernel(a + (long)i * K + k0, K, bp + s * kc, c + (long)i * N + j0 + s, N, kc);
            /* edges: rows below the last full MR block, columns right of the last strip */
            for (int r = 0; r < M; r++) {
                for (int j = r < i ? nfull : 0; j < nc; j++) {
                    float s = 0.0f;
                    for (int k = 0; k < kc; k++)
                        s += a[(long)r * K + k0 + k] * b[(long)(k0 + k) * N + j0 + j];
                    c[(long)r * N + j0 + j] += s;
                }
            }
        }
    }
    free(bp);
}
