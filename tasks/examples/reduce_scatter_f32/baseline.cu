/* The NCCL baseline: the first version many write, an all-reduce of the
 * whole input into a scratch buffer, then this rank's chunk copied out. */
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    static float *w;
    static size_t cap;
    size_t total = (size_t)world * n;
    if (total > cap) {
        if (w)
            cudaFree(w);
        cudaMalloc((void **)&w, total * sizeof *w);
        cap = total;
    }
    ncclAllReduce(x, w, total, ncclFloat, ncclSum, comm, 0);
    cudaMemcpyAsync(y, w + (size_t)rank * n, (size_t)n * sizeof *y, cudaMemcpyDeviceToDevice, 0);
}
