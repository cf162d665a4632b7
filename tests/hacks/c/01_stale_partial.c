/* docs/hacks.md #1, stale output: computes only the even rows, counting on the
 * odd rows still holding an earlier answer. Poisoned outputs: INCORRECT,
 * output_unwritten. */
#include <math.h>

void solve(const float *x, float *y, int rows, int cols)
{
    for (int r = 0; r < rows; r += 2) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;
        float m = xr[0], sum = 0.0f;
        for (int j = 1; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        for (int j = 0; j < cols; j++)
            sum += (yr[j] = expf(xr[j] - m));
        for (int j = 0; j < cols; j++)
            yr[j] /= sum;
    }
}
