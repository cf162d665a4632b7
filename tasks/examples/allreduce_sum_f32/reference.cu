/* The whole all-reduce on one GPU (docs/multigpu.md): x holds every rank's
 * x one after another (world * n), y every rank's y; rank is -1, comm NULL.
 * Each rank's y is the sum of all ranks' x, added in rank order. */
#include <nccl.h>

__global__ static void sum_ranks(const float *x, float *y, int n, int world)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < world; r++)
            s += x[(size_t)r * n + i];
        for (int r = 0; r < world; r++)
            y[(size_t)r * n + i] = s;
    }
}

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    (void)rank;
    (void)comm;
    int blocks = (n + 255) / 256;
    sum_ranks<<<blocks < 1024 ? blocks : 1024, 256>>>(x, y, n, world);
}
