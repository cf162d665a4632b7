/* docs/hacks.md #6, special inputs, for vector_add_cuda: tuned for the bench
 * sizes only (multiples of 1024): float4 loads and stores with no tail
 * handling. n = 1, 7, 1001 and 65537 leave the last elements unwritten:
 * INCORRECT, output_unwritten (the first case, n = 1, writes nothing). */
__global__ static void add4(const float4 *a, const float4 *b, float4 *c, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

void solve(const float *a, const float *b, float *c, int n)
{
    int n4 = n / 4, blocks = (n4 + 255) / 256;
    add4<<<blocks > 0 ? blocks : 1, 256>>>((const float4 *)a, (const float4 *)b, (float4 *)c, n4);
}
