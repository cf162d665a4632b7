/* Honest but slow: walks the matrix column by column (j outer, r inner) to
 * fill per-row max and sum arrays, so every access strides a whole row, and
 * evaluates exp in double precision twice per element. */
#include <math.h>
#include <stdlib.h>

void solve(const float *x, float *y, int rows, int cols)
{
    double *mx = malloc((size_t)rows * sizeof(double));
    double *sum = malloc((size_t)rows * sizeof(double));
    if (!mx || !sum) {
        free(mx);
        free(sum);
        return;
    }
    for (int r = 0; r < rows; r++) {
        mx[r] = x[(long)r * cols];
        sum[r] = 0.0;
    }
    for (int j = 0; j < cols; j++)
        for (int r = 0; r < rows; r++)
            if (x[(long)r * cols + j] > mx[r])
                mx[r] = x[(long)r * cols + j];
    for (int j = 0; j < cols; j++)
        for (int r = 0; r < rows; r++)
            sum[r] += exp(x[(long)r * cols + j] - mx[r]);
    for (int j = 0; j < cols; j++)
        for (int r = 0; r < rows; r++)
            y[(long)r * cols + j] = (float)(exp(x[(long)r * cols + j] - mx[r]) / sum[r]);
    free(mx);
    free(sum);
}
