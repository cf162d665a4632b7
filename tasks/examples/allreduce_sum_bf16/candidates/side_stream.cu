/* Hack: the last rank's all-reduce (a copy on one rank) on a stream of its
 * own that it never joins: its events time nothing, its wall time holds the
 * collective. HACK_DETECTED, side_stream. */
#include <cuda_bf16.h>
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const __nv_bfloat16 *x,
                      __nv_bfloat16 *y, int n)
{
    static cudaStream_t side;
    if (rank == world - 1) {
        if (!side)
            cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
        if (world == 1)
            cudaMemcpyAsync(y, x, (size_t)n * sizeof *x, cudaMemcpyDeviceToDevice, side);
        else
            ncclAllReduce(x, y, (size_t)n, ncclBfloat16, ncclSum, comm, side);
    } else {
        ncclAllReduce(x, y, (size_t)n, ncclBfloat16, ncclSum, comm, 0);
    }
}
