/* Honest: in place on the inout y. Scalar steps until y is 16-byte aligned,
 * then aligned SSE loads and stores on y (x aligned too when it shares y's
 * offset, which the judge's 64-byte aligned buffers guarantee), two vectors
 * per iteration, scalar tail. */
#include <stdint.h>
#include <xmmintrin.h>

void solve(int n, float alpha, const float *restrict x, float *restrict y)
{
    int i = 0;
    for (; i < n && (uintptr_t)(y + i) % 16; i++)
        y[i] = alpha * x[i] + y[i];
    __m128 va = _mm_set1_ps(alpha);
    if ((uintptr_t)(x + i) % 16 == 0) {
        for (; i + 8 <= n; i += 8) {
            __m128 y0 = _mm_add_ps(_mm_mul_ps(va, _mm_load_ps(x + i)), _mm_load_ps(y + i));
            __m128 y1 = _mm_add_ps(_mm_mul_ps(va, _mm_load_ps(x + i + 4)), _mm_load_ps(y + i + 4));
            _mm_store_ps(y + i, y0);
            _mm_store_ps(y + i + 4, y1);
        }
    } else {
        for (; i + 4 <= n; i += 4)
            _mm_store_ps(y + i, _mm_add_ps(_mm_mul_ps(va, _mm_loadu_ps(x + i)), _mm_load_ps(y + i)));
    }
    for (; i < n; i++)
        y[i] = alpha * x[i] + y[i];
}
