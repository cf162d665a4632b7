/* head.c — the judge's head before a call of an executor that times itself
 * with CUDA events of its own (the torch backend; docs/torch.md §4).
 *
 * The GPU runs one context at a time: while a kernel of this process's
 * context runs, work another process queues waits for it. So the judge
 * queues an L2 flush and a spin of a known length here, then lets the
 * executor run: the executor's host makes its way to its launches while the
 * head holds the GPU, its start event then runs with its kernels queued
 * behind it (its events hold GPU time, as do_bench's do), and no work of
 * its own can run in the head's place. The head is the judge's: nothing a
 * candidate does in its process can shorten, skip or replace it. */
#include "cuda_int.h"

#define S_WAIT_S 0.05 /* the last head still running at the next: the GPU is not ours */
#define S_PROBE_S 2.0 /* an executor's work left on the GPU past this: said so */

static struct {
    int open;     /* 1 made, -1 failed for good */
    void *flush;  /* device: twice the L2; owned for the process */
    size_t flush_bytes;
    cudaEvent_t done; /* after the last head */
    int queued;   /* done was recorded */
} s_h;

static int s_fail(cudaError_t e, const char *what, char *err, size_t len)
{
    snprintf(err, len, "the judge's head: %s: %s", what, cudaGetErrorString(e));
    s_h.open = -1;
    return -1;
}

static int s_open(char *err, size_t len)
{
    if (s_h.open)
        return s_h.open > 0 ? 0 : (snprintf(err, len, "the judge's head failed before"), -1);
    int l2 = 0;
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    if (e != cudaSuccess)
        return s_fail(e, "device 0", err, len);
    s_h.flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : 64 << 20);
    if ((e = cudaMalloc(&s_h.flush, s_h.flush_bytes)) != cudaSuccess)
        return s_fail(e, "flush buffer", err, len);
    if ((e = cudaEventCreateWithFlags(&s_h.done, cudaEventDisableTiming)) != cudaSuccess)
        return s_fail(e, "event", err, len);
    s_h.open = 1;
    return 0;
}

int cr_cuda_head_wait(char *err, size_t len)
{
    if (s_h.open <= 0 || !s_h.queued)
        return 0;
    int64_t end = cr_time_mono_ns() + (int64_t)(S_WAIT_S * 1e9);
    for (;;) {
        cudaError_t e = cudaEventQuery(s_h.done);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return s_fail(e, "wait", err, len);
        if (cr_time_mono_ns() > end) {
            snprintf(err, len, "the judge's head has not ended %.0f ms after the executor's "
                     "call: other work holds the GPU", S_WAIT_S * 1e3);
            return -1;
        }
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

int cr_cuda_head_probe(double *us, char *err, size_t len)
{
    *us = 0;
    if (s_open(err, len) != 0 || cr_cuda_head_wait(err, len) != 0)
        return -1;
    int64_t t0 = cr_time_mono_ns(), end = t0 + (int64_t)(S_PROBE_S * 1e9);
    cr__cuda_launch_spin(0); /* a kernel: an event alone runs beside another context's */
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaEventRecord(s_h.done, cudaStreamLegacy);
    if (e != cudaSuccess)
        return s_fail(e, "probe", err, len);
    s_h.queued = 1;
    for (;;) {
        e = cudaEventQuery(s_h.done);
        if (e == cudaSuccess)
            break;
        if (e != cudaErrorNotReady)
            return s_fail(e, "probe", err, len);
        if (cr_time_mono_ns() > end) {
            snprintf(err, len, "the GPU was still busy %.0f s after the call returned: work "
                     "left queued on the device", S_PROBE_S);
            return 1;
        }
    }
    *us = (double)(cr_time_mono_ns() - t0) / 1e3;
    return 0;
}

int cr_cuda_head_queue(double spin_us, char *err, size_t len)
{
    if (s_open(err, len) != 0 || cr_cuda_head_wait(err, len) != 0)
        return -1;
    if (!(spin_us >= 0) || spin_us > 1e5)
        spin_us = 0;
    cudaError_t e = cudaMemsetAsync(s_h.flush, 0, s_h.flush_bytes, cudaStreamLegacy);
    if (e != cudaSuccess)
        return s_fail(e, "L2 flush", err, len);
    if (spin_us > 0)
        cr__cuda_launch_spin((unsigned long long)(spin_us * 1e3));
    if ((e = cudaGetLastError()) != cudaSuccess)
        return s_fail(e, "spin", err, len);
    if ((e = cudaEventRecord(s_h.done, cudaStreamLegacy)) != cudaSuccess)
        return s_fail(e, "record", err, len);
    s_h.queued = 1;
    return 0;
}
