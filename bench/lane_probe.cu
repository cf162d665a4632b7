/* bench/lane_probe.cu — which part of a process sets its timing level.
 *
 * Every fresh process times the same kernels at its own level, stable for
 * the whole process and 0.1-0.3 us apart between processes (bench/
 * RESULTS.md, sessions 6 and 7). This probe splits one process into four lanes
 * that differ in one thing only and rotates the samples through them, in
 * the judge's sample shape (fill inputs, synchronise, memset flush of 2x L2,
 * [e0] kernel [e1], poll, device sync):
 *
 *   stream  four non-blocking streams (the driver spreads streams over
 *           its hardware queues)
 *   event   four event pairs on the legacy stream
 *   code    four copies of each kernel (same code, separate functions)
 *   ctx     four contexts of the device (cuCtxCreate), each with its own
 *           buffers, events and module
 *   warm    one lane; the same kernel copy, with nothing to do, queued
 *           between the flush and e0 (its code and launch state fetched
 *           after the flush)
 *   gap     one lane; the host waits 3 us after recording e0 and again
 *           after the launch (is host-side time inside the window?)
 *   flush   four flush buffers, one set of kernel buffers
 *   data    one flush buffer, four sets of kernel buffers
 *   mix     every sample takes one of 16 sets of kernel buffers and one of
 *           four flush buffers at random (lane: the set)
 *   idle    one lane; the process sleeps $IDLE_MS ms (default 500) after
 *           every 300 samples (lane: the round): does the level change when
 *           the GPU has idled?
 *
 * If the lanes of one process differ as much as processes do, that part
 * carries the level. Kernels: an empty one <<<1,32>>> (size 0) and the fast
 * vector_add_cuda candidate's float4 add on 1M floats (~7.5 us).
 *
 *   nvcc -O3 -arch=sm_90 -o lane_probe bench/lane_probe.cu -lcuda
 *   lane_probe VARIANT SAMPLES SEED > samples.csv   (variant,lane,size,i,us)
 *
 * A diagnostic for bench/RESULTS.md, not part of the product; it never
 * changes a GPU setting. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "probe.cuh"

#define CKD(x)                                                                   \
    do {                                                                         \
        CUresult r_ = (x);                                                       \
        if (r_ != CUDA_SUCCESS) {                                                \
            fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #x, (int)r_);  \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

enum { LANES = 4, SETS = 16, N = 1 << 20 };

/* Launch copy k of a kernel: size 0 is the empty kernel. */
static void launch(int k, size_t n, float **p, cudaStream_t st)
{
    int n4 = (int)(n / 4), g = n ? (n4 + 255) / 256 : 1;
    const float4 *a = (const float4 *)p[0], *b = (const float4 *)p[1];
    float4 *c = (float4 *)p[2];
    switch (n ? k : k + LANES) {
    case 0: add4<0><<<g, 256, 0, st>>>(a, b, c, n4); break;
    case 1: add4<1><<<g, 256, 0, st>>>(a, b, c, n4); break;
    case 2: add4<2><<<g, 256, 0, st>>>(a, b, c, n4); break;
    case 3: add4<3><<<g, 256, 0, st>>>(a, b, c, n4); break;
    case 4: nullk<0><<<1, 32, 0, st>>>(); break;
    case 5: nullk<1><<<1, 32, 0, st>>>(); break;
    case 6: nullk<2><<<1, 32, 0, st>>>(); break;
    default: nullk<3><<<1, 32, 0, st>>>(); break;
    }
}

static void host_wait_us(double us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3 < us);
}

struct lane {
    CUcontext ctx; /* NULL: the primary context */
    cudaStream_t st;
    cudaEvent_t e0, e1;
    void *flush;
    float *p[3];
};

/* A lane's own flush buffer when fl, its own kernel buffers when data;
 * otherwise lane 0's (S[0], already set up). */
static void lane_init(struct lane *L, const struct lane *S0, size_t fl, int data,
                      cudaStream_t st)
{
    L->st = st;
    CK(cudaEventCreate(&L->e0));
    CK(cudaEventCreate(&L->e1));
    if (fl)
        CK(cudaMalloc(&L->flush, fl));
    else
        L->flush = S0->flush;
    for (int k = 0; k < 3; k++) {
        if (data)
            CK(cudaMalloc(&L->p[k], N * sizeof(float)));
        else
            L->p[k] = S0->p[k];
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: lane_probe stream|event|code|ctx|warm|gap|flush|data|mix|idle SAMPLES SEED\n");
        return 2;
    }
    const char *v = argv[1];
    int samples = atoi(argv[2]);
    unsigned seed = (unsigned)strtoul(argv[3], NULL, 10);
    int ctx = !strcmp(v, "ctx"), stream = !strcmp(v, "stream"), event = !strcmp(v, "event");
    int code = !strcmp(v, "code"), warm = !strcmp(v, "warm"), gap = !strcmp(v, "gap");
    int flush = !strcmp(v, "flush"), data = !strcmp(v, "data"), mix = !strcmp(v, "mix");
    int idle = !strcmp(v, "idle");
    int idle_ms = getenv("IDLE_MS") ? atoi(getenv("IDLE_MS")) : 500;
    if (!ctx && !stream && !event && !code && !warm && !gap && !flush && !data && !mix && !idle) {
        fprintf(stderr, "lane_probe: unknown variant '%s'\n", v);
        return 2;
    }
    int lanes = warm || gap || idle ? 1 : mix ? SETS : LANES;
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    size_t fl = 2 * (size_t)l2 < (256u << 20) ? (256u << 20) : 2 * (size_t)l2;
    struct lane L[SETS];
    memset(L, 0, sizeof L);
    CKD(cuInit(0));
    CUdevice dev;
    CKD(cuDeviceGet(&dev, 0));
    for (int l = 0; l < lanes; l++) {
        cudaStream_t st = 0;
        if (ctx) {
            CKD(cuCtxCreate(&L[l].ctx, NULL, 0, dev));
            CKD(cuCtxSetCurrent(L[l].ctx));
        } else if (stream) {
            CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        }
        if (!ctx && l == 0)
            CK(cudaFree(0)); /* the primary context */
        int own_flush = l == 0 || (!data && l < LANES), own_data = l == 0 || !flush;
        lane_init(&L[l], &L[0], own_flush ? fl : 0, own_data, st);
    }
    printf("variant,lane,size,i,us\n");
    unsigned set = seed * 7919u;
    for (int i = 0; i < samples; i++)
        for (int z = 0; z < 2; z++, set++) {
            int l = (int)((i + seed) % lanes);
            struct lane *S = &L[l], mixed;
            if (mix) { /* a random set of kernel buffers, a random flush buffer */
                l = (int)((unsigned)rand_r(&seed) % SETS);
                mixed = L[l];
                mixed.flush = L[(unsigned)rand_r(&seed) % LANES].flush;
                S = &mixed;
            }
            if (ctx)
                CKD(cuCtxSetCurrent(S->ctx));
            size_t n = z ? 0 : N;
            int k = code ? l : 0;
            fill<<<264, 256, 0, S->st>>>(S->p[0], N, set * 2u);
            fill<<<264, 256, 0, S->st>>>(S->p[1], N, set * 2u + 1);
            CK(cudaDeviceSynchronize());
            CK(cudaMemsetAsync(S->flush, 0, fl, S->st));
            if (warm) {
                int n4 = 0;
                const float4 *a = (const float4 *)S->p[0], *b = (const float4 *)S->p[1];
                if (n)
                    add4<0><<<1, 256, 0, S->st>>>(a, b, (float4 *)S->p[2], n4);
                else
                    nullk<0><<<1, 32, 0, S->st>>>();
            }
            CK(cudaEventRecord(S->e0, S->st));
            if (gap)
                host_wait_us(3);
            launch(k, n, S->p, S->st);
            if (gap)
                host_wait_us(3);
            CK(cudaEventRecord(S->e1, S->st));
            while (cudaEventQuery(S->e1) == cudaErrorNotReady)
                ;
            CK(cudaDeviceSynchronize());
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, S->e0, S->e1));
            printf("%s,%d,%zu,%d,%.3f\n", v, idle ? i / 300 : l, n, i, ms * 1e3);
            if (idle && z == 1 && i % 300 == 299) {
                struct timespec ts = {idle_ms / 1000, (idle_ms % 1000) * 1000000L};
                nanosleep(&ts, NULL);
            }
        }
    return 0;
}
