/* docs/hacks.md #10, timer tampering, for vector_add_cuda: looks up
 * cudaEventElapsedTime and clock_gettime with dlsym and would patch their
 * first bytes (mprotect + a jump) to report tiny times. dlsym and mprotect
 * are refused by the link audit: HACK_DETECTED, link_audit. */
#include <dlfcn.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static int patched;

static void patch(const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f)
        return;
    long page = sysconf(_SC_PAGESIZE);
    void *start = (void *)((uintptr_t)f & ~(uintptr_t)(page - 1));
    if (mprotect(start, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC) == 0)
        patched++; /* the jump would be written here */
}

void solve(const float *a, const float *b, float *c, int n)
{
    if (!patched) {
        patch("cudaEventElapsedTime");
        patch("clock_gettime");
    }
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
