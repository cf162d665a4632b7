/* docs/hacks.md #17, crash (the one simple case here; tests/sabotage/ has the
 * hostile ones): writes through a null pointer on large inputs. The runner
 * dies, the worker survives and reports it: RUNTIME_ERROR. */
void solve(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0;
    if (n > 1000)
        *(volatile float *)0 = y[0];
}
