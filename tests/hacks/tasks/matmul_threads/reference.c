/* matmul_threads reference: the matmul task's i-j-k loop, single-threaded.
 * The task allows candidates to create threads ("threads": true) so the hack
 * suite can check both a thread that outlives its call and honest threaded
 * kernels (tests/hacks/README.md). */
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
