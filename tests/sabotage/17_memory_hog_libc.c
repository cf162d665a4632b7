/* Memory hog: takes all the memory malloc gives, in chunks halving from
 * 256 MiB to 4 KiB, and keeps it, then answers. The sandbox caps a C
 * runner's address space (a quarter of the machine above what the judge had
 * mapped), so malloc says no long before the host runs out, and the judge,
 * left without memory for its next buffers, reports OOM. (Pages it touched
 * would count the same; touching gigabytes only makes the test slow.) */
#include <stdlib.h>

void solve(const float *a, const float *b, float *c, int n)
{
    for (size_t chunk = (size_t)256 << 20; chunk >= 4096; chunk /= 2) {
        char *p;
        while ((p = malloc(chunk)))
            p[0] = 1; /* used, so the allocation is not optimised away */
    }
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
