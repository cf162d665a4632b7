/* restrict tells the compiler a, b and c do not overlap, so it can vectorise
 * without run-time overlap checks; the loop is unrolled by 8 with a tail. */
void solve(const float *restrict a, const float *restrict b, float *restrict c, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        c[i + 0] = a[i + 0] + b[i + 0];
        c[i + 1] = a[i + 1] + b[i + 1];
        c[i + 2] = a[i + 2] + b[i + 2];
        c[i + 3] = a[i + 3] + b[i + 3];
        c[i + 4] = a[i + 4] + b[i + 4];
        c[i + 5] = a[i + 5] + b[i + 5];
        c[i + 6] = a[i + 6] + b[i + 6];
        c[i + 7] = a[i + 7] + b[i + 7];
    }
    for (; i < n; i++)
        c[i] = a[i] + b[i];
}
