/* docs/hacks.md #8, background thread where threads are allowed: computes the
 * top half of c and hands the bottom half to a detached thread, returning
 * while it still works, so the timer stops at half the work. The task
 * allows threads, so counting them proves nothing; the judge instead
 * measures the CPU the candidate's threads use after the call returned:
 * HACK_DETECTED, background_thread. */
#include <pthread.h>
#include <stdlib.h>

struct job {
    const float *a, *b;
    float *c;
    int lo, hi, N, K;
};

static void rows(const struct job *j)
{
    for (int i = j->lo; i < j->hi; i++)
        for (int n = 0; n < j->N; n++) {
            float s = 0.0f;
            for (int k = 0; k < j->K; k++)
                s += j->a[i * j->K + k] * j->b[k * j->N + n];
            j->c[i * j->N + n] = s;
        }
}

static void *work(void *p)
{
    rows(p);
    free(p);
    return NULL;
}

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    struct job top = {a, b, c, 0, M / 2, N, K};
    struct job *bottom = malloc(sizeof *bottom);
    pthread_t t;
    rows(&top);
    if (!bottom)
        return;
    *bottom = (struct job){a, b, c, M / 2, M, N, K};
    if (pthread_create(&t, NULL, work, bottom) == 0)
        pthread_detach(t);
    else
        work(bottom);
}
