/* Branch-free select on restrict pointers, in blocks of 8 so the compiler
 * emits packed max instructions at -O2; no libm call per element and no
 * data-dependent branch to mispredict. The scalar tail covers n % 8. */
void solve(const float *restrict x, float *restrict y, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            float v = x[i + k];
            y[i + k] = v > 0.0f ? v : 0.0f;
        }
    for (; i < n; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
