/* Honest: per row, the maximum with four independent SSE accumulators, one
 * expf per element written straight into the output, the sum with four
 * accumulators, then one reciprocal and a vector multiply; scalar tails. */
#include <math.h>
#include <xmmintrin.h>

static float row_max(const float *x, int n)
{
    int j = 0;
    float m = x[0];
    if (n >= 16) {
        __m128 m0 = _mm_loadu_ps(x), m1 = m0, m2 = m0, m3 = m0;
        for (; j + 16 <= n; j += 16) {
            m0 = _mm_max_ps(m0, _mm_loadu_ps(x + j));
            m1 = _mm_max_ps(m1, _mm_loadu_ps(x + j + 4));
            m2 = _mm_max_ps(m2, _mm_loadu_ps(x + j + 8));
            m3 = _mm_max_ps(m3, _mm_loadu_ps(x + j + 12));
        }
        float v[4];
        _mm_storeu_ps(v, _mm_max_ps(_mm_max_ps(m0, m1), _mm_max_ps(m2, m3)));
        m = fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
    }
    for (; j < n; j++)
        m = x[j] > m ? x[j] : m;
    return m;
}

void solve(const float *restrict x, float *restrict y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;
        float m = row_max(xr, cols);
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int j = 0;
        for (; j + 4 <= cols; j += 4) {
            s0 += yr[j] = expf(xr[j] - m);
            s1 += yr[j + 1] = expf(xr[j + 1] - m);
            s2 += yr[j + 2] = expf(xr[j + 2] - m);
            s3 += yr[j + 3] = expf(xr[j + 3] - m);
        }
        for (; j < cols; j++)
            s0 += yr[j] = expf(xr[j] - m);
        __m128 inv = _mm_set1_ps(1.0f / ((s0 + s1) + (s2 + s3)));
        j = 0;
        for (; j + 4 <= cols; j += 4)
            _mm_storeu_ps(yr + j, _mm_mul_ps(_mm_loadu_ps(yr + j), inv));
        for (; j < cols; j++)
            yr[j] *= _mm_cvtss_f32(inv);
    }
}
