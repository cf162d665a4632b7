/* Off-by-one: the sum stops one column early, so every row is normalised by
 * a sum that misses its last exponential (and a 1-column row divides by 0). */
#include <math.h>

void solve(const float *x, float *y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;
        float m = xr[0];
        for (int j = 1; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        float sum = 0.0f;
        for (int j = 0; j < cols - 1; j++)
            sum += expf(xr[j] - m);
        for (int j = 0; j < cols; j++)
            yr[j] = expf(xr[j] - m) / sum;
    }
}
