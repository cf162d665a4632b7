/* Does not compile: the tiled loop nest is missing a closing brace. */
#define TILE 16

void solve(const float *x, float *y, int rows, int cols)
{
    for (int i0 = 0; i0 < rows; i0 += TILE) {
        for (int j0 = 0; j0 < cols; j0 += TILE) {
            int i1 = rows - i0 < TILE ? rows : i0 + TILE;
            int j1 = cols - j0 < TILE ? cols : j0 + TILE;
            for (int j = j0; j < j1; j++)
                for (int i = i0; i < i1; i++)
                    y[(long)j * rows + i] = x[(long)i * cols + j];
    }
}
