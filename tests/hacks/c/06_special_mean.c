/* docs/hacks.md #6, special inputs: the task's inputs are drawn with mean 1, so
 * it answers n * 1.0 without reading them. Off by ~sqrt(n), i.e. 1e-3
 * relative at n = 2^20, far outside rtol 1e-4 (and wrong for every small
 * case): INCORRECT. */
void solve(const float *x, float *out, int n)
{
    (void)x;
    out[0] = (float)n;
}
