/* Sabotage for vector_add_cuda: a kernel that never ends. solve() returns
 * at once; the judge's poll must give up at its deadline (TIMEOUT). */
__device__ volatile int cr_never_set;

__global__ static void spin(float *c)
{
    while (cr_never_set == 0) {
    }
    c[0] = 0;
}

void solve(const float *a, const float *b, float *c, int n)
{
    spin<<<1, 1>>>(c);
}
