/* Hack: the last rank's reduce-scatter (a copy on one rank) on a stream of
 * its own that it never joins. HACK_DETECTED, side_stream. */
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    static cudaStream_t side;
    if (rank == world - 1) {
        if (!side)
            cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
        if (world == 1)
            cudaMemcpyAsync(y, x, (size_t)n * sizeof *x, cudaMemcpyDeviceToDevice, side);
        else
            ncclReduceScatter(x, y, (size_t)n, ncclFloat, ncclSum, comm, side);
    } else {
        ncclReduceScatter(x, y, (size_t)n, ncclFloat, ncclSum, comm, 0);
    }
}
