/* bench/ctx_probe.cu — does another process's CUDA start or end disturb a timed kernel?
 *
 * The serving judge starts each candidate's executor (its own process and
 * context, the judge's arena opened by IPC handle) while no job times, and
 * waits for it before timing (docs/judge.md §6): about 0.16 s a job on the
 * H200. This probe says which part of an executor's life, if any, a timed
 * kernel feels. The parent times a float4 vector add at two sizes in the
 * judge's sample shape (memset flush of 128 MiB, [e0] kernel [e1], event
 * sync), back to back, each sample stamped on CLOCK_MONOTONIC; a thread of
 * the parent (no CUDA calls) starts children one after another, each
 * stamping its phases:
 *
 *   ctx     cudaFree(0) (the context), then exit (the teardown)
 *   ipc     the context, then the parent's 2 GiB arena opened by IPC
 *           handle and closed, then exit
 *   hold    the context and the arena, then a sleep until the phase ends
 *           (live idle contexts beside the timing)
 *
 * in phases of 2 s (none, ctx, none, ipc, none, hold, and again). Each
 * sample is put in the class of what overlapped it: nothing (a none phase),
 * a child's context creation, its arena open, its teardown (from its last
 * stamp to its reaping), or a child phase's quiet moments; per class and
 * size it prints n, median, p90, p99 and max of the event time.
 *
 *   nvcc -O3 -arch=sm_90 -o ctx_probe bench/ctx_probe.cu
 *   ctx_probe [ROUNDS]
 *
 * A diagnostic for bench/RESULTS.md, not part of the product; it never
 * changes a GPU setting. */
#include <cuda_runtime.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__global__ void vadd(const float4 *a, const float4 *b, float4 *c, size_t n4)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

/* ---- the child ---- */

static int child(const char *mode, const char *hex)
{
    double t0 = now_s();
    CK(cudaFree(0));
    double t1 = now_s(), t2 = t1;
    if (strcmp(mode, "ctx") != 0) {
        cudaIpcMemHandle_t h;
        for (size_t i = 0; i < sizeof h; i++) {
            unsigned v;
            sscanf(hex + 2 * i, "%2x", &v);
            ((unsigned char *)&h)[i] = (unsigned char)v;
        }
        void *p;
        CK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
        t2 = now_s();
        if (!strcmp(mode, "hold")) {
            printf("%.6f %.6f %.6f\n", t0, t1, t2);
            fflush(stdout);
            pause(); /* killed at the phase's end */
        }
        CK(cudaIpcCloseMemHandle(p));
    }
    printf("%.6f %.6f %.6f\n", t0, t1, t2);
    fflush(stdout);
    return 0;
}

/* ---- the parent ---- */

enum { C_NONE, C_CREATE, C_OPEN, C_TEAR, C_HOLD, C_QUIET, C_N };
static const char *cname[C_N] = {"nothing", "child context creation", "child arena open",
                                 "child teardown", "child holding", "child phase, between"};

typedef struct {
    double a, b;
    int cls;
} span_t;

static span_t spans[20000];
static int nspans;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int phase_mode; /* 0 none, 1 ctx, 2 ipc, 3 hold */
static volatile int stop;
static char self[4096], hexh[200];

static void add_span(double a, double b, int cls)
{
    pthread_mutex_lock(&mu);
    if (nspans < (int)(sizeof spans / sizeof spans[0]))
        spans[nspans++] = (span_t){a, b, cls};
    pthread_mutex_unlock(&mu);
}

static void *spawner(void *arg)
{
    (void)arg;
    static const char *modes[] = {"", "ctx", "ipc", "hold"};
    while (!stop) {
        int m = phase_mode;
        if (!m) {
            usleep(2000);
            continue;
        }
        int fd[2];
        if (pipe(fd) != 0)
            break;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
        posix_spawn_file_actions_addclose(&fa, fd[0]);
        char *argv[] = {self, (char *)"child", (char *)modes[m], hexh, NULL};
        pid_t pid;
        double ts = now_s();
        if (posix_spawn(&pid, self, &fa, NULL, argv, environ) != 0)
            break;
        posix_spawn_file_actions_destroy(&fa);
        close(fd[1]);
        FILE *f = fdopen(fd[0], "r");
        double t0 = 0, t1 = 0, t2 = 0;
        int got = fscanf(f, "%lf %lf %lf", &t0, &t1, &t2) == 3;
        if (got) {
            add_span(ts, t1, C_CREATE); /* process start and context */
            if (m != 1)
                add_span(t1, t2, C_OPEN);
        }
        if (m == 3) {
            while (phase_mode == 3 && !stop)
                usleep(1000);
            add_span(t2, now_s(), C_HOLD);
            kill(pid, SIGKILL);
        }
        double te0 = now_s();
        int st;
        waitpid(pid, &st, 0);
        fclose(f);
        if (got)
            add_span(m == 3 ? te0 : t2, now_s(), C_TEAR);
        usleep(20000 + rand() % 30000); /* a gap, as between jobs */
    }
    return NULL;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    double t0, t1, us;
    int size, mode;
} sample_t;

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "child"))
        return child(argv[2], argv[3]);
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    if (readlink("/proc/self/exe", self, sizeof self - 1) < 0)
        return 1;
    const size_t arena_b = (size_t)2 << 30, flush_b = (size_t)128 << 20;
    const size_t sizes[2] = {(size_t)1 << 20, (size_t)1 << 24};
    char *arena, *flush;
    CK(cudaMalloc(&arena, arena_b));
    CK(cudaMalloc(&flush, flush_b));
    cudaIpcMemHandle_t h;
    CK(cudaIpcGetMemHandle(&h, arena));
    for (size_t i = 0; i < sizeof h; i++)
        sprintf(hexh + 2 * i, "%02x", ((unsigned char *)&h)[i]);
    float *a = (float *)arena, *b = a + sizes[1], *c = b + sizes[1];
    CK(cudaMemset(arena, 0, 3 * sizes[1] * sizeof(float)));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    size_t cap = 400000, ns = 0;
    sample_t *S = (sample_t *)calloc(cap, sizeof *S);
    pthread_t th;
    pthread_create(&th, NULL, spawner, NULL);
    static const int plan[] = {0, 1, 0, 2, 0, 3};
    const double phase_s = 2.0;
    for (int r = 0; r < rounds; r++)
        for (int p = 0; p < 6; p++) {
            phase_mode = plan[p];
            double end = now_s() + phase_s;
            int k = 0;
            while (now_s() < end && ns < cap) {
                int z = k++ & 1;
                size_t n4 = sizes[z] / 4;
                CK(cudaMemsetAsync(flush, (k >> 1) & 0xff, flush_b));
                double t0 = now_s();
                CK(cudaEventRecord(e0));
                vadd<<<1056, 256>>>((const float4 *)a, (const float4 *)b, (float4 *)c, n4);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                double t1 = now_s();
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                S[ns++] = (sample_t){t0, t1, ms * 1000.0, z, plan[p]};
            }
            phase_mode = 0;
            usleep(150000); /* the last child ends before the next phase */
        }
    stop = 1;
    pthread_join(th, NULL);
    /* classify each sample: the first span it overlaps, else its phase */
    static double *v[C_N][2];
    static size_t nv[C_N][2];
    for (int c = 0; c < C_N; c++)
        for (int z = 0; z < 2; z++)
            v[c][z] = (double *)malloc(ns * sizeof(double));
    for (size_t i = 0; i < ns; i++) {
        int cls = S[i].mode ? C_QUIET : C_NONE;
        for (int j = 0; j < nspans; j++)
            if (spans[j].a < S[i].t1 && spans[j].b > S[i].t0 && spans[j].cls != C_HOLD) {
                cls = spans[j].cls;
                break;
            }
        if (cls == C_QUIET)
            for (int j = 0; j < nspans; j++)
                if (spans[j].cls == C_HOLD && spans[j].a < S[i].t1 && spans[j].b > S[i].t0)
                    cls = C_HOLD;
        v[cls][S[i].size][nv[cls][S[i].size]++] = S[i].us;
    }
    double span_sum[C_N] = {0};
    int span_n[C_N] = {0};
    for (int j = 0; j < nspans; j++) {
        span_sum[spans[j].cls] += spans[j].b - spans[j].a;
        span_n[spans[j].cls]++;
    }
    printf("ctx_probe: %zu samples, %d child spans; event us per class (1M floats | 16M floats)\n",
           ns, nspans);
    for (int c = 0; c < C_N; c++) {
        printf("  %-24s", cname[c]);
        if (span_n[c])
            printf(" (%d spans, mean %.3f s)", span_n[c], span_sum[c] / span_n[c]);
        printf("\n");
        for (int z = 0; z < 2; z++) {
            size_t n = nv[c][z];
            if (!n) {
                printf("      %s: none\n", z ? "16M" : " 1M");
                continue;
            }
            qsort(v[c][z], n, sizeof(double), cmpd);
            double *x = v[c][z];
            printf("      %s: n %6zu  median %8.3f  p90 %8.3f  p99 %8.3f  max %9.3f\n",
                   z ? "16M" : " 1M", n, x[n / 2], x[(size_t)(0.9 * (n - 1))],
                   x[(size_t)(0.99 * (n - 1))], x[n - 1]);
        }
    }
    return 0;
}
