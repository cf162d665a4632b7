/* Honest: 32 x 32 tiles walked so both x and y stay in cache, each tile
 * transposed in 4 x 4 register blocks with _MM_TRANSPOSE4_PS; the edges
 * that do not fill a 4 x 4 block are copied one element at a time. */
#include <xmmintrin.h>

#define T 32

void solve(const float *restrict x, float *restrict y, int rows, int cols)
{
    int r4 = rows / 4 * 4, c4 = cols / 4 * 4;
    for (int i0 = 0; i0 < r4; i0 += T)
        for (int j0 = 0; j0 < c4; j0 += T) {
            int iend = i0 + T < r4 ? i0 + T : r4, jend = j0 + T < c4 ? j0 + T : c4;
            for (int i = i0; i < iend; i += 4)
                for (int j = j0; j < jend; j += 4) {
                    __m128 r0 = _mm_loadu_ps(x + (long)i * cols + j);
                    __m128 r1 = _mm_loadu_ps(x + (long)(i + 1) * cols + j);
                    __m128 r2 = _mm_loadu_ps(x + (long)(i + 2) * cols + j);
                    __m128 r3 = _mm_loadu_ps(x + (long)(i + 3) * cols + j);
                    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                    _mm_storeu_ps(y + (long)j * rows + i, r0);
                    _mm_storeu_ps(y + (long)(j + 1) * rows + i, r1);
                    _mm_storeu_ps(y + (long)(j + 2) * rows + i, r2);
                    _mm_storeu_ps(y + (long)(j + 3) * rows + i, r3);
                }
        }
    for (int i = 0; i < rows; i++) /* right strip */
        for (int j = c4; j < cols; j++)
            y[(long)j * rows + i] = x[(long)i * cols + j];
    for (int i = r4; i < rows; i++) /* bottom strip */
        for (int j = 0; j < c4; j++)
            y[(long)j * rows + i] = x[(long)i * cols + j];
}
