/* kernels.cu — the CUDA judge's own device code (see cuda_int.h): input
 * generation, poison, input hashes, output comparison, and the empty
 * kernels queued behind a timed call; with the cr__cuda_launch_* functions
 * that queue them, so that every other file of the judge is plain C. */
#include "cuda_int.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

__device__ __forceinline__ uint4 s_philox(uint64_t ctr, uint64_t key)
{
    uint4 c = make_uint4((uint32_t)ctr, (uint32_t)(ctr >> 32), 0x43727563u, 0x69626c65u);
    uint2 k = make_uint2((uint32_t)key, (uint32_t)(key >> 32));
    /* Philox4x32-10 (Salmon et al., SC'11): 10 rounds, the Random123 constants. */
#pragma unroll
    for (int r = 0; r < 10; r++) {
        uint32_t hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        uint32_t hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k.x += 0x9E3779B9u;
        k.y += 0xBB67AE85u;
    }
    return c;
}

template <typename T> __device__ __forceinline__ void s_store_int(void *buf, size_t i, double v,
                                                                  double lo, double hi)
{
    v = rint(v); /* to nearest, then clamped: cr_inputs_set's rule */
    v = v < lo ? lo : v > hi ? hi : v;
    ((T *)buf)[i] = (T)v;
}

__device__ __forceinline__ void s_store(void *buf, size_t i, double v, int dtype)
{
    switch (dtype) {
    case CR_DT_F32: ((float *)buf)[i] = (float)v; break;
    case CR_DT_F64: ((double *)buf)[i] = v; break;
    case CR_DT_F16: ((__half *)buf)[i] = __double2half(v); break;
    case CR_DT_BF16: ((__nv_bfloat16 *)buf)[i] = __double2bfloat16(v); break;
    case CR_DT_I8: s_store_int<int8_t>(buf, i, v, -128.0, 127.0); break;
    case CR_DT_U8: s_store_int<uint8_t>(buf, i, v, 0.0, 255.0); break;
    case CR_DT_I16: s_store_int<int16_t>(buf, i, v, -32768.0, 32767.0); break;
    case CR_DT_I32: s_store_int<int32_t>(buf, i, v, -2147483648.0, 2147483647.0); break;
    case CR_DT_U32: s_store_int<uint32_t>(buf, i, v, 0.0, 4294967295.0); break;
    case CR_DT_I64: s_store_int<int64_t>(buf, i, v, -9.2233720368547758e18,
                                         9.2233720368547748e18); break;
    default: ((uint8_t *)buf)[i] = v != 0.0; break; /* bool */
    }
}

/* Inputs of 32 bits or fewer from a float distribution take four elements
 * from each Philox block (24 random bits each: all a float keeps; Box-Muller
 * on two words gives two normals, its cosine and its sine); doubles and
 * integer distributions one element per block, from 53-bit uniforms. A
 * fresh set is drawn before every timed call, so this is on the sampling
 * path, and four per block keep a sample's fill cheap (bench/RESULTS.md,
 * session 4). */
__global__ void s_gen_kernel(void *buf, size_t n, cr__cuda_gen_t g)
{
    const int four = cr__cuda_gen_four(&g);
    const size_t blocks = cr__cuda_gen_blocks(&g, n);
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < blocks;
         j += (size_t)gridDim.x * blockDim.x) {
        uint4 r = s_philox(j, g.key);
        if (four) {
            const uint32_t w[4] = {r.x, r.y, r.z, r.w};
            double v[4];
            for (int h = 0; h < 4; h += 2) {
                if (g.dist == CR_DIST_NORMAL) {
                    float u1 = (float)((w[h] >> 8) + 1) * 0x1.0p-24f; /* (0, 1]: log finite */
                    float u2 = (float)(w[h + 1] >> 8) * 0x1.0p-24f;
                    float rad = sqrtf(-2.0f * logf(u1)), sn, cs;
                    sincospif(2.0f * u2, &sn, &cs);
                    v[h] = g.a + g.b * (double)(rad * cs);
                    v[h + 1] = g.a + g.b * (double)(rad * sn);
                } else {
                    v[h] = g.a + (g.b - g.a) * (double)((float)(w[h] >> 8) * 0x1.0p-24f);
                    v[h + 1] = g.a + (g.b - g.a) * (double)((float)(w[h + 1] >> 8) * 0x1.0p-24f);
                }
            }
            for (int h = 0; h < 4 && 4 * j + h < n; h++)
                s_store(buf, 4 * j + h, v[h], g.dtype);
            continue;
        }
        uint64_t w0 = ((uint64_t)r.x << 32) | r.y, w1 = ((uint64_t)r.z << 32) | r.w;
        double u = (double)(w0 >> 11) * 0x1.0p-53; /* [0, 1) on the 2^-53 grid */
        double v;
        if (g.dist == CR_DIST_NORMAL) {
            double u1 = (double)((w0 >> 11) + 1) * 0x1.0p-53; /* (0, 1]: log stays finite */
            double u2 = (double)(w1 >> 11) * 0x1.0p-53;
            v = g.a + g.b * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
        } else if (g.dist == CR_DIST_UNIFORM) {
            v = g.a + (g.b - g.a) * u;
        } else {
            v = floor(g.a + (g.b - g.a) * u);
            if (v >= g.b)
                v = g.b - 1;
        }
        s_store(buf, j, v, g.dtype);
    }
}

/* Queued behind a timed call (§12). */
__global__ void s_tail_kernel(void) {}

/* Writes the element pattern (es bytes, from cr_inputs_poison) n times. */
__global__ void s_poison_kernel(void *buf, size_t n, int es, uint64_t pat)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        switch (es) {
        case 8: ((uint64_t *)buf)[i] = pat; break;
        case 4: ((uint32_t *)buf)[i] = (uint32_t)pat; break;
        case 2: ((uint16_t *)buf)[i] = (uint16_t)pat; break;
        default: ((uint8_t *)buf)[i] = (uint8_t)pat; break;
        }
    }
}

__device__ __forceinline__ uint64_t s_splitmix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* §6. bytes need not be a multiple of 4: the tail word is zero-padded
 * and the length is mixed in by the host. */
__global__ void s_hash_kernel(const void *buf, size_t bytes, uint64_t key,
                              unsigned long long *out)
{
    const uint32_t *w = (const uint32_t *)buf;
    size_t nw = bytes / 4;
    uint64_t acc = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j <= nw;
         j += (size_t)gridDim.x * blockDim.x) {
        uint32_t v = 0;
        if (j < nw) {
            v = w[j];
        } else {
            const uint8_t *tail = (const uint8_t *)buf + nw * 4;
            for (size_t b = 0; b < bytes % 4; b++)
                v |= (uint32_t)tail[b] << (8 * b);
        }
        acc += s_splitmix(key ^ (((uint64_t)j << 32) | v));
    }
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, (unsigned long long)acc);
}

/* Output comparison on the device: the rules of cr_inputs_compare and of
 * cr_judge_compare_outputs' unwritten check, element for element, so that a
 * check never copies outputs to the host (cr__cuda_compare_dev). Per param, into
 * cnt[4] = {mismatches, unwritten, max |err| bits, max rel err bits} (the
 * maxima are non-negative doubles, whose bit patterns order like their
 * values) and first[2] = {first mismatch, first unwritten} (~0: none). */
__device__ __forceinline__ double s_dget(const void *b, int d, size_t i)
{
    switch (d) {
    case CR_DT_F32: return ((const float *)b)[i];
    case CR_DT_F64: return ((const double *)b)[i];
    case CR_DT_F16: return __half2float(((const __half *)b)[i]);
    case CR_DT_BF16: return __bfloat162float(((const __nv_bfloat16 *)b)[i]);
    case CR_DT_I8: return ((const int8_t *)b)[i];
    case CR_DT_U8: return ((const uint8_t *)b)[i];
    case CR_DT_I16: return ((const int16_t *)b)[i];
    case CR_DT_I32: return ((const int32_t *)b)[i];
    case CR_DT_U32: return ((const uint32_t *)b)[i];
    case CR_DT_I64: return (double)((const int64_t *)b)[i];
    case CR_DT_BOOL: return ((const uint8_t *)b)[i] != 0;
    default: return CUDART_NAN;
    }
}

__device__ __forceinline__ int s_dpoisoned(const void *b, int es, size_t i, uint64_t pat)
{
    switch (es) {
    case 8: return ((const uint64_t *)b)[i] == pat;
    case 4: return ((const uint32_t *)b)[i] == (uint32_t)pat;
    case 2: return ((const uint16_t *)b)[i] == (uint16_t)pat;
    default: return ((const uint8_t *)b)[i] == (uint8_t)pat;
    }
}

/* A warp's sum (op 0), minimum (op 1) or maximum (op 2), in lane 0. */
template <int op> __device__ __forceinline__ unsigned long long s_warp(unsigned long long v)
{
    for (int o = 16; o > 0; o >>= 1) {
        unsigned long long u = __shfl_down_sync(0xffffffffu, v, o);
        v = op == 0 ? v + u : op == 1 ? (u < v ? u : v) : (u > v ? u : v);
    }
    return v;
}

/* pat: the poison of an `out` param (unwritten check), es its element size;
 * es 0 = no unwritten check (inout). */
__global__ void s_cmp_kernel(const void *a, const void *r, int d, int es, uint64_t pat, size_t n,
                             double atol, double rtol, unsigned long long *cnt,
                             unsigned long long *first)
{
    unsigned long long bad = 0, unw = 0, fb = ~0ull, fu = ~0ull;
    double mabs = 0, mrel = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        if (es && s_dpoisoned(a, es, i, pat) && !s_dpoisoned(r, es, i, pat)) {
            unw++;
            fu = fu < i ? fu : i;
        }
        double x = s_dget(a, d, i), y = s_dget(r, d, i);
        int ok;
        if (isnan(y)) {
            ok = isnan(x);
        } else if (isinf(y)) {
            ok = x == y;
        } else if (!isfinite(x)) {
            ok = 0;
        } else {
            double err = fabs(__dsub_rn(x, y));
            mabs = fmax(mabs, err);
            if (y != 0)
                mrel = fmax(mrel, __ddiv_rn(err, fabs(y)));
            ok = err <= __dadd_rn(atol, __dmul_rn(rtol, fabs(y))); /* no fused multiply-add */
        }
        if (!ok) {
            bad++;
            fb = fb < i ? fb : i;
        }
    }
    bad = s_warp<0>(bad);
    unw = s_warp<0>(unw);
    fb = s_warp<1>(fb);
    fu = s_warp<1>(fu);
    unsigned long long ma = s_warp<2>((unsigned long long)__double_as_longlong(mabs));
    unsigned long long mr = s_warp<2>((unsigned long long)__double_as_longlong(mrel));
    if ((threadIdx.x & 31) == 0) {
        if (bad)
            atomicAdd(&cnt[0], bad);
        if (unw)
            atomicAdd(&cnt[1], unw);
        if (ma)
            atomicMax(&cnt[2], ma);
        if (mr)
            atomicMax(&cnt[3], mr);
        if (fb != ~0ull)
            atomicMin(&first[0], fb);
        if (fu != ~0ull)
            atomicMin(&first[1], fu);
    }
}

/* ---------------------------------------------------------------- launches */

void cr__cuda_launch_gen(unsigned grid, void *buf, size_t n, cr__cuda_gen_t g)
{
    s_gen_kernel<<<grid, CR_CUDA_THREADS, 0, cudaStreamLegacy>>>(buf, n, g);
}

void cr__cuda_launch_poison(unsigned grid, void *buf, size_t n, int es, uint64_t pat)
{
    s_poison_kernel<<<grid, CR_CUDA_THREADS, 0, cudaStreamLegacy>>>(buf, n, es, pat);
}

void cr__cuda_launch_hash(unsigned grid, const void *buf, size_t bytes, uint64_t key,
                          unsigned long long *out)
{
    s_hash_kernel<<<grid, CR_CUDA_THREADS, 0, cudaStreamLegacy>>>(buf, bytes, key, out);
}

void cr__cuda_launch_cmp(unsigned grid, const void *a, const void *r, int d, int es,
                         uint64_t pat, size_t n, double atol, double rtol,
                         unsigned long long *cnt, unsigned long long *first)
{
    s_cmp_kernel<<<grid, CR_CUDA_THREADS, 0, cudaStreamLegacy>>>(a, r, d, es, pat, n, atol, rtol,
                                                                 cnt, first);
}

/* Spins one thread until the GPU's global timer has moved ns nanoseconds
 * (head.c): a wall-clock time, whatever the SM clock. */
__global__ void s_spin_kernel(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

void cr__cuda_launch_spin(unsigned long long ns)
{
    s_spin_kernel<<<1, 1, 0, cudaStreamLegacy>>>(ns);
}

void cr__cuda_launch_tail(int n)
{
    for (int k = 0; k < n; k++)
        s_tail_kernel<<<1, 32, 0, cudaStreamLegacy>>>();
}
