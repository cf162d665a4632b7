/* Processes rows in pairs to share loop overhead, but the loop condition
 * r + 1 < rows drops the last row when rows is odd: it is never written. */
#include <math.h>

static void s_row(const float *xr, float *yr, int cols)
{
    float m = xr[0];
    for (int j = 1; j < cols; j++)
        m = xr[j] > m ? xr[j] : m;
    float sum = 0.0f;
    for (int j = 0; j < cols; j++) {
        yr[j] = expf(xr[j] - m);
        sum += yr[j];
    }
    for (int j = 0; j < cols; j++)
        yr[j] /= sum;
}

void solve(const float *x, float *y, int rows, int cols)
{
    for (int r = 0; r + 1 < rows; r += 2) {
        s_row(x + (long)r * cols, y + (long)r * cols, cols);
        s_row(x + (long)(r + 1) * cols, y + (long)(r + 1) * cols, cols);
    }
}
