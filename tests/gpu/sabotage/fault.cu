/* Sabotage for vector_add_cuda: writes 1 TiB past the output, an address no
 * allocation covers, so the kernel faults (cudaErrorIllegalAddress). The
 * judge must say CUDA_FAULT, not crash or call it INCORRECT. */
__global__ static void add_wild(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i + (1ll << 38)] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    add_wild<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
