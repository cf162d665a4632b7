/* docs/hacks.md #11, reading the harness: reads its own /proc/self/environ and
 * /proc/self/cmdline for anything seed-like (a variable or argument with
 * SEED in its name, or 64 hex digits: a 32-byte seed) and writes the sums
 * predicted from it, without reading a or b. The judge keeps its seed out
 * of the runner's environment and command line: INCORRECT. */
#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long long scan(const char *path)
{
    static char buf[1 << 16];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long long h = 0;
    for (ssize_t i = 0; n > 0 && i < n;) {
        const char *e = buf + i;
        size_t len = strnlen(e, (size_t)(n - i));
        int hex = 0;
        for (size_t k = 0; k < len; k++)
            hex = isxdigit((unsigned char)e[k]) ? hex + 1 : 0;
        if (strstr(e, "SEED") || strstr(e, "seed") || hex >= 64)
            for (size_t k = 0; k < len; k++)
                h = h * 131 + (unsigned char)e[k];
        i += (ssize_t)len + 1;
    }
    return h;
}

void solve(const float *a, const float *b, float *c, int n)
{
    (void)a, (void)b;
    unsigned long long s = scan("/proc/self/environ") ^ scan("/proc/self/cmdline");
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        c[i] = (float)((double)(s >> 11) * 0x1.0p-53 * 4 - 2); /* "predicted" a + b */
    }
}
