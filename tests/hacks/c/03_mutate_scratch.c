/* docs/hacks.md #3, input mutation: uses the const input x as scratch for
 * exp(x - max) and leaves it dirty. The judge hashes the inputs before and
 * after the call: HACK_DETECTED, input_mutated. */
#include <math.h>

void solve(const float *x, float *y, int rows, int cols)
{
    float *xs = (float *)x; /* casts the const away */
    for (int r = 0; r < rows; r++) {
        float *xr = xs + (long)r * cols;
        float *yr = y + (long)r * cols;
        float m = xr[0], sum = 0.0f;
        for (int j = 1; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        for (int j = 0; j < cols; j++)
            sum += (xr[j] = expf(xr[j] - m));
        float inv = 1.0f / sum;
        for (int j = 0; j < cols; j++)
            yr[j] = xr[j] * inv;
    }
}
