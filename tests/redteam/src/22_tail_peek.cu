/* HACKS.md #22 against the split judge: which calls does the judge check by
 * its own wall clock? vector_add_cuda. The executor's control block is
 * mapped in the candidate's process (/proc/self/maps names its memfd,
 * crucible-ctl); before each call the executor's copy of the protocol holds
 * the number of empty launches the judge asked for behind the call, and
 * only the calls without them are the judge's wall-clock check samples
 * (docs/cuda-judge.md §12). On those this candidate computes honestly on
 * the legacy stream; on the others it launches its kernel on a
 * non-blocking stream and returns at once, so the call's event window holds
 * nothing and the work drains behind the tail. The one-process judge has no
 * control block: there it is honest. A correct judge compares the event
 * times of both kinds of sample: HACK_DETECTED, timing_mismatch. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define S_TAIL_OFF 1704 /* offsetof(cr_exec_ctl_t, cuda.tail) in exec_proto.h */

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static const unsigned char *s_ctl;
static int s_looked;

static void s_find_ctl(void)
{
    s_looked = 1;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[600];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (strstr(line, "crucible-ctl") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
            s_ctl = (const unsigned char *)lo;
            break;
        }
    }
    if (f)
        fclose(f);
}

void solve(const float *a, const float *b, float *c, int n)
{
    static cudaStream_t side;
    if (!s_looked) {
        s_find_ctl();
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    }
    uint32_t tail = 0;
    if (s_ctl)
        memcpy(&tail, s_ctl + S_TAIL_OFF, sizeof tail);
    add<<<(n + 255) / 256, 256, 0, tail ? side : 0>>>(a, b, c, n);
}
