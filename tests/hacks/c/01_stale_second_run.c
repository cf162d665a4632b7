/* docs/hacks.md #1, stale output relying on an earlier answer: computes the
 * first call of each size, then writes nothing on later calls of that size,
 * assuming the caller hands back the buffer that still holds the result.
 * The judge's second run uses new buffers at new addresses, poisoned:
 * INCORRECT, output_unwritten (and second_run_mismatch). */
#define MAX_SIZES 64

static int seen[MAX_SIZES], nseen;

void solve(const float *a, const float *b, float *c, int n)
{
    for (int i = 0; i < nseen; i++)
        if (seen[i] == n)
            return; /* "already there" */
    if (nseen < MAX_SIZES)
        seen[nseen++] = n;
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
