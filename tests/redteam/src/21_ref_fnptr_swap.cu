/* HACKS.md #21 for CUDA, swapping the pointer the reference is called
 * through. vector_add_cuda, computed correctly, two passes (a little slower
 * than the reference). In the one-process judge the judge's table of entries
 * {candidate, reference, baseline} sat in the process that ran the
 * candidate. crucible-executor-cuda still keeps such a table (s_J.fn[3], at
 * every index the entry it loaded): the candidate finds it by its contents,
 * three words equal to its own cr_entry in the executor's writable data
 * (/proc/self/maps, the mappings of /proc/self/exe and the anonymous one
 * after them), and points the reference's and the baseline's slots at a
 * wrapper that computes and then runs its kernel 20 times more. The
 * reference runs in another executor, which never loaded this object and
 * whose table this one cannot reach; the executor calls only the
 * candidate's slot: OK, and no call faster than the reference. Reasoned,
 * not yet run on a GPU. */
/* body */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern "C" void cr_entry(void **args); /* the shim's, below this file */

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static void s_slow(void **args)
{
    for (int k = 0; k < 21; k++)
        cr_entry(args);
}

static int s_swapped;

static void s_swap_in(uintptr_t lo, uintptr_t hi)
{
    void (*self)(void **) = cr_entry, (*slow)(void **) = s_slow;
    for (uintptr_t p = lo; p + 3 * sizeof(void *) <= hi; p += sizeof(void *)) {
        void **w = (void **)p;
        if (w[0] == (void *)self && w[1] == (void *)self && w[2] == (void *)self) {
            w[1] = (void *)slow;
            w[2] = (void *)slow;
            s_swapped++;
        }
    }
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int done;
    if (!done) {
        done = 1;
        s_exe_rw(s_swap_in);
        fprintf(stderr, "21_ref_fnptr_swap.cu: %d entry table(s) swapped\n", s_swapped);
    }
    for (int k = 0; k < 2; k++)
        add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
