/* Honest but slow: 32 blocks of 128 threads stride over the whole vector, so
 * a few SMs do all the work and the memory system is never saturated. */
__global__ static void add_few(const float *a, const float *b, float *c, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    add_few<<<32, 128>>>(a, b, c, n);
}
