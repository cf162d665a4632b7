/* transpose reference: y (cols x rows) = transpose of x (rows x cols), both
 * row-major: y[j][i] = x[i][j]. */
void solve(const float *x, float *y, int rows, int cols)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            y[j * rows + i] = x[i * cols + j];
}
