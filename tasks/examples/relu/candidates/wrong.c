/* Wrong formula: this is leaky ReLU (slope 0.01 below zero), not ReLU. */
void solve(const float *restrict x, float *restrict y, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.01f * v;
    }
}
