/* Blocked sum: 8 independent float accumulators (the compiler packs them
 * into vector registers) over blocks of 4096 elements, each block's partial
 * added into a double. The 8 lanes break the single add-latency chain of the
 * reference, and the double across blocks keeps the error as small as a
 * pairwise sum. */
#define BLOCK 4096 /* elements per float partial: error grows with block length */

void solve(const float *restrict x, float *restrict out, int n)
{
    double total = 0.0;
    int i = 0;
    while (i < n) {
        int end = n - i < BLOCK ? n : i + BLOCK;
        float acc[8] = {0};
        for (; i + 8 <= end; i += 8)
            for (int k = 0; k < 8; k++)
                acc[k] += x[i + k];
        float part = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (; i < end; i++)
            part += x[i];
        total += part;
    }
    out[0] = (float)total;
}
