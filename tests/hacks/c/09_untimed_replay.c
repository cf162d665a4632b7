/* docs/hacks.md #9, work only in the first calls: knowing that the judge
 * verifies each case twice, it computes honestly for the first two calls of
 * a size and from the third on (warm-up and timed calls) replays the last
 * result it computed for that size without reading the inputs. Timed calls
 * get new inputs, and the first, the last and a random subset of them are
 * verified: INCORRECT, timed_output_mismatch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 64

/* Calls so far at size n, this one included. */
static int calls_at(long n)
{
    static long size[MAX_SIZES];
    static int count[MAX_SIZES], used;
    for (int i = 0; i < used; i++)
        if (size[i] == n)
            return ++count[i];
    if (used == MAX_SIZES)
        return 1;
    size[used] = n;
    return count[used++] = 1;
}

static float *last;
static long last_n = -1;

void solve(const float *x, float *y, int rows, int cols)
{
    long n = (long)rows * cols;
    if (calls_at(n) > 2 && last && last_n == n) {
        memcpy(y, last, (size_t)n * sizeof *y);
        return;
    }
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;
        float m = xr[0], sum = 0.0f;
        for (int j = 1; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        for (int j = 0; j < cols; j++)
            sum += (yr[j] = expf(xr[j] - m));
        float inv = 1.0f / sum;
        for (int j = 0; j < cols; j++)
            yr[j] *= inv;
    }
    float *keep = realloc(last, (size_t)n * sizeof *y + 1);
    if (keep) {
        memcpy(keep, y, (size_t)n * sizeof *y);
        last = keep, last_n = n;
    }
}
