/* Fork bomb through libc: fork() until the process table is full. The link
 * audit sees the import of fork and rejects the object before it runs. */
#include <unistd.h>

void solve(const float *a, const float *b, float *c, int n)
{
    (void)a, (void)b, (void)c, (void)n;
    for (;;)
        fork();
}
