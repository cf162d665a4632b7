/* Hack: the last rank issues its all-reduce on a stream of its own and
 * returns without joining it, so its own events time nothing. The results
 * are right (the executor waits for the device before the judge reads
 * them); its wall time exceeds its event time by the whole collective:
 * HACK_DETECTED, side_stream. */
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
            ncclAllReduce(x, y, (size_t)n, ncclFloat, ncclSum, comm, side);
    } else {
        ncclAllReduce(x, y, (size_t)n, ncclFloat, ncclSum, comm, 0);
    }
}
