/* docs/hacks.md #8, background thread, for vector_add_cuda: pthread_create, and
 * the thread launches the kernel after solve() returned. The task allows
 * no threads: HACK_DETECTED, link_audit (imports pthread_create). */
#include <pthread.h>

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static struct job {
    const float *a, *b;
    float *c;
    int n;
} job;

static void *work(void *arg)
{
    struct job *j = (struct job *)arg;
    add<<<(j->n + 255) / 256, 256>>>(j->a, j->b, j->c, j->n);
    cudaDeviceSynchronize();
    return NULL;
}

void solve(const float *a, const float *b, float *c, int n)
{
    job.a = a;
    job.b = b;
    job.c = c;
    job.n = n;
    pthread_t t;
    if (pthread_create(&t, NULL, work, &job) == 0)
        pthread_detach(t);
}
