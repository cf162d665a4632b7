/* Does not compile: alpha is a float passed by value, not a pointer, so it
 * cannot be dereferenced. */
void solve(int n, float alpha, const float *x, float *y)
{
    for (int i = 0; i < n; i++)
        y[i] = *alpha * x[i] + y[i];
}
