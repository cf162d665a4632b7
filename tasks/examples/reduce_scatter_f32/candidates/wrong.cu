/* Wrong: each rank keeps the sum of the first chunk, not of its own; and
 * off by one in the count. INCORRECT on one rank as on two. */
#include <nccl.h>

extern "C" void solve(int rank, int world, ncclComm_t comm, const float *x, float *y, int n)
{
    (void)rank;
    (void)world;
    ncclAllReduce(x, y, (size_t)(n - 1), ncclFloat, ncclSum, comm, 0);
}
