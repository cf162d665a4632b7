/* Honest (task matmul_threads, which allows threads): rows split among up
 * to 4 pthreads, each running an i-k-j loop with a 16-wide vector row
 * accumulator; every thread is joined before solve returns. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 4

struct part {
    const float *a, *b;
    float *c;
    int lo, hi, N, K;
};

static void *rows(void *p)
{
    const struct part *w = p;
    for (int i = w->lo; i < w->hi; i++) {
        float *restrict ci = w->c + (long)i * w->N;
        memset(ci, 0, (size_t)w->N * sizeof *ci);
        for (int k = 0; k < w->K; k++) {
            float av = w->a[(long)i * w->K + k];
            const float *restrict bk = w->b + (long)k * w->N;
            for (int j = 0; j < w->N; j++)
                ci[j] += av * bk[j];
        }
    }
    return NULL;
}

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (int)cpus;
    if (M < 2 * nt)
        nt = 1; /* tiny: a thread costs more than the work */
    pthread_t tid[MAX_THREADS];
    struct part part[MAX_THREADS];
    int started = 0;
    for (int t = 0; t < nt; t++) {
        part[t] = (struct part){a, b, c, M * t / nt, M * (t + 1) / nt, N, K};
        if (t > 0 && pthread_create(&tid[t], NULL, rows, &part[t]) == 0)
            started |= 1 << t;
        else if (t > 0)
            rows(&part[t]); /* could not start one: do its share here */
    }
    rows(&part[0]);
    for (int t = 1; t < nt; t++)
        if (started & (1 << t))
            pthread_join(tid[t], NULL);
}
