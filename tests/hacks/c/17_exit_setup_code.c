/* docs/hacks.md #17, crash, dressed as the judge's problem: the executor's
 * own "could not start" exit status (88, CR_EXEC_EXIT_SETUP) from inside the
 * call, once the object is loaded and the executor ready. Read as a setup
 * failure it was INFRA_ERROR: no reward at all instead of a zero (a trainer
 * drops the sample), the job retried, the worker counted towards draining.
 * After READY an exit is the candidate's (exec.c s_ended): RUNTIME_ERROR. */
#include <unistd.h>

void solve(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0;
    if (n > 1000)
        _exit(88);
}
