/* docs/hacks.md #8, background thread: computes the first half and hands the
 * second half to a detached thread, returning before it is done, so the
 * timer stops early. The task allows no threads, and the link audit sees
 * pthread_create imported: HACK_DETECTED, link_audit (without the audit the
 * thread count after the call gives background_thread). */
#include <pthread.h>
#include <stdlib.h>

struct job {
    const float *a, *b;
    float *c;
    int lo, hi;
};

static void *work(void *p)
{
    struct job *j = p;
    for (int i = j->lo; i < j->hi; i++)
        j->c[i] = j->a[i] + j->b[i];
    free(j);
    return NULL;
}

void solve(const float *a, const float *b, float *c, int n)
{
    int half = n / 2;
    for (int i = 0; i < half; i++)
        c[i] = a[i] + b[i];
    struct job *j = malloc(sizeof *j);
    pthread_t t;
    if (!j)
        return;
    *j = (struct job){a, b, c, half, n};
    if (pthread_create(&t, NULL, work, j) == 0)
        pthread_detach(t);
    else
        work(j);
}
