/* Wrong formula: alpha scales the sum, alpha * (x + y), instead of only x. */
void solve(int n, float alpha, const float *restrict x, float *restrict y)
{
    for (int i = 0; i < n; i++)
        y[i] = alpha * (x[i] + y[i]);
}
