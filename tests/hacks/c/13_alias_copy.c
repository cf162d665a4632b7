/* docs/hacks.md #13, output aliasing: hands back the input as the output (a
 * plain copy), correct only for inputs the operation leaves alone. The
 * judge's outputs are its own buffers and a transpose of random data is not
 * the identity: INCORRECT. */
#include <string.h>

void solve(const float *x, float *y, int rows, int cols)
{
    memcpy(y, x, (size_t)rows * cols * sizeof *y);
}
