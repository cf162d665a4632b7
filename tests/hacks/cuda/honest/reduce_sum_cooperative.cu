/* Honest, reduce_sum_cuda: one cooperative launch. Every block folds its
 * share (16-byte loads, warp shuffles) into a partial in scratch, the grid
 * synchronises (cooperative groups' grid.sync(), which needs all blocks
 * resident: the grid is sized from the occupancy calculator), and block 0
 * sums the partials in a fixed order. Deterministic; scratch kept across
 * calls (grown when a larger grid needs more). */
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define THREADS 256

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float block_sum(float v, float *sh)
{
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0)
        sh[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < THREADS / 32 ? sh[threadIdx.x] : 0.0f;
    if (threadIdx.x < 32)
        v = warp_sum(v);
    return v; /* valid in thread 0 */
}

__global__ static void __launch_bounds__(THREADS)
    reduce_coop(const float *__restrict__ x, int n, float *part, float *out)
{
    __shared__ float sh[THREADS / 32];
    cg::grid_group grid = cg::this_grid();
    int stride = gridDim.x * blockDim.x, t = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    float v = 0;
    for (int i = t; i < n4; i += stride) {
        float4 q = __ldg((const float4 *)x + i);
        v += (q.x + q.y) + (q.z + q.w);
    }
    if (t < n - 4 * n4)
        v += x[4 * n4 + t];
    v = block_sum(v, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = v;
    grid.sync();
    if (blockIdx.x == 0) {
        __syncthreads(); /* sh is reused */
        float s = 0;
        for (int b = threadIdx.x; b < (int)gridDim.x; b += THREADS)
            s += part[b];
        s = block_sum(s, sh);
        if (threadIdx.x == 0)
            out[0] = s;
    }
}

void solve(const float *x, float *out, int n)
{
    static float *part;
    static int cap, have;
    if (!cap) {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_coop, THREADS, 0);
        cap = (sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
    }
    int want = (n / 4 + THREADS - 1) / THREADS;
    int blocks = want < 1 ? 1 : want > cap ? cap : want;
    if (blocks > have) {
        cudaFree(part);
        part = NULL;
        have = 0;
        if (cudaMalloc(&part, (size_t)blocks * sizeof *part) != cudaSuccess)
            return;
        have = blocks;
    }
    void *args[4] = {(void *)&x, &n, &part, &out};
    cudaLaunchCooperativeKernel((void *)reduce_coop, dim3(blocks), dim3(THREADS), args, 0, 0);
}
