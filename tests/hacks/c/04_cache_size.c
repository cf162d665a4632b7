/* docs/hacks.md #4, caching keyed by size: computes the first call of each n and
 * returns that sum for every later call of the same n. The judge's second
 * verification run draws new values: INCORRECT, second_run_mismatch. */
#define MAX_SIZES 64

static struct {
    int n;
    float sum;
} memo[MAX_SIZES];
static int nmemo;

void solve(const float *x, float *out, int n)
{
    for (int i = 0; i < nmemo; i++) {
        if (memo[i].n == n) {
            out[0] = memo[i].sum;
            return;
        }
    }
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
    if (nmemo < MAX_SIZES)
        memo[nmemo].n = n, memo[nmemo++].sum = (float)s;
}
