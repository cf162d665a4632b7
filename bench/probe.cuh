/* bench/probe.cuh — what the timing probes (timing_probe.cu, lane_probe.cu,
 * queue_probe.cu) share: the error check, the input fill and the kernels they time (the fast
 * vector_add_cuda candidate's float4 add, and an empty kernel), with a copy
 * index K so a probe can have separate functions of the same code. */
#ifndef CR_BENCH_PROBE_CUH
#define CR_BENCH_PROBE_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CK(x)                                                                    \
    do {                                                                         \
        cudaError_t e_ = (x);                                                    \
        if (e_ != cudaSuccess) {                                                 \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,            \
                    cudaGetErrorString(e_));                                     \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

template <int K>
__global__ static void add4(const float4 *__restrict__ a, const float4 *__restrict__ b,
                            float4 *__restrict__ c, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = __ldg(a + i), y = __ldg(b + i);
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

template <int K> __global__ static void nullk(void) {}

__global__ static void fill(float *p, size_t n, uint32_t key)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ key;
        h ^= h >> 15;
        h *= 2246822519u;
        p[i] = (float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
}

#endif
