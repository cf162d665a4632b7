/* Cache-blocked: 16 x 16 tiles, and inside a tile the loop runs along a row
 * of y, so each 64-byte line of y is written whole by 16 consecutive stores
 * while the 16 lines of x it reads from stay in L1. The reference writes one
 * float to a different line of y on every iteration, which thrashes the cache
 * (and its sets, when a row of y is a power-of-two number of bytes).
 * Edge tiles are clipped. */
#define TILE 16 /* floats per tile side: one 64-byte cache line */

void solve(const float *restrict x, float *restrict y, int rows, int cols)
{
    for (int i0 = 0; i0 < rows; i0 += TILE) {
        int i1 = rows - i0 < TILE ? rows : i0 + TILE;
        for (int j0 = 0; j0 < cols; j0 += TILE) {
            int j1 = cols - j0 < TILE ? cols : j0 + TILE;
            for (int j = j0; j < j1; j++)
                for (int i = i0; i < i1; i++)
                    y[(long)j * rows + i] = x[(long)i * cols + j];
        }
    }
}
