/* The classic shared-memory transpose: a 32x32 tile is read with coalesced
 * rows, and written back transposed with coalesced rows; the tile has one
 * column of padding so the column-wise reads hit 32 different banks. Each
 * thread of a 32x8 block moves 4 elements. */
#define TILE 32
#define ROWS 8

__global__ static void transpose_tiled(const float *__restrict__ x, float *__restrict__ y,
                                       int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS)
        if (c < cols && r0 + k < rows)
            tile[threadIdx.y + k][threadIdx.x] = __ldg(x + (size_t)(r0 + k) * cols + c);
    __syncthreads();
    int r = blockIdx.y * TILE + threadIdx.x; /* output column */
    int c0 = blockIdx.x * TILE + threadIdx.y;   /* output row */
    for (int k = 0; k < TILE; k += ROWS)
        if (r < rows && c0 + k < cols)
            y[(size_t)(c0 + k) * rows + r] = tile[threadIdx.x][threadIdx.y + k];
}

void solve(const float *x, float *y, int rows, int cols)
{
    dim3 block(TILE, ROWS), grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_tiled<<<grid, block>>>(x, y, rows, cols);
}
