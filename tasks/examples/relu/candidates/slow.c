/* Honest but slow: zero the whole output, then copy the positive elements in
 * a second pass. The branch on the sign of random data is mispredicted about
 * half the time, which costs far more than the extra pass. */
#include <string.h>

void solve(const float *x, float *y, int n)
{
    if (n <= 0)
        return;
    memset(y, 0, (size_t)n * sizeof(float));
    for (int i = 0; i < n; i++)
        if (x[i] > 0.0f)
            y[i] = x[i];
}
