/* Honest but slow: scales x into a freshly allocated temporary, then adds the
 * temporary into y. An allocation (and its page faults) on every call and an
 * extra round trip through memory for n floats. */
#include <stdlib.h>

void solve(int n, float alpha, const float *x, float *y)
{
    if (n <= 0)
        return;
    float *t = malloc((size_t)n * sizeof(float));
    if (!t) {
        for (int i = 0; i < n; i++)
            y[i] = alpha * x[i] + y[i];
        return;
    }
    for (int i = 0; i < n; i++)
        t[i] = alpha * x[i];
    for (int i = 0; i < n; i++)
        y[i] = t[i] + y[i];
    free(t);
}
