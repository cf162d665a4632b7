/* docs/hacks.md #4, caching keyed by content: hashes every input byte (far
 * cheaper than the 2*M*N*K flops) and returns the stored product when the
 * same inputs come back. A judge whose timed calls cycle through a fixed
 * pool of inputs pays it a speedup of two orders of magnitude without a
 * single wrong answer.
 * This judge gives every call inputs no earlier call had, so the cache
 * never hits and the candidate is timed doing the reference's own loop plus
 * the hashing. The correct verdict is OK with no reward from the cache:
 * expected.json bounds how fast any one timed call may be (max_best_speedup). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 16

static struct {
    uint64_t key;
    int M, N, K;
    float *c;
} cache[SLOTS];
static int next;

static uint64_t hash(const void *p, size_t len, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = 0;
        memcpy(&w, b + i, len - i < 8 ? len - i : 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    uint64_t key = hash(a, (size_t)M * K * 4, 0xcbf29ce484222325ull);
    key = hash(b, (size_t)K * N * 4, key);
    for (int s = 0; s < SLOTS; s++) {
        if (cache[s].c && cache[s].key == key && cache[s].M == M && cache[s].N == N &&
            cache[s].K == K) {
            memcpy(c, cache[s].c, (size_t)M * N * sizeof *c);
            return;
        }
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++)
                sum += a[i * K + k] * b[k * N + j];
            c[i * N + j] = sum;
        }
    int s = next++ % SLOTS;
    free(cache[s].c);
    if (!(cache[s].c = malloc((size_t)M * N * sizeof *c + 1)))
        return;
    memcpy(cache[s].c, c, (size_t)M * N * sizeof *c);
    cache[s].key = key, cache[s].M = M, cache[s].N = N, cache[s].K = K;
}
