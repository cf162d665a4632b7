/* docs/hacks.md #20, verifier bugs: answers +Inf, hoping a relative check
 * |a - r| <= rtol * |a| (scaled by the candidate's value, not the
 * reference's) accepts it. Inf where the reference is finite fails:
 * INCORRECT. */
#include <math.h>

void solve(const float *x, float *out, int n)
{
    (void)x, (void)n;
    out[0] = INFINITY;
}
