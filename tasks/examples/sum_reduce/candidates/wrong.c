/* Sums 8 lanes at a time and forgets the remainder loop: the last n % 8
 * elements are dropped (all of them when n < 8). */
void solve(const float *restrict x, float *restrict out, int n)
{
    float acc[8] = {0};
    for (int i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += x[i + k];
    out[0] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
