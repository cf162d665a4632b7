/* Honest but slow: Kahan (compensated) summation in float. Very accurate,
 * but each element costs four dependent additions instead of one. */
void solve(const float *x, float *out, int n)
{
    float sum = 0.0f, comp = 0.0f;
    for (int i = 0; i < n; i++) {
        float y = x[i] - comp;
        float t = sum + y;
        comp = (t - sum) - y;
        sum = t;
    }
    out[0] = sum;
}
