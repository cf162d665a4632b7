/* bench/queue_probe.cu — what a deep launch queue does to an event-timed kernel.
 *
 * triton's do_bench queues all its reps (cache clear, event, kernel, event)
 * without waiting, and on an H200 that reads 0.6-1.3 us more per kernel than
 * the same loop with a synchronise per rep (bench/RESULTS.md, session 5).
 * This probe runs do_bench's loop in C with the queue bounded to D reps
 * (before rep i is queued the host waits for rep i-D's end event; D larger
 * than the rep count is do_bench's unbounded queue) and splits each rep's
 * event time into parts read from the GPU's global timer:
 *
 *   ev      cudaEventElapsedTime(start, end), the time do_bench reports
 *   span    the kernel's own span: last block's end - first block's start
 *   lead    first block's start - the flush kernel's last block end
 *   rest    ev - span: launch, event and drain outside the kernel's blocks
 *
 * The flush is a kernel writing zeros over 256 MiB (do_bench zeroes a
 * 256 MiB buffer with torch), stamping the time its last block ended. The
 * timed kernel is the fast vector_add candidate's float4 add, stamping its
 * first start and last end (two atomics per block; the same in every depth).
 * DEPTH:TAIL also queues TAIL empty kernels after each rep's end event
 * (outside its window): is it the work queued behind a kernel that matters?
 *
 *   nvcc -O3 -arch=native -o queue_probe bench/queue_probe.cu
 *   queue_probe REPS DEPTH[:TAIL]... > rows   (medians, one row per depth,
 *                                              tail and size)
 *
 * A diagnostic for bench/RESULTS.md, not part of the product; it never
 * changes a GPU setting. */
#include <string.h>

#include <algorithm>
#include <vector>

#include "probe.cuh"

__device__ static inline unsigned long long gtime(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ static void zero_flush(float4 *p, size_t n4, unsigned long long *end)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = make_float4(0, 0, 0, 0);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicMax(end, gtime());
    }
}

__global__ static void add4_stamped(const float4 *__restrict__ a, const float4 *__restrict__ b,
                                    float4 *__restrict__ c, int n4, unsigned long long *ts)
{
    if (threadIdx.x == 0)
        atomicMin(ts, gtime());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = __ldg(a + i), y = __ldg(b + i);
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicMax(ts + 1, gtime());
    }
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: queue_probe REPS DEPTH[:TAIL]...\n");
        return 2;
    }
    int reps = atoi(argv[1]);
    if (reps < 10 || reps > 100000) {
        fprintf(stderr, "queue_probe: REPS must be 10..100000\n");
        return 2;
    }
    const size_t flush_bytes = 256u << 20;
    float4 *flush;
    CK(cudaMalloc(&flush, flush_bytes));
    const int sizes[] = {1 << 20, 2 << 20, 16 << 20}; /* floats: ~7.5, ~11, ~52 us */
    float *a, *b, *c;
    CK(cudaMalloc(&a, sizeof(float) * (16 << 20)));
    CK(cudaMalloc(&b, sizeof(float) * (16 << 20)));
    CK(cudaMalloc(&c, sizeof(float) * (16 << 20)));
    fill<<<1024, 256>>>(a, 16 << 20, 1);
    fill<<<1024, 256>>>(b, 16 << 20, 2);
    /* per rep: flush end, kernel start, kernel end */
    unsigned long long *stamps;
    CK(cudaMalloc(&stamps, sizeof(unsigned long long) * 3 * reps));
    std::vector<unsigned long long> host(3 * (size_t)reps);
    std::vector<cudaEvent_t> s(reps), e(reps);
    for (int i = 0; i < reps; i++) {
        CK(cudaEventCreate(&s[i]));
        CK(cudaEventCreate(&e[i]));
    }
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    printf("depth tail floats ev_us span_us lead_us rest_us\n");
    for (int d = 2; d < argc; d++) {
        int depth = atoi(argv[d]);
        const char *colon = strchr(argv[d], ':');
        int tail = colon ? atoi(colon + 1) : 0;
        if (depth < 1 || tail < 0 || tail > 1000) {
            fprintf(stderr, "queue_probe: DEPTH must be at least 1, TAIL 0..1000\n");
            return 2;
        }
        for (int n : sizes) {
            int n4 = n / 4;
            /* flush end 0 (max), kernel start all ones (min), kernel end 0 (max) */
            CK(cudaMemset(stamps, 0, sizeof(unsigned long long) * 3 * reps));
            for (int i = 0; i < reps; i++)
                CK(cudaMemset(stamps + 3 * i + 1, 0xff, sizeof(unsigned long long)));
            for (int w = 0; w < 20; w++) /* warm-up, as do_bench's */
                add4<0><<<(n4 + 255) / 256, 256>>>((const float4 *)a, (const float4 *)b,
                                                   (float4 *)c, n4);
            CK(cudaDeviceSynchronize());
            for (int i = 0; i < reps; i++) {
                if (i >= depth)
                    CK(cudaEventSynchronize(e[i - depth]));
                zero_flush<<<sms * 4, 512>>>(flush, flush_bytes / 16, stamps + 3 * i);
                CK(cudaEventRecord(s[i]));
                add4_stamped<<<(n4 + 255) / 256, 256>>>((const float4 *)a, (const float4 *)b,
                                                        (float4 *)c, n4, stamps + 3 * i + 1);
                CK(cudaEventRecord(e[i]));
                for (int k = 0; k < tail; k++)
                    nullk<0><<<1, 32>>>();
            }
            CK(cudaDeviceSynchronize());
            CK(cudaGetLastError());
            CK(cudaMemcpy(host.data(), stamps, sizeof(unsigned long long) * 3 * reps,
                          cudaMemcpyDeviceToHost));
            std::vector<double> ev, span, lead, rest;
            for (int i = 0; i < reps; i++) {
                float ms;
                CK(cudaEventElapsedTime(&ms, s[i], e[i]));
                double sp = (host[3 * i + 2] - host[3 * i + 1]) / 1e3;
                ev.push_back(ms * 1e3);
                span.push_back(sp);
                lead.push_back(((double)host[3 * i + 1] - (double)host[3 * i]) / 1e3);
                rest.push_back(ms * 1e3 - sp);
            }
            printf("%d %d %d %.3f %.3f %.3f %.3f\n", depth, tail, n, median(ev), median(span),
                   median(lead), median(rest));
            fflush(stdout);
        }
    }
    return 0;
}
