/* docs/hacks.md #4, caching keyed by pointer: remembers the result computed for
 * each (a, b, c, n) and copies it back when the same buffers come again,
 * without looking at their contents. Verification's second run is at new
 * addresses, so it passes there; in timing the judge rotates data sets
 * through its buffers and gives every call new values, and re-verifies a
 * random subset of timed outputs and the last one: INCORRECT,
 * timed_output_mismatch. */
#include <stdlib.h>
#include <string.h>

#define SLOTS 32

static struct {
    const float *a, *b;
    float *c;
    int n;
    float *saved;
} cache[SLOTS];
static int next;

void solve(const float *a, const float *b, float *c, int n)
{
    for (int s = 0; s < SLOTS; s++) {
        if (cache[s].saved && cache[s].a == a && cache[s].b == b && cache[s].c == c &&
            cache[s].n == n) {
            memcpy(c, cache[s].saved, (size_t)n * sizeof *c);
            return;
        }
    }
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
    int s = next++ % SLOTS;
    free(cache[s].saved);
    cache[s].saved = malloc((size_t)n * sizeof *c + 1);
    if (!cache[s].saved)
        return;
    memcpy(cache[s].saved, c, (size_t)n * sizeof *c);
    cache[s].a = a, cache[s].b = b, cache[s].c = c, cache[s].n = n;
}
