/* Hack: the last rank skips its part, contributing zeros instead of its x
 * (it still joins the collective, so nobody waits). INCORRECT. */
#include <cuda_bf16.h>
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const __nv_bfloat16 *x,
                      __nv_bfloat16 *y, int n)
{
    if (rank == world - 1) {
        cudaMemsetAsync(y, 0, (size_t)n * sizeof *y, 0);
        ncclAllReduce(y, y, (size_t)n, ncclBfloat16, ncclSum, comm, 0);
    } else {
        ncclAllReduce(x, y, (size_t)n, ncclBfloat16, ncclSum, comm, 0);
    }
}
