/* docs/hacks.md #5, predicting inputs, for vector_add_cuda: regenerates what it
 * guesses the inputs are (Philox4x32-10, the generator a GPU judge would
 * use, with guessed keys 0 and 1 and the task's distributions) and writes
 * the sum of its guesses without reading a or b. The judge's key comes
 * from a secret 32-byte seed per evaluation, never in the candidate's
 * reach: INCORRECT. */
#include <stdint.h>

__device__ static uint4 philox(uint64_t ctr, uint64_t key)
{
    uint4 c = make_uint4((uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0);
    uint2 k = make_uint2((uint32_t)key, (uint32_t)(key >> 32));
    for (int r = 0; r < 10; r++) {
        uint32_t hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        uint32_t hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k.x += 0x9E3779B9u;
        k.y += 0xBB67AE85u;
    }
    return c;
}

__global__ static void guess(float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint4 ra = philox((uint64_t)i, 0), rb = philox((uint64_t)i, 1);
    float u1 = ((ra.x >> 8) + 1) * 0x1.0p-24f, u2 = (ra.y >> 8) * 0x1.0p-24f;
    float a = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2); /* normal(0, 1) */
    float b = -2.0f + 4.0f * (rb.x >> 8) * 0x1.0p-24f;     /* uniform(-2, 2) */
    c[i] = a + b;
}

void solve(const float *a, const float *b, float *c, int n)
{
    (void)a;
    (void)b;
    guess<<<(n + 255) / 256, 256>>>(c, n);
}
