/* The whole bf16 all-reduce on one GPU (docs/multigpu.md): x and y hold every
 * rank's buffer one after another; rank is -1, comm NULL. The sum is taken
 * in fp32 and rounded to bf16 once. */
#include <cuda_bf16.h>
#include <nccl.h>

__global__ static void sum_ranks(const __nv_bfloat16 *x, __nv_bfloat16 *y, int n, int world)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; r++)
            s += __bfloat162float(x[(size_t)r * n + i]);
        for (int r = 0; r < world; r++)
            y[(size_t)r * n + i] = __float2bfloat16(s);
    }
}

extern "C" void solve(int rank, int world, ncclComm_t comm, const __nv_bfloat16 *x,
                      __nv_bfloat16 *y, int n)
{
    (void)rank;
    (void)comm;
    int blocks = (n + 255) / 256;
    sum_ranks<<<blocks < 1024 ? blocks : 1024, 256>>>(x, y, n, world);
}
