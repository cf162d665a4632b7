/* Assumes the output buffer arrives zeroed and only stores the positive
 * elements: every clamped element of y is left unwritten. */
void solve(const float *restrict x, float *restrict y, int n)
{
    for (int i = 0; i < n; i++)
        if (x[i] > 0.0f)
            y[i] = x[i];
}
