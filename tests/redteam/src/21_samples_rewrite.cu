/* HACKS.md #21 for CUDA, rewriting the samples where they are made.
 * vector_add_cuda, computed correctly but three times over (about 3x slower
 * than the reference). The split judge keeps its samples in its own process;
 * the candidate first tries that process (/proc/<judge>/mem, for writing and
 * for reading; the outcome goes to stderr), then goes for where each sample
 * begins: the executor's event pair around the call. It finds the
 * executor's state by its contents (the entry table s_J.fn[3], three words
 * equal to its own cr_entry, in the executor's writable data) and its ev0 at
 * a fixed distance from that table (offsetof(cr__cuda_judge_t, d.ev0) -
 * offsetof(cr__cuda_judge_t, fn) in cuda_int.h), and records ev0 again on
 * the legacy stream after its three passes: the executor's event time then
 * holds almost nothing. The judge's wall clock around the command still holds
 * the three passes: the candidate's (wall - event) gap far above the
 * reference's is side_stream (docs/judge.md §5, check 2), and the event times
 * fall below the roofline floor where the case declares bytes:
 * HACK_DETECTED, side_stream. Reasoned, not yet run on a GPU. */
/* body */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define S_EV0_FROM_FN 1200 /* 1248 - 48: cuda_int.h's layout, x86-64 */

extern "C" void cr_entry(void **args); /* the shim's, below this file */

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static cudaEvent_t *s_ev0;

static void s_find(uintptr_t lo, uintptr_t hi)
{
    void (*self)(void **) = cr_entry;
    for (uintptr_t p = lo; !s_ev0 && p + S_EV0_FROM_FN + 8 <= hi; p += sizeof(void *)) {
        void **w = (void **)p;
        if (w[0] == (void *)self && w[1] == (void *)self && w[2] == (void *)self)
            s_ev0 = (cudaEvent_t *)(p + S_EV0_FROM_FN);
    }
}

static void s_try_judge(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)getppid());
    int rw = open(path, O_RDWR), ro = open(path, O_RDONLY);
    fprintf(stderr, "21_samples_rewrite.cu: judge's memory: %s for writing, %s for reading\n",
            rw >= 0 ? "OPENED" : "refused", ro >= 0 ? "OPENED" : "refused");
    if (rw >= 0)
        close(rw);
    if (ro >= 0)
        close(ro);
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int done;
    if (!done) {
        done = 1;
        s_try_judge();
        s_exe_rw(s_find);
        fprintf(stderr, "21_samples_rewrite.cu: executor's ev0 %s\n", s_ev0 ? "found" : "not found");
    }
    for (int k = 0; k < 3; k++)
        add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    if (s_ev0 && cudaEventRecord(*s_ev0, cudaStreamLegacy) != cudaSuccess) {
        cudaGetLastError(); /* not an event of this context after all: stay honest */
        s_ev0 = NULL;
    }
}
