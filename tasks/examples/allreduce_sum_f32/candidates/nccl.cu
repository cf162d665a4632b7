/* The baseline itself, as a candidate: OK, speedup about 1. */
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    (void)rank;
    (void)world;
    cudaMemcpyAsync(y, x, (size_t)n * sizeof *x, cudaMemcpyDeviceToDevice, 0);
    ncclAllReduce(y, y, (size_t)n, ncclFloat, ncclSum, comm, 0);
}
