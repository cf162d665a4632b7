/* 16-byte loads and stores (float4): a quarter of the memory instructions.
 * cudaMalloc'd buffers are 256-byte aligned, so a + 4*i is 16-byte aligned;
 * the n % 4 tail is done by the first threads of the same launch. */
__global__ static void add4(const float4 *__restrict__ a, const float4 *__restrict__ b,
                            float4 *__restrict__ c, const float *__restrict__ as,
                            const float *__restrict__ bs, float *__restrict__ cs, int n4, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = __ldg(a + i), y = __ldg(b + i);
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    int t = 4 * n4 + i;
    if (i < 4 && t < n)
        cs[t] = as[t] + bs[t];
}

extern "C" void solve(const float *a, const float *b, float *c, int n)
{
    int n4 = n / 4;
    int threads = 256, blocks = (n4 + threads - 1) / threads;
    add4<<<blocks > 0 ? blocks : 1, threads>>>((const float4 *)a, (const float4 *)b, (float4 *)c,
                                               a, b, c, n4, n);
}
