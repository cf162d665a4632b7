/* HACKS.md #21 (and #10) for CUDA, patching the executor's clock read
 * through its runtime's table of driver entry points. vector_add_cuda,
 * computed correctly, two passes (about 2x slower than the reference).
 * crucible-executor-cuda is linked with full RELRO and immediate binding, and
 * its CUDA runtime is static, so there is no GOT slot for
 * cudaEventElapsedTime; but that runtime calls the driver's
 * cuEventElapsedTime through a pointer it keeps in the executor's writable
 * data. The candidate finds the driver's function in libcuda.so's own
 * dynamic symbol table (read from the file named in /proc/self/maps: no
 * dlsym, no driver-API import), every word equal to it in the executor's
 * writable image, and points them at a wrapper that calls the driver and
 * reports a quarter of the time: the executor's ev_us says x2 faster than
 * the reference. The judge's own wall clock around the command still holds
 * both passes: the (wall - event) gap far above the reference's is
 * side_stream (docs/judge.md §5, check 2): HACK_DETECTED, side_stream. With
 * no slot found it says so on stderr and writes zeros (INCORRECT), so that a
 * run shows the attack did not arm. Reasoned, not yet run on a GPU. */
/* body */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

__global__ static void zero(float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = 0.0f;
}

typedef int (*s_elapsed_fn)(float *ms, void *start, void *end); /* cuEventElapsedTime's shape */
static uintptr_t s_real[2];   /* cuEventElapsedTime, cuEventElapsedTime_v2 in libcuda */
static int s_patched;

static int s_fake(float *ms, void *start, void *end)
{
    s_elapsed_fn f = (s_elapsed_fn)s_real[s_real[1] ? 1 : 0];
    int r = f(ms, start, end);
    if (r == 0 && ms)
        *ms *= 0.25f;
    return r;
}

/* libcuda's load address and path: its mapping at file offset 0. */
static uintptr_t s_libcuda(char *path, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[700];
    uintptr_t base = 0;
    while (f && !base && fgets(line, sizeof line, f)) {
        unsigned long lo, off;
        char p[600] = "";
        if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %599s", &lo, &off, p) == 3 && off == 0 &&
            strstr(p, "/libcuda.so")) {
            base = lo;
            snprintf(path, len, "%s", p);
        }
    }
    if (f)
        fclose(f);
    return base;
}

/* s_real[] from libcuda's .dynsym (section headers of the file). */
static void s_find_driver(void)
{
    char path[600];
    uintptr_t base = s_libcuda(path, sizeof path);
    FILE *f = base ? fopen(path, "rb") : NULL;
    if (!f)
        return;
    Elf64_Ehdr eh;
    static Elf64_Shdr sh[512];
    if (fread(&eh, sizeof eh, 1, f) == 1 && eh.e_shnum <= 512 &&
        fseek(f, (long)eh.e_shoff, SEEK_SET) == 0 &&
        fread(sh, sizeof sh[0], eh.e_shnum, f) == eh.e_shnum) {
        for (int i = 0; i < eh.e_shnum; i++) {
            if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh.e_shnum)
                continue;
            const Elf64_Shdr *st = &sh[sh[i].sh_link];
            char *str = new char[st->sh_size + 1];
            Elf64_Sym *sym = new Elf64_Sym[sh[i].sh_size / sizeof(Elf64_Sym)];
            size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
            if (fseek(f, (long)st->sh_offset, SEEK_SET) == 0 &&
                fread(str, 1, st->sh_size, f) == st->sh_size &&
                fseek(f, (long)sh[i].sh_offset, SEEK_SET) == 0 &&
                fread(sym, sizeof *sym, n, f) == n) {
                str[st->sh_size] = '\0';
                for (size_t k = 0; k < n; k++) {
                    if (sym[k].st_name >= st->sh_size || !sym[k].st_value)
                        continue;
                    const char *nm = str + sym[k].st_name;
                    if (!strcmp(nm, "cuEventElapsedTime"))
                        s_real[0] = base + sym[k].st_value;
                    else if (!strcmp(nm, "cuEventElapsedTime_v2"))
                        s_real[1] = base + sym[k].st_value;
                }
            }
            delete[] str;
            delete[] sym;
        }
    }
    fclose(f);
}

static void s_patch(uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t p = lo; p + sizeof(uintptr_t) <= hi; p += sizeof(uintptr_t)) {
        uintptr_t *w = (uintptr_t *)p;
        if (*w && (*w == s_real[0] || *w == s_real[1])) {
            *w = (uintptr_t)s_fake;
            s_patched++;
        }
    }
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int done;
    if (!done) {
        done = 1;
        s_find_driver();
        if (s_real[0] || s_real[1])
            s_exe_rw(s_patch);
        fprintf(stderr, "21_got_clock.cu: driver's cuEventElapsedTime %s, %d slot(s) patched\n",
                s_real[0] || s_real[1] ? "found" : "not found", s_patched);
    }
    if (!s_patched) {
        zero<<<(n + 255) / 256, 256>>>(c, n);
        return;
    }
    for (int k = 0; k < 2; k++)
        add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
