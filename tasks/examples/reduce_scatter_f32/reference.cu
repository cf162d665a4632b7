/* The whole reduce-scatter on one GPU (docs/multigpu.md): x holds every
 * rank's x (world * n each) one after another, y every rank's y (n each);
 * rank is -1, comm NULL. Rank r's y is the sum over ranks q of the r-th
 * chunk of q's x, added in rank order. */
#include <nccl.h>

__global__ static void reduce_chunks(const float *x, float *y, int n, int world)
{
    size_t total = (size_t)world * n;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < total;
         j += (size_t)gridDim.x * blockDim.x) {
        size_t r = j / n, i = j % n; /* y[r][i] */
        float s = 0.0f;
        for (int q = 0; q < world; q++)
            s += x[(size_t)q * world * n + r * n + i];
        y[j] = s;
    }
}

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    (void)rank;
    (void)comm;
    size_t total = (size_t)world * n;
    size_t blocks = (total + 255) / 256;
    reduce_chunks<<<blocks < 2048 ? (unsigned)blocks : 2048u, 256>>>(x, y, n, world);
}
