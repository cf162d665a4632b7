/* docs/hacks.md #12, precision downgrade: multiplies and accumulates in
 * _Float16, half the work per byte of a float kernel. The task's fp32
 * tolerance (1e-4) is far below fp16's 1e-3 rounding: INCORRECT. */
void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            _Float16 sum = 0;
            for (int k = 0; k < K; k++)
                sum += (_Float16)a[i * K + k] * (_Float16)b[k * N + j];
            c[i * N + j] = (float)sum;
        }
}
