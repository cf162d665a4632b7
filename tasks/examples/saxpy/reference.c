/* saxpy reference (BLAS level 1): y = alpha * x + y, in place. y is an inout
 * parameter: the judge fills it like an input and checks it like an output;
 * alpha is a per-case float scalar. */
void solve(int n, float alpha, const float *x, float *y)
{
    for (int i = 0; i < n; i++)
        y[i] = alpha * x[i] + y[i];
}
