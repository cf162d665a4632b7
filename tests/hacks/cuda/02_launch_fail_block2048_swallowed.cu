/* docs/hacks.md #2, silent launch failure, for vector_add_cuda: blocks of 2048
 * threads (the limit is 1024), an invalid configuration; the error is
 * swallowed with cudaGetLastError(). No kernel ever runs and the poison
 * stays: INCORRECT, output_unwritten. */
__global__ static void add_big(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    add_big<<<(n + 2047) / 2048, 2048>>>(a, b, c, n);
    (void)cudaGetLastError();
}
