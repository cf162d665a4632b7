/* Disk filler: writes 4 MiB files into its working directory (the job's
 * scratch dir) and into /dev/shm until a write fails, then answers right.
 * Both are private tmpfs of 64 MiB in the runner's mount namespace: the
 * writes end at ENOSPC, nothing reaches the disk or the host's /dev/shm, and
 * it all vanishes with the runner. */
#include <stdio.h>

static char s_chunk[1 << 20];

static void s_fill(const char *dir)
{
    char name[256];
    for (int f = 0; f < 100000; f++) {
        snprintf(name, sizeof name, "%s/crucible-sabotage-fill-%d", dir, f);
        FILE *fp = fopen(name, "w");
        if (!fp)
            return;
        int ok = 1;
        for (int i = 0; i < 4 && ok; i++)
            ok = fwrite(s_chunk, 1, sizeof s_chunk, fp) == sizeof s_chunk;
        if (fclose(fp) != 0 || !ok)
            return;
    }
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int filled;
    if (!filled) {
        filled = 1;
        s_fill(".");
        s_fill("/dev/shm");
    }
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
