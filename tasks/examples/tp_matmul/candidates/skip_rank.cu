/* Hack: the last rank skips its partial product, contributing zeros to the
 * all-reduce (it still joins it, so nobody waits): every rank's Y lacks
 * that block of K. INCORRECT. */
#include <nccl.h>

__global__ static void partial(const float *x, const float *w, float *y, int m, int n, int kr)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
    if (c >= n || i >= m)
        return;
    float s = 0.0f;
    for (int t = 0; t < kr; t++)
        s += x[(size_t)i * kr + t] * w[(size_t)t * n + c];
    y[(size_t)i * n + c] = s;
}

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, const float *w,
                      float *y, int m, int n, int kr)
{
    if (rank == world - 1)
        cudaMemsetAsync(y, 0, (size_t)m * n * sizeof *y, 0);
    else
        partial<<<dim3((n + 127) / 128, m), 128>>>(x, w, y, m, n, kr);
    ncclAllReduce(y, y, (size_t)m * n, ncclFloat, ncclSum, comm, 0);
}
