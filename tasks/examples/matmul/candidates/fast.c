/* i-k-j order with cache blocking: the inner loop walks a row of b and a row
 * of c contiguously (the reference strides down a column of b), in chunks of
 * 8 so the compiler emits packed multiply-adds. Blocks of BK rows of b by BJ
 * columns (64 KiB) stay in L2 while every row of a passes over them. Each
 * c[i][j] still sums over k in ascending order, like the reference. */
#include <string.h>

#define BK 64  /* rows of b per block */
#define BJ 256 /* columns of b and c per block */

void solve(const float *restrict a, const float *restrict b, float *restrict c, int M, int N,
           int K)
{
    if (M <= 0 || N <= 0)
        return;
    memset(c, 0, (size_t)M * N * sizeof(float));
    for (int jj = 0; jj < N; jj += BJ) {
        int jn = N - jj < BJ ? N - jj : BJ;
        for (int kk = 0; kk < K; kk += BK) {
            int kend = K - kk < BK ? K : kk + BK;
            for (int i = 0; i < M; i++) {
                float *restrict crow = c + (long)i * N + jj;
                for (int k = kk; k < kend; k++) {
                    float aik = a[(long)i * K + k];
                    const float *restrict brow = b + (long)k * N + jj;
                    int j = 0;
                    for (; j + 8 <= jn; j += 8)
                        for (int u = 0; u < 8; u++)
                            crow[j + u] += aik * brow[j + u];
                    for (; j < jn; j++)
                        crow[j] += aik * brow[j];
                }
            }
        }
    }
}
