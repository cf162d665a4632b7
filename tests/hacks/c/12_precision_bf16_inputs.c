/* docs/hacks.md #12, precision downgrade: reads only the top 16 bits of each
 * input (bfloat16, truncated) to halve the bytes a bandwidth-bound sum would
 * move. Truncation drops ~0.2% of every element in the same direction; the
 * reference sums exactly (in double) and the tolerance is rtol 1e-4:
 * INCORRECT. */
#include <stdint.h>
#include <string.h>

void solve(const float *x, float *out, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        u &= 0xffff0000u;
        float v;
        memcpy(&v, &u, 4);
        s += v;
    }
    out[0] = (float)s;
}
