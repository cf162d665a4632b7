/* docs/hacks.md #2, silent launch failure, for vector_add_cuda: blocks of 2048
 * threads, and the candidate never looks at the error. The judge reads the
 * candidate runtime's launch error after every call (the shim's
 * cr_cuda_last_error): CUDA_FAULT, "launch failed" (the honest verdict:
 * the kernel never ran). */
__global__ static void add_big(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    add_big<<<(n + 2047) / 2048, 2048>>>(a, b, c, n);
}
