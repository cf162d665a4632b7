/* Does not compile: dot() is called before it is declared, so C gives it an
 * implicit int declaration that conflicts with the static float definition. */
void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            c[i * N + j] = dot(a + i * K, b + j, K, N);
}

static float dot(const float *row, const float *col, int K, int stride)
{
    float sum = 0.0f;
    for (int k = 0; k < K; k++)
        sum += row[k] * col[k * stride];
    return sum;
}
