/* docs/hacks.md #14, calling a library, for matmul_f32_cuda: dlopens libcublas
 * at run time, so that no cublas symbol is imported. dlopen and dlsym are
 * refused by the link audit: HACK_DETECTED, link_audit. (Were they not,
 * cuBLAS's kernels are not the candidate's: foreign_kernel.) */
#include <dlfcn.h>

typedef int (*create_fn)(void **);
typedef int (*sgemm_fn)(void *, int, int, int, int, int, const float *, const float *, int,
                        const float *, int, const float *, float *, int);

void solve(const float *A, const float *B, float *C, int M, int N, int K)
{
    static void *h;
    static sgemm_fn sgemm;
    if (!sgemm) {
        void *lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            return;
        create_fn create = (create_fn)dlsym(lib, "cublasCreate_v2");
        sgemm = (sgemm_fn)dlsym(lib, "cublasSgemm_v2");
        if (!create || !sgemm || create(&h) != 0) {
            sgemm = NULL;
            return;
        }
    }
    const float one = 1.0f, zero = 0.0f;
    sgemm(h, 0, 0, N, M, K, &one, B, N, A, K, &zero, C, N);
}
