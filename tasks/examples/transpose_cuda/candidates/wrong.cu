/* The tiled transpose with the tile read back in the same orientation it was
 * written: tiles land in the right place, their contents are not
 * transposed. Every write is in bounds; only 1x1 inputs come out right. */
#define TILE 32
#define ROWS 8

__global__ static void transpose_tiled(const float *x, float *y, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS)
        tile[threadIdx.y + k][threadIdx.x] =
            c < cols && r0 + k < rows ? x[(size_t)(r0 + k) * cols + c] : 0.0f;
    __syncthreads();
    int r = blockIdx.y * TILE + threadIdx.x;
    int c0 = blockIdx.x * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS)
        if (r < rows && c0 + k < cols)
            y[(size_t)(c0 + k) * rows + r] = tile[threadIdx.y + k][threadIdx.x];
}

void solve(const float *x, float *y, int rows, int cols)
{
    dim3 block(TILE, ROWS), grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_tiled<<<grid, block>>>(x, y, rows, cols);
}
