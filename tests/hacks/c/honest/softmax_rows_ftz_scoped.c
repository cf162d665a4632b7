/* Honest: sets flush-to-zero / denormals-are-zero for the duration of the
 * call (tiny exp() results then cost no microcode assists) and puts MXCSR
 * back before returning, as careful libraries do. The flushed values are
 * below 1e-38, far inside the tolerance. No FP state leaks to the caller. */
#include <math.h>
#include <xmmintrin.h>

void solve(const float *restrict x, float *restrict y, int rows, int cols)
{
    unsigned int saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;
        float m = xr[0], sum = 0.0f;
        for (int j = 1; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        for (int j = 0; j < cols; j++)
            sum += yr[j] = expf(xr[j] - m);
        float inv = 1.0f / sum;
        for (int j = 0; j < cols; j++)
            yr[j] *= inv;
    }
    _mm_setcsr(saved);
}
