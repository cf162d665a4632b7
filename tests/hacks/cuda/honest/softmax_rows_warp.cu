/* Honest, softmax_rows_cuda: one warp per row while a row fits in
 * registers (up to 32 values per lane, i.e. 1024 columns), reduced with
 * warp shuffles only (no shared memory, no __syncthreads); longer rows take
 * one block per row, an online (max, sum) pass merged with shuffles and a
 * second pass that writes. expf, not __expf: the task asks rtol 2e-5. */
#define WARPS 8
#define PER_LANE 32

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ static void __launch_bounds__(WARPS * 32)
    softmax_warp(const float *__restrict__ x, float *__restrict__ y, int rows, int cols)
{
    int row = blockIdx.x * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows)
        return;
    const float *r = x + (size_t)row * cols;
    float v[PER_LANE];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < PER_LANE; k++) {
        int j = lane + 32 * k;
        v[k] = j < cols ? __ldg(r + j) : -INFINITY;
        m = fmaxf(m, v[k]);
    }
    m = warp_max(m);
    float s = 0;
#pragma unroll
    for (int k = 0; k < PER_LANE; k++) {
        v[k] = lane + 32 * k < cols ? expf(v[k] - m) : 0.0f;
        s += v[k];
    }
    float inv = 1.0f / warp_sum(s);
    float *o = y + (size_t)row * cols;
#pragma unroll
    for (int k = 0; k < PER_LANE; k++)
        if (lane + 32 * k < cols)
            o[lane + 32 * k] = v[k] * inv;
}

struct ms {
    float m, s;
};

__device__ __forceinline__ ms merge(ms a, ms b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
        return a;
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__global__ static void __launch_bounds__(256)
    softmax_block(const float *__restrict__ x, float *__restrict__ y, int cols)
{
    __shared__ ms part[8];
    const float *r = x + (size_t)blockIdx.x * cols;
    ms a = {-INFINITY, 0.0f};
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        a = merge(a, ms{__ldg(r + j), 1.0f});
    for (int o = 16; o > 0; o >>= 1)
        a = merge(a, ms{__shfl_xor_sync(0xffffffffu, a.m, o), __shfl_xor_sync(0xffffffffu, a.s, o)});
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = a;
    __syncthreads();
    a = part[0];
    for (int w = 1; w < 8; w++)
        a = merge(a, part[w]);
    float inv = 1.0f / a.s;
    float *o = y + (size_t)blockIdx.x * cols;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        o[j] = expf(__ldg(r + j) - a.m) * inv;
}

void solve(const float *x, float *y, int rows, int cols)
{
    if (cols <= 32 * PER_LANE)
        softmax_warp<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(x, y, rows, cols);
    else
        softmax_block<<<rows, 256>>>(x, y, cols);
}
