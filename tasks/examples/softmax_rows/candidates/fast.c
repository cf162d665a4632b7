/* One expf per element instead of two: the exponentials are stored in y on
 * the way to the sum, then scaled by the reciprocal of the sum (a multiply
 * instead of a divide per element). The max uses 4 independent lanes so the
 * compare chain is not one long dependency. */
#include <math.h>

void solve(const float *restrict x, float *restrict y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *restrict xr = x + (long)r * cols;
        float *restrict yr = y + (long)r * cols;
        float m0 = xr[0], m1 = xr[0], m2 = xr[0], m3 = xr[0];
        int j = 0;
        for (; j + 4 <= cols; j += 4) {
            m0 = xr[j + 0] > m0 ? xr[j + 0] : m0;
            m1 = xr[j + 1] > m1 ? xr[j + 1] : m1;
            m2 = xr[j + 2] > m2 ? xr[j + 2] : m2;
            m3 = xr[j + 3] > m3 ? xr[j + 3] : m3;
        }
        for (; j < cols; j++)
            m0 = xr[j] > m0 ? xr[j] : m0;
        float m01 = m0 > m1 ? m0 : m1, m23 = m2 > m3 ? m2 : m3;
        float m = m01 > m23 ? m01 : m23;

        float sum = 0.0f;
        for (j = 0; j < cols; j++) {
            float e = expf(xr[j] - m);
            yr[j] = e;
            sum += e;
        }
        float inv = 1.0f / sum;
        for (j = 0; j < cols; j++)
            yr[j] *= inv;
    }
}
