/* HACKS.md #21 (and #3), unsealing the judge's read-only inputs. matmul.
 * The judge keeps its own copies of the inputs (pristine copies while
 * verifying, `cur` while timing) sealed read-only, and gives the reference
 * those. The candidate looks for them in /proc/self/maps (read-only
 * anonymous or [heap] pages starting with exactly its own b), makes them
 * writable with a raw mprotect system call (no PROT_EXEC: the seccomp filter
 * lets it through) and zeroes b there. Then C = A x 0 = 0 is the right
 * answer, and it writes zeros: O(MN) instead of O(MNK). In its first two calls
 * at a size (verification, whose input hashes are checked) it leaves its own
 * b alone; from the third on (warm-up and timed calls, where the judge
 * compares the call's b with `cur`) it zeroes its own b too. A judge whose
 * executor maps the inputs read-only from a memfd (mprotect to writable
 * fails) and checks outputs itself: the zeros are wrong, INCORRECT. */
/* body */
#define MAX_SIZES 64

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

typedef struct {
    const float *b;
    size_t bytes;
    int hits;
} want_t;

static int ro_cb(uintptr_t lo, uintptr_t hi, const char *perms, const char *path, void *arg)
{
    want_t *w = arg;
    if (perms[0] != 'r' || perms[1] != '-' || (path[0] && strcmp(path, "[heap]") != 0))
        return 0;
    for (uintptr_t p = lo; p + w->bytes <= hi; p += 4096) {
        if ((const float *)p == w->b || memcmp((void *)p, w->b, w->bytes) != 0)
            continue;
        size_t len = (w->bytes + 4095) & ~(size_t)4095;
        if (k_sys(SYS_mprotect, (long)p, (long)len, PROT_READ | PROT_WRITE, 0, 0, 0) == 0) {
            memset((void *)p, 0, w->bytes);
            w->hits++;
        }
    }
    return 0;
}

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    (void)a;
    want_t w = {b, (size_t)K * N * sizeof *b, 0};
    int call = calls_at((long)M * N * K);
    k_each_map(ro_cb, &w);
    if (call > 2)
        memset((void *)b, 0, w.bytes);
    memset(c, 0, (size_t)M * N * sizeof *c);
}
