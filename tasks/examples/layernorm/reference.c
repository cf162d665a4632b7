/* layernorm reference: each row of x (rows x cols) is normalised to zero mean
 * and unit variance (biased variance, as in PyTorch's LayerNorm), then scaled
 * by gamma and shifted by beta per column:
 *     y[r][j] = (x[r][j] - mean_r) / sqrt(var_r + eps) * gamma[j] + beta[j]
 * eps is a per-case scalar. Mean and variance take separate passes so a
 * large mean does not cancel away the variance. */
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
        var /= cols;
        for (int j = 0; j < cols; j++)
            yr[j] = (xr[j] - mean) / sqrtf(var + eps) * gamma[j] + beta[j];
    }
}
