/* matmul reference: c (M x N) = a (M x K) * b (K x N), all row-major.
 * The textbook i-j-k loop: one dot product per output element. */
void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++)
                sum += a[i * K + k] * b[k * N + j];
            c[i * N + j] = sum;
        }
}
