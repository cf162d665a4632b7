/* Honest but slow: one thread per row walks its row three times (max, sum,
 * write). Neighbouring threads read addresses a row apart: no coalescing. */
__global__ static void softmax_rowwise(const float *x, float *y, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows)
        return;
    const float *r = x + (size_t)i * cols;
    float *o = y + (size_t)i * cols;
    float m = r[0];
    for (int j = 1; j < cols; j++)
        m = fmaxf(m, r[j]);
    float s = 0;
    for (int j = 0; j < cols; j++)
        s += expf(r[j] - m);
    for (int j = 0; j < cols; j++)
        o[j] = expf(r[j] - m) / s;
}

void solve(const float *x, float *y, int rows, int cols)
{
    softmax_rowwise<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
