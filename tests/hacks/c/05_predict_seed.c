/* docs/hacks.md #5, predicting inputs: assumes the judge draws its inputs from a
 * fixed, guessable seed, regenerates them with a look-alike generator
 * (xoshiro256** seeded with 0, normal draws) and writes the predicted sums
 * without reading a or b. The judge's seed is secret and new for every
 * evaluation: INCORRECT. */
#include <math.h>
#include <stdint.h>

static uint64_t st[4] = {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull, 1};

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(void)
{
    uint64_t r = rotl(st[1] * 5, 7) * 9, t = st[1] << 17;
    st[2] ^= st[0], st[3] ^= st[1], st[1] ^= st[2], st[0] ^= st[3], st[2] ^= t;
    st[3] = rotl(st[3], 45);
    return r;
}

static double normal(void)
{
    double u = ((next() >> 11) + 0.5) * 0x1.0p-53, v = (next() >> 11) * 0x1.0p-53;
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

void solve(const float *a, const float *b, float *c, int n)
{
    (void)a, (void)b;
    for (int i = 0; i < n; i++)
        c[i] = (float)normal() + (float)normal(); /* "a[i] + b[i]" as predicted */
}
