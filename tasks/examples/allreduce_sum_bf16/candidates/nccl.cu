/* The baseline itself, as a candidate: OK, speedup about 1. */
#include <cuda_bf16.h>
#include <nccl.h>

__global__ static void widen(const __nv_bfloat16 *x, float *w, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        w[i] = __bfloat162float(x[i]);
}

__global__ static void narrow(const float *w, __nv_bfloat16 *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(w[i]);
}

extern "C" void solve(int rank, int world, ncclComm_t comm, const __nv_bfloat16 *x,
                      __nv_bfloat16 *y, int n)
{
    (void)rank;
    (void)world;
    static float *w;
    static int cap;
    if (n > cap) {
        if (w)
            cudaFree(w);
        cudaMalloc((void **)&w, (size_t)n * sizeof *w);
        cap = n;
    }
    int blocks = (n + 255) / 256;
    blocks = blocks < 4096 ? blocks : 4096;
    widen<<<blocks, 256>>>(x, w, n);
    ncclAllReduce(w, w, (size_t)n, ncclFloat, ncclSum, comm, 0);
    narrow<<<blocks, 256>>>(w, y, n);
}
