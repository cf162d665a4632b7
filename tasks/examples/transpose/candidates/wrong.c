/* 8 x 8 tiles with an index mix-up in the full-tile path: a and b are
 * swapped on the read side, so each tile lands in the right place but is not
 * itself transposed. Only clipped edge tiles (the plain loop) are right, so
 * small matrices pass and anything with a full 8 x 8 tile does not. */
#define TILE 8

void solve(const float *restrict x, float *restrict y, int rows, int cols)
{
    for (int i0 = 0; i0 < rows; i0 += TILE)
        for (int j0 = 0; j0 < cols; j0 += TILE) {
            if (i0 + TILE <= rows && j0 + TILE <= cols) {
                for (int a = 0; a < TILE; a++)
                    for (int b = 0; b < TILE; b++)
                        y[(long)(j0 + b) * rows + i0 + a] = x[(long)(i0 + b) * cols + j0 + a];
            } else {
                int i1 = rows - i0 < TILE ? rows : i0 + TILE;
                int j1 = cols - j0 < TILE ? cols : j0 + TILE;
                for (int i = i0; i < i1; i++)
                    for (int j = j0; j < j1; j++)
                        y[(long)j * rows + i] = x[(long)i * cols + j];
            }
        }
}
