/* docs/hacks.md #1, stale output: writes nothing and hopes the output buffer
 * still holds a correct answer from an earlier run or from the reference.
 * The judge runs the candidate first, into outputs poisoned with NaN:
 * INCORRECT, output_unwritten. */
void solve(const float *a, const float *b, float *c, int n)
{
    (void)a, (void)b, (void)c, (void)n;
}
