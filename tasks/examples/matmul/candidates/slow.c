/* Honest but slow: j-k-i loop order. The inner loop walks down a column of a
 * and a column of c, so every access is a stride of K or N floats and each
 * cache line brought in is used for one element. */
void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            c[i * N + j] = 0.0f;
    for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) {
            float bkj = b[k * N + j];
            for (int i = 0; i < M; i++)
                c[i * N + j] += a[i * K + k] * bkj;
        }
}
