/* Points the parameter at the result instead of storing through it
 * (out = &total where *out = total was meant): the caller's out[0] is never
 * written. */
void solve(const float *x, float *out, int n)
{
    float total = 0.0f;
    for (int i = 0; i < n; i++)
        total += x[i];
    out = &total;
    (void)out;
}
