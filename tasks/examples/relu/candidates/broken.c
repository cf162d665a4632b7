/* Does not compile: a missing semicolon after the assignment. */
#include <math.h>

void solve(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = fmaxf(x[i], 0.0f)
}
