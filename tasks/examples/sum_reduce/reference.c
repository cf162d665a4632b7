/* sum_reduce reference: out[0] = sum of x[0..n-1]. Accumulates in double so
 * the reference itself is accurate to the last float bit; candidates summing
 * in float in any order (naive, blocked, pairwise) stay well within rtol 1e-4
 * at these sizes, because the data has mean 1 and the sum is far from 0. */
void solve(const float *x, float *out, int n)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    out[0] = (float)sum;
}
