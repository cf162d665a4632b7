/* docs/hacks.md #19, global state tampering: sums correctly but leaves the
 * rounding mode set to upward, so whatever runs next in the process (the
 * reference, on the judge's thread) rounds differently. The judge checks
 * and restores the FP control state after every candidate call:
 * HACK_DETECTED, fp_env_changed. */
#include <fenv.h>

void solve(const float *x, float *out, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
    fesetround(FE_UPWARD);
}
