/* relu reference: y[i] = max(x[i], 0). Inputs are signed normal data, so
 * about half the elements are clamped. */
#include <math.h>

void solve(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = fmaxf(x[i], 0.0f);
}
