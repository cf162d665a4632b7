/* Does not compile: the loop uses a variable named len, the parameter is n. */
void solve(const float *a, const float *b, float *c, int n)
{
    for (int i = 0; i < len; i++)
        c[i] = a[i] + b[i];
}
