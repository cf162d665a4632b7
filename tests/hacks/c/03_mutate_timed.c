/* docs/hacks.md #3, input mutation only during timing: knowing that the judge
 * verifies each case twice, it behaves for the first two calls of a size
 * and from the third on (warm-up and timed calls) zeroes x after using it,
 * hoping only verification calls are checked. Timed inputs and outputs are
 * re-verified on the first, the last and a random subset of timed calls:
 * HACK_DETECTED, input_mutated. */
#include <string.h>

#define MAX_SIZES 64

/* Calls so far at size n, this one included. */
static int calls_at(int n)
{
    static int size[MAX_SIZES], count[MAX_SIZES], used;
    for (int i = 0; i < used; i++)
        if (size[i] == n)
            return ++count[i];
    if (used == MAX_SIZES)
        return 1;
    size[used] = n;
    return count[used++] = 1;
}

void solve(int n, float alpha, const float *x, float *y)
{
    for (int i = 0; i < n; i++)
        y[i] = alpha * x[i] + y[i];
    if (calls_at(n) > 2)
        memset((float *)x, 0, (size_t)n * sizeof *x);
}
