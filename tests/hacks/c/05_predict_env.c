/* docs/hacks.md #5, predicting inputs: looks for the evaluation's seed in the
 * environment and in files around its working directory, and writes the
 * outputs predicted from it (a seed-0 guess when none is found), without
 * reading x. The judge's seed lives only in the runner's request, never in
 * its environment or on disk: INCORRECT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long find_seed(void)
{
    static const char *const vars[] = {"CRUCIBLE_SEED", "SEED", "CR_SEED", "RANDOM_SEED",
                                       "PYTHONHASHSEED", NULL};
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i]))
            return strtoull(getenv(vars[i]), NULL, 0);
    static const char *const files[] = {"seed", "../seed", "../../seed", ".seed",
                                        "/tmp/crucible-seed", NULL};
    for (int i = 0; files[i]; i++) {
        FILE *f = fopen(files[i], "r");
        unsigned long long s = 0;
        if (f && fscanf(f, "%llu", &s) == 1) {
            fclose(f);
            return s;
        }
        if (f)
            fclose(f);
    }
    return 0;
}

void solve(const float *x, float *y, int n)
{
    (void)x;
    unsigned long long s = find_seed() * 6364136223846793005ull + 1442695040888963407ull;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((double)(s >> 11) * 0x1.0p-53 * 2 - 1); /* predicted x[i] */
        y[i] = v > 0 ? v : 0;
    }
}
