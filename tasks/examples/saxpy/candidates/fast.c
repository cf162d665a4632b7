/* restrict plus blocks of 8, so the compiler emits packed multiplies and
 * adds without run-time overlap checks; a scalar loop takes the n % 8 tail. */
void solve(int n, float alpha, const float *restrict x, float *restrict y)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            y[i + k] = alpha * x[i + k] + y[i + k];
    for (; i < n; i++)
        y[i] = alpha * x[i] + y[i];
}
