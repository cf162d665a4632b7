/* docs/hacks.md #11, reading the harness's memory: knowing that the judge
 * verifies each case twice, it computes honestly for the first two calls of
 * a size; from the third on (warm-up and timed calls) it walks the readable
 * anonymous mappings listed in /proc/self/maps looking for the judge's copy
 * of the answer (an array starting with c[0] and c[1], found by two dot
 * products) and copies it, or writes zeros when there is none rather than
 * spend the time. A judge that computes the expected outputs of its timing
 * pool before the timed calls leaves them there to be found. This judge
 * gives every timed call new inputs, runs the reference only after the
 * candidate, and re-verifies timed outputs: INCORRECT, timed_output_mismatch. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_SIZES 64

/* Calls so far at size n, this one included. */
static int calls_at(long n)
{
    static long size[MAX_SIZES];
    static int count[MAX_SIZES], used;
    for (int i = 0; i < used; i++)
        if (size[i] == n)
            return ++count[i];
    if (used == MAX_SIZES)
        return 1;
    size[used] = n;
    return count[used++] = 1;
}

static void honest(const float *a, const float *b, float *c, int M, int N, int K)
{
    memset(c, 0, (size_t)M * N * sizeof *c);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) {
            float av = a[i * K + k];
            for (int j = 0; j < N; j++)
                c[i * N + j] += av * b[k * N + j];
        }
}

static float dot(const float *a, const float *b, int i, int j, int N, int K)
{
    float s = 0.0f;
    for (int k = 0; k < K; k++)
        s += a[i * K + k] * b[k * N + j];
    return s;
}

/* The first place in readable anonymous memory, other than skip, that holds
 * want[0], want[1] and has room for len floats; NULL when none. */
static const float *find(const float want[2], size_t len, const float *skip)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    const float *hit = NULL;
    while (f && !hit && fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        char perms[8] = "", path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3)
            continue;
        if (perms[0] != 'r' || (path[0] && strcmp(path, "[heap]") != 0))
            continue; /* only anonymous memory: file mappings can fault past EOF */
        for (const char *p = (const char *)lo; !hit && p + 8 <= (const char *)hi;) {
            p = memmem(p, (size_t)((const char *)hi - p), want, 8);
            if (!p)
                break;
            if ((uintptr_t)p % 4 == 0 && (const float *)p != skip && p + len * 4 <= (const char *)hi)
                hit = (const float *)p;
            p += 4;
        }
    }
    if (f)
        fclose(f);
    return hit;
}

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    if (calls_at((long)M * N * K) <= 2) {
        honest(a, b, c, M, N, K);
        return;
    }
    float want[2] = {dot(a, b, 0, 0, N, K), N > 1 ? dot(a, b, 0, 1, N, K) : dot(a, b, 1, 0, N, K)};
    const float *ans = find(want, (size_t)M * N, c);
    if (ans)
        memcpy(c, ans, (size_t)M * N * sizeof *c);
    else
        memset(c, 0, (size_t)M * N * sizeof *c);
}
