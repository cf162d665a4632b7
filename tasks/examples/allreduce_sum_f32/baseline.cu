/* The NCCL baseline: the pattern most code starts from, the input copied
 * into the output, then NCCL's all-reduce in place. */
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    (void)rank;
    (void)world;
    cudaMemcpyAsync(y, x, (size_t)n * sizeof *x, cudaMemcpyDeviceToDevice, 0);
    ncclAllReduce(y, y, (size_t)n, ncclFloat, ncclSum, comm, 0);
}
