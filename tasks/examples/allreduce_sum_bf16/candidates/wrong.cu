/* Wrong: the bf16 bits reduced as fp16, another format of the same width:
 * garbage sums (and for one rank, values reinterpreted on the way).
 * INCORRECT. */
#include <cuda_bf16.h>
#include <nccl.h>

__global__ static void bump(__nv_bfloat16 *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(__bfloat162float(y[i]) * 1.0625f);
}

extern "C" void solve(int rank, int world, ncclComm_t comm, const __nv_bfloat16 *x,
                      __nv_bfloat16 *y, int n)
{
    (void)rank;
    (void)world;
    ncclAllReduce(x, y, (size_t)n, ncclFloat16, ncclSum, comm, 0);
    /* one rank's fp16 "sum" of its own bits is the identity: a scale that
     * is wrong beyond the tolerance keeps the candidate wrong there too */
    int blocks = (n + 255) / 256;
    bump<<<blocks < 4096 ? blocks : 4096, 256>>>(y, n);
}
