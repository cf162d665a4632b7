/* Honest, vector_add_cuda: a grid-stride loop of 16-byte loads and stores
 * (float4, cudaMalloc's 256-byte alignment makes a + 4i aligned), a grid
 * sized to the GPU (4 blocks of 256 per multiprocessor, asked once), the
 * n % 4 tail done by the first threads of the same launch. */
__global__ static void __launch_bounds__(256)
    add_vec4(const float4 *__restrict__ a, const float4 *__restrict__ b, float4 *__restrict__ c,
             const float *__restrict__ as, const float *__restrict__ bs, float *__restrict__ cs,
             int n4, int n)
{
    int stride = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = t; i < n4; i += stride) {
        float4 x = __ldg(a + i), y = __ldg(b + i);
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    if (t < n - 4 * n4)
        cs[4 * n4 + t] = as[4 * n4 + t] + bs[4 * n4 + t];
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int cap;
    if (!cap) {
        int dev = 0, sms = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cap = (sms > 0 ? sms : 1) * 4;
    }
    int n4 = n / 4, want = (n4 + 255) / 256;
    int blocks = want < 1 ? 1 : want > cap ? cap : want;
    add_vec4<<<blocks, 256>>>((const float4 *)a, (const float4 *)b, (float4 *)c, a, b, c, n4, n);
}
