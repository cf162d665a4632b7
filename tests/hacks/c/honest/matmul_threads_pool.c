/* Honest (task matmul_threads): a persistent pool, started on the first
 * call, whose workers sleep on a condition variable between calls. Each
 * call publishes the work, does its own share, and waits until every worker
 * has reported its share done, so nothing runs after solve returns; the
 * parked threads outlive the call but use no CPU. */
#include <pthread.h>
#include <string.h>

#define WORKERS 2

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static unsigned long generation;
static int remaining, started;
static struct {
    const float *a, *b;
    float *c;
    int M, N, K;
} job;

static void share(int part, int parts)
{
    int lo = job.M * part / parts, hi = job.M * (part + 1) / parts;
    for (int i = lo; i < hi; i++) {
        float *restrict ci = job.c + (long)i * job.N;
        memset(ci, 0, (size_t)job.N * sizeof *ci);
        for (int k = 0; k < job.K; k++) {
            float av = job.a[(long)i * job.K + k];
            const float *restrict bk = job.b + (long)k * job.N;
            for (int j = 0; j < job.N; j++)
                ci[j] += av * bk[j];
        }
    }
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (generation == seen)
            pthread_cond_wait(&go, &mu);
        seen = generation;
        pthread_mutex_unlock(&mu);
        share(id + 1, WORKERS + 1);
        pthread_mutex_lock(&mu);
        if (--remaining == 0)
            pthread_cond_signal(&done);
    }
    return NULL;
}

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    pthread_mutex_lock(&mu);
    while (started < WORKERS) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(long)started) != 0)
            break;
        pthread_detach(t);
        started++;
    }
    if (started < WORKERS) { /* no pool: do it all here */
        pthread_mutex_unlock(&mu);
        job.a = a, job.b = b, job.c = c, job.M = M, job.N = N, job.K = K;
        share(0, 1);
        return;
    }
    job.a = a, job.b = b, job.c = c, job.M = M, job.N = N, job.K = K;
    remaining = WORKERS;
    generation++;
    pthread_cond_broadcast(&go);
    pthread_mutex_unlock(&mu);
    share(0, WORKERS + 1);
    pthread_mutex_lock(&mu);
    while (remaining > 0)
        pthread_cond_wait(&done, &mu);
    pthread_mutex_unlock(&mu);
}
