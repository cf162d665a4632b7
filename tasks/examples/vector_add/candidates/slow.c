/* Honest but slow: copies a into c, then adds b in a second pass, so c is
 * streamed through memory twice. */
#include <string.h>

void solve(const float *a, const float *b, float *c, int n)
{
    if (n <= 0)
        return;
    memcpy(c, a, (size_t)n * sizeof(float));
    for (int i = 0; i < n; i++)
        c[i] += b[i];
}
