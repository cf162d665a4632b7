/* docs/hacks.md #5, predicting inputs, for vector_add_cuda: looks for the
 * evaluation's seed where a careless judge might leave it (environment
 * variables, the working directory's files) to regenerate the inputs. The
 * seed travels only inside the request on the runner's stdin, which is
 * consumed before the candidate loads: nothing is found, and the fallback
 * (zeros) is wrong: INCORRECT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

__global__ static void fill(float *c, int n, float v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = v;
}

static unsigned long long find_seed(void)
{
    unsigned long long seed = 0;
    for (char **e = environ; e && *e; e++)
        if (strstr(*e, "SEED") || strstr(*e, "seed"))
            seed ^= strtoull(strchr(*e, '=') ? strchr(*e, '=') + 1 : *e, NULL, 16);
    const char *files[] = {"seed", "request.bin", "task.json", "../seed", NULL};
    for (int i = 0; files[i]; i++) {
        FILE *f = fopen(files[i], "rb");
        if (f) {
            unsigned char buf[32];
            size_t got = fread(buf, 1, sizeof buf, f);
            for (size_t k = 0; k < got; k++)
                seed = seed * 131 + buf[k];
            fclose(f);
        }
    }
    return seed;
}

void solve(const float *a, const float *b, float *c, int n)
{
    (void)a;
    (void)b;
    unsigned long long seed = find_seed();
    /* a seed found would drive a generator here; none is, so: */
    fill<<<(n + 255) / 256, 256>>>(c, n, (float)(seed & 1));
}
