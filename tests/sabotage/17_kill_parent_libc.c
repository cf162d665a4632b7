/* Kills its parent, the worker, with SIGKILL through libc. The link audit
 * sees the import of kill and rejects the object before it runs. */
#include <signal.h>
#include <unistd.h>

void solve(const float *a, const float *b, float *c, int n)
{
    kill(getppid(), SIGKILL);
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
