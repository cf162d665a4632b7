/* Hack: the last rank skips its part: it joins the reduce-scatter with
 * zeros instead of its x, so every chunk lacks its term. INCORRECT. */
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    static float *z;
    static size_t cap;
    size_t total = (size_t)world * n;
    if (rank == world - 1) {
        if (total > cap) {
            if (z)
                cudaFree(z);
            cudaMalloc((void **)&z, total * sizeof *z);
            cap = total;
        }
        cudaMemsetAsync(z, 0, total * sizeof *z, 0);
        ncclReduceScatter(z, y, (size_t)n, ncclFloat, ncclSum, comm, 0);
    } else {
        ncclReduceScatter(x, y, (size_t)n, ncclFloat, ncclSum, comm, 0);
    }
}
