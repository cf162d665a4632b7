/* Unrolled by 4, but the remainder loop was copy-pasted with a typo: it adds
 * a to itself. Wrong whenever n is not a multiple of 4. */
void solve(const float *a, const float *b, float *c, int n)
{
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        c[i + 0] = a[i + 0] + b[i + 0];
        c[i + 1] = a[i + 1] + b[i + 1];
        c[i + 2] = a[i + 2] + b[i + 2];
        c[i + 3] = a[i + 3] + b[i + 3];
    }
    for (; i < n; i++)
        c[i] = a[i] + a[i];
}
