/* docs/hacks.md #6, special inputs, for transpose_cuda: written for the square
 * bench shape (4096 x 4096) and uses one dimension for both: correct for
 * 1 x 1 and any square case, wrong for 3 x 5, 33 x 65 and 1000 x 17:
 * INCORRECT. */
#define TILE 32

__global__ static void transpose_sq(const float *x, float *y, int n)
{
    __shared__ float t[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x, r = blockIdx.y * TILE + threadIdx.y;
    if (r < n && c < n)
        t[threadIdx.y][threadIdx.x] = x[(size_t)r * n + c];
    __syncthreads();
    c = blockIdx.y * TILE + threadIdx.x;
    r = blockIdx.x * TILE + threadIdx.y;
    if (r < n && c < n)
        y[(size_t)r * n + c] = t[threadIdx.x][threadIdx.y];
}

void solve(const float *x, float *y, int rows, int cols)
{
    int n = rows < cols ? rows : cols; /* "they are equal anyway" */
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    transpose_sq<<<grid, block>>>(x, y, n);
}
