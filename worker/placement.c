/* placement.c — see placement.h (the cr_placement_ module). */
#include "placement.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* 1 when GPU c is joined to the first k members of group g. */
static int s_joined_all(int n, const unsigned char *joined, const int *g, int k, int c)
{
    for (int i = 0; i < k; i++)
        if (!joined[g[i] * n + c])
            return 0;
    return 1;
}

int cr_placement_groups(int n, int per, const unsigned char *joined, int *groups, int *nvlink,
                        char *err, size_t errlen)
{
    if (n < 1 || per < 1 || per > n || n % per) {
        snprintf(err, errlen, "%d GPU%s cannot be split into groups of %d: the list must hold "
                 "a multiple of --gpus-per-worker", n, n == 1 ? "" : "s", per);
        return -EINVAL;
    }
    unsigned char used[64] = {0};
    if (n > 64) {
        snprintf(err, errlen, "%d GPUs: at most 64 are grouped", n);
        return -EINVAL;
    }
    int ng = n / per;
    for (int gi = 0; gi < ng; gi++) {
        int *g = groups + gi * per, k = 0;
        for (int c = 0; c < n && !k; c++)
            if (!used[c])
                used[g[k++] = c] = 1;
        nvlink[gi] = 1;
        while (k < per) {
            int pick = -1;
            for (int c = 0; c < n && pick < 0; c++)
                if (!used[c] && s_joined_all(n, joined, g, k, c))
                    pick = c;
            if (pick < 0) { /* nobody left is joined to all: the lowest left */
                nvlink[gi] = 0;
                for (int c = 0; c < n && pick < 0; c++)
                    if (!used[c])
                        pick = c;
            }
            used[g[k++] = pick] = 1;
        }
    }
    return ng;
}
