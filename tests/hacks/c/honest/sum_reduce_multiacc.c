/* Honest: four independent SSE accumulators (16 floats in flight) over
 * blocks of 4096 elements, each block's partial folded into a double so the
 * float error stays bounded by one block; scalar tail. */
#include <xmmintrin.h>

#define BLOCK 4096

void solve(const float *restrict x, float *restrict out, int n)
{
    double total = 0.0;
    int i = 0;
    while (i + 16 <= n) {
        int end = n - i < BLOCK ? i + (n - i) / 16 * 16 : i + BLOCK;
        __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (; i < end; i += 16) {
            s0 = _mm_add_ps(s0, _mm_loadu_ps(x + i));
            s1 = _mm_add_ps(s1, _mm_loadu_ps(x + i + 4));
            s2 = _mm_add_ps(s2, _mm_loadu_ps(x + i + 8));
            s3 = _mm_add_ps(s3, _mm_loadu_ps(x + i + 12));
        }
        float v[4];
        _mm_storeu_ps(v, _mm_add_ps(_mm_add_ps(s0, s1), _mm_add_ps(s2, s3)));
        total += (double)v[0] + v[1] + v[2] + v[3];
    }
    for (; i < n; i++)
        total += x[i];
    out[0] = (float)total;
}
