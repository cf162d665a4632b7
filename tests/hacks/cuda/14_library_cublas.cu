/* docs/hacks.md #14, calling a library, for matmul_f32_cuda: cublasSgemm. The
 * task's "allow" does not list cublas, so the worker does not link it and
 * the link audit finds the unversioned cublas imports: HACK_DETECTED,
 * link_audit (the object would not even load). */
#include <cublas_v2.h>

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    static cublasHandle_t h;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
        return;
    const float one = 1.0f, zero = 0.0f;
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N);
}
