/* Does not compile: an in-place pairwise reduction that folds the upper half
 * of x onto the lower half, but x is const (assignment of read-only location). */
void solve(const float *x, float *out, int n)
{
    for (int len = n; len > 1; len = (len + 1) / 2) {
        int half = len / 2;
        for (int i = 0; i < half; i++)
            x[i] += x[len - 1 - i];
    }
    out[0] = n > 0 ? x[0] : 0.0f;
}
