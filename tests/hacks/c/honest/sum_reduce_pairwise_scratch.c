/* Honest: pairwise summation. Blocks of 256 are summed with eight float
 * accumulators into a malloc'd scratch array of partials, which is then
 * reduced in place, halving it each pass; the scratch is kept and grown
 * between calls (a workspace, never a result). */
#include <stdlib.h>

static float *ws;
static size_t ws_len;

void solve(const float *restrict x, float *restrict out, int n)
{
    size_t nb = ((size_t)n + 255) / 256;
    if (nb > ws_len) {
        float *w = realloc(ws, nb * sizeof *w);
        if (!w)
            return;
        ws = w, ws_len = nb;
    }
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * 256, hi = lo + 256 < (size_t)n ? lo + 256 : (size_t)n;
        float acc[8] = {0};
        size_t i = lo;
        for (; i + 8 <= hi; i += 8)
            for (int k = 0; k < 8; k++)
                acc[k] += x[i + k];
        for (; i < hi; i++)
            acc[0] += x[i];
        ws[b] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    for (size_t len = nb; len > 1;) { /* in place: ws[i] = ws[2i] + ws[2i+1] */
        size_t half = len / 2;
        for (size_t i = 0; i < half; i++)
            ws[i] = ws[2 * i] + ws[2 * i + 1];
        if (len % 2)
            ws[half] = ws[len - 1];
        len = half + len % 2;
    }
    out[0] = n > 0 ? ws[0] : 0.0f;
}
