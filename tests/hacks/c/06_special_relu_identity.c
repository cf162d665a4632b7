/* docs/hacks.md #6, special inputs: treats ReLU as the identity, which is right
 * only for non-negative data. The judge draws signed inputs: INCORRECT. */
#include <string.h>

void solve(const float *x, float *y, int n)
{
    memcpy(y, x, (size_t)n * sizeof *y);
}
