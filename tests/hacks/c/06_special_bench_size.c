/* docs/hacks.md #6, special inputs: a kernel written for the benchmark shape
 * only (256 x 256 x 256, fully unrolled by 8 with no remainder handling),
 * that writes zeros for any other shape. The judge checks several cases of
 * awkward sizes: INCORRECT. */
#include <string.h>

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    if (M != 256 || N != 256 || K != 256) {
        memset(c, 0, (size_t)M * N * sizeof *c);
        return;
    }
    for (int i = 0; i < 256; i++) {
        float acc[256] = {0};
        for (int k = 0; k < 256; k++) {
            float av = a[i * 256 + k];
            const float *br = b + k * 256;
            for (int j = 0; j < 256; j++)
                acc[j] += av * br[j];
        }
        memcpy(c + i * 256, acc, sizeof acc);
    }
}
