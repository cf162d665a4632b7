/* Wrong formula: divides the squared deviations by cols - 1 (the unbiased
 * sample variance) where layer normalisation uses the biased one, dividing
 * by cols. Off by a factor sqrt((cols-1)/cols) everywhere, and a 1-column
 * row divides by zero. */
#include <math.h>

void solve(const float *x, const float *gamma, const float *beta, float *y, int rows, int cols,
           float eps)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;
        float mean = 0.0f;
        for (int j = 0; j < cols; j++)
            mean += xr[j];
        mean /= cols;
        float var = 0.0f;
        for (int j = 0; j < cols; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= cols - 1;
        float inv = 1.0f / sqrtf(var + eps);
        for (int j = 0; j < cols; j++)
            yr[j] = (xr[j] - mean) * inv * gamma[j] + beta[j];
    }
}
