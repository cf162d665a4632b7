/* Wrong indexing: reads b as if it were stored column-major (b[j*K + k]
 * instead of b[k*N + j]). Stays in bounds, but is right only when that
 * happens to pick the same elements (1 x 1 matrices). */
void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++)
                sum += a[i * K + k] * b[j * K + k];
            c[i * N + j] = sum;
        }
}
