/* Computes alpha * x + y into a scratch buffer and never copies it back into
 * y, so y is left exactly as it came in. */
#include <stdlib.h>

void solve(int n, float alpha, const float *x, float *y)
{
    if (n <= 0)
        return;
    float *out = malloc((size_t)n * sizeof(float));
    if (!out)
        return;
    for (int i = 0; i < n; i++)
        out[i] = alpha * x[i] + y[i];
    free(out);
}
