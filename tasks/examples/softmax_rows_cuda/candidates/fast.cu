/* One block per row, two passes over the row instead of three: the first
 * keeps a running (max, sum of exp) pair per thread ("online softmax",
 * Milakov & Gimelshein 2018), merged with warp shuffles; the second writes.
 * Rows whose length is a multiple of 4 use 16-byte loads and stores. The
 * second read of a row hits L2/L1: DRAM sees one read and one write. */
#include <cuda_runtime.h>

struct ms {
    float m, s;
};

__device__ __forceinline__ ms ms_merge(ms a, ms b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
        return a;
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ void ms_add(ms &a, float v)
{
    if (v > a.m) {
        a.s = a.s * expf(a.m - v) + 1.0f;
        a.m = v;
    } else {
        a.s += expf(v - a.m);
    }
}

template <bool VEC>
__global__ static void softmax_fast(const float *__restrict__ x, float *__restrict__ y, int cols)
{
    __shared__ ms warps[32];
    __shared__ ms total;
    const float *r = x + (size_t)blockIdx.x * cols;
    float *o = y + (size_t)blockIdx.x * cols;
    ms a = {-INFINITY, 0.0f};
    if (VEC) {
        for (int j = threadIdx.x; j < cols / 4; j += blockDim.x) {
            float4 q = __ldg((const float4 *)r + j);
            ms_add(a, q.x);
            ms_add(a, q.y);
            ms_add(a, q.z);
            ms_add(a, q.w);
        }
    } else {
        for (int j = threadIdx.x; j < cols; j += blockDim.x)
            ms_add(a, __ldg(r + j));
    }
    for (int off = 16; off > 0; off >>= 1) {
        ms b = {__shfl_down_sync(0xffffffffu, a.m, off), __shfl_down_sync(0xffffffffu, a.s, off)};
        a = ms_merge(a, b);
    }
    if ((threadIdx.x & 31) == 0)
        warps[threadIdx.x >> 5] = a;
    __syncthreads();
    if (threadIdx.x < 32) {
        a = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : ms{-INFINITY, 0.0f};
        for (int off = 16; off > 0; off >>= 1) {
            ms b = {__shfl_down_sync(0xffffffffu, a.m, off),
                    __shfl_down_sync(0xffffffffu, a.s, off)};
            a = ms_merge(a, b);
        }
        if (threadIdx.x == 0)
            total = a;
    }
    __syncthreads();
    float m = total.m, inv = 1.0f / total.s;
    if (VEC) {
        for (int j = threadIdx.x; j < cols / 4; j += blockDim.x) {
            float4 q = __ldg((const float4 *)r + j);
            ((float4 *)o)[j] = make_float4(expf(q.x - m) * inv, expf(q.y - m) * inv,
                                           expf(q.z - m) * inv, expf(q.w - m) * inv);
        }
    } else {
        for (int j = threadIdx.x; j < cols; j += blockDim.x)
            o[j] = expf(__ldg(r + j) - m) * inv;
    }
}

void solve(const float *x, float *y, int rows, int cols)
{
    if (cols % 4 == 0)
        softmax_fast<true><<<rows, 256>>>(x, y, cols);
    else
        softmax_fast<false><<<rows, 256>>>(x, y, cols);
}
