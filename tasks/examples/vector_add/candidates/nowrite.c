/* Unrolled by 8 and the remainder loop was forgotten: the last n % 8
 * elements of c are never written. */
void solve(const float *restrict a, const float *restrict b, float *restrict c, int n)
{
    for (int i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            c[i + k] = a[i + k] + b[i + k];
}
