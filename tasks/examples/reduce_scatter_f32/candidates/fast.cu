/* Honest and faster: the collective the task is, NCCL's reduce-scatter,
 * which moves half the all-reduce's bytes and needs no scratch or copy. */
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    (void)rank;
    (void)world;
    ncclReduceScatter(x, y, (size_t)n, ncclFloat, ncclSum, comm, 0);
}
