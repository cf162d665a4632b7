/* Does not compile: the running max is declared as a pointer and
 * initialised from a float (incompatible types). */
#include <math.h>

void solve(const float *x, float *y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;
        float *m = xr[0];
        for (int j = 1; j < cols; j++)
            if (xr[j] > *m)
                *m = xr[j];
        float sum = 0.0f;
        for (int j = 0; j < cols; j++)
            sum += expf(xr[j] - *m);
        for (int j = 0; j < cols; j++)
            yr[j] = expf(xr[j] - *m) / sum;
    }
}
