/* Row 21, against the split judge: the inputs are mapped read-only, so the
 * candidate writes them through /proc/self/mem, which ignores page
 * protections for private mappings: matmul's b zeroed, c = 0 then matches.
 * The input arena is a shared mapping of a memfd the judge sealed with
 * F_SEAL_FUTURE_WRITE: the kernel refuses the forced write, the judge's own
 * copy is untouched either way, and c = 0 is wrong: INCORRECT. */
/* ---- red-team kit (tests/redteam/src/kit.h, pasted in by tests/redteam/src/make.sh) ----
 * What a hostile candidate needs to find its way around the judge's process
 * without importing one symbol the link audit refuses: raw system calls
 * (inline syscall instructions), the clock read the same way, the loaded
 * objects found through the executable's DT_DEBUG (what dl_iterate_phdr would
 * give), symbols looked up in their dynamic symbol tables (what dlsym would
 * give), the executable's GOT slots, and /proc/self/maps. x86-64 Linux. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

void cr_entry(void **args); /* the shim's, defined after this file in the same unit */

static __attribute__((unused)) long k_sys(long n, long a, long b, long c, long d, long e, long f)
{
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ __volatile__("syscall"
                         : "=a"(r)
                         : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
    return r;
}

static __attribute__((unused)) int64_t k_now(void) /* CLOCK_MONOTONIC, ns */
{
    struct timespec t;
    k_sys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t, 0, 0, 0, 0);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static __attribute__((unused)) void k_spin_ns(int64_t ns)
{
    int64_t end = k_now() + ns;
    while (k_now() < end)
        ;
}

static void k_each_map(int (*fn)(uintptr_t, uintptr_t, const char *, const char *, void *),
                       void *arg);

static int k_exe_cb(uintptr_t lo, uintptr_t hi, const char *perms, const char *path, void *arg)
{
    (void)hi, (void)perms;
    if (!path[0] || path[0] == '[')
        return 0;
    *(uintptr_t *)arg = lo; /* the lowest file mapping: the PIE executable's first page */
    return 1;
}

/* The executable's link map: its ELF header from /proc/self/maps (auxv is
 * closed to a process that is not dumpable), its PT_DYNAMIC, its DT_DEBUG. */
static __attribute__((unused)) struct link_map *k_maps(void)
{
    static struct link_map *head;
    if (head)
        return head;
    uintptr_t base = 0;
    k_each_map(k_exe_cb, &base);
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return NULL;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    const ElfW(Dyn) *dyn = NULL;
    for (size_t i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(base + ph[i].p_vaddr);
    for (; dyn && dyn->d_tag != DT_NULL; dyn++)
        if (dyn->d_tag == DT_DEBUG && dyn->d_un.d_ptr)
            head = ((struct r_debug *)dyn->d_un.d_ptr)->r_map;
    return head;
}

static __attribute__((unused)) uintptr_t k_dptr(const struct link_map *m, long tag)
{
    for (const ElfW(Dyn) *d = m->l_ld; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == tag)
            return d->d_un.d_ptr < m->l_addr ? d->d_un.d_ptr + m->l_addr : d->d_un.d_ptr;
    return 0;
}

/* dlsym, by hand: a defined symbol of m, or NULL. */
static __attribute__((unused)) void *k_sym(const struct link_map *m, const char *name)
{
    const ElfW(Sym) *sym = (const ElfW(Sym) *)k_dptr(m, DT_SYMTAB);
    const char *str = (const char *)k_dptr(m, DT_STRTAB);
    if (!sym || !str || (uintptr_t)str <= (uintptr_t)sym)
        return NULL;
    size_t n = ((uintptr_t)str - (uintptr_t)sym) / sizeof *sym;
    for (size_t i = 1; i < n; i++)
        if (sym[i].st_shndx != SHN_UNDEF && sym[i].st_value && !strcmp(str + sym[i].st_name, name))
            return (void *)(m->l_addr + sym[i].st_value);
    return NULL;
}

/* The first loaded object whose path contains part ("" = the executable). */
static __attribute__((unused)) struct link_map *k_obj(const char *part)
{
    for (struct link_map *m = k_maps(); m; m = m->l_next)
        if (part[0] ? (m->l_name && strstr(m->l_name, part)) : (!m->l_name || !m->l_name[0]))
            return m;
    return NULL;
}

/* The executable's GOT slot for an imported function, or NULL. */
static __attribute__((unused)) void **k_got(const char *name)
{
    struct link_map *m = k_obj("");
    if (!m)
        return NULL;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)k_dptr(m, DT_SYMTAB);
    const char *str = (const char *)k_dptr(m, DT_STRTAB);
    const ElfW(Rela) *r = (const ElfW(Rela) *)k_dptr(m, DT_JMPREL);
    size_t n = 0;
    for (const ElfW(Dyn) *d = m->l_ld; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_PLTRELSZ)
            n = d->d_un.d_val / sizeof *r;
    for (size_t i = 0; r && i < n; i++)
        if (!strcmp(str + sym[ELF64_R_SYM(r[i].r_info)].st_name, name))
            return (void **)(m->l_addr + r[i].r_offset);
    return NULL;
}

/* The reference: the other loaded object that defines cr_entry. */
static __attribute__((unused)) void (*k_ref_entry(void))(void **)
{
    for (struct link_map *m = k_maps(); m; m = m->l_next) {
        void *e = k_sym(m, "cr_entry");
        if (e && e != (void *)cr_entry)
            return (void (*)(void **))e;
    }
    return NULL;
}

/* Calls fn(lo, hi, perms, path, arg) for each line of /proc/self/maps. */
static void k_each_map(int (*fn)(uintptr_t, uintptr_t, const char *, const char *, void *),
                       void *arg)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[600];
    while (f && fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        char perms[8] = "", path[400] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %399[^\n]", &lo, &hi, perms, path) < 3)
            continue;
        if (fn(lo, hi, perms, path, arg))
            break;
    }
    if (f)
        fclose(f);
}

static __attribute__((unused)) int k_stack_cb(uintptr_t lo, uintptr_t hi, const char *perms, const char *path, void *arg)
{
    (void)lo, (void)perms;
    if (strcmp(path, "[stack]") == 0) {
        *(uintptr_t *)arg = hi;
        return 1;
    }
    return 0;
}

static __attribute__((unused)) uintptr_t k_stack_top(void)
{
    static uintptr_t top;
    if (!top)
        k_each_map(k_stack_cb, &top);
    return top;
}
/* ---- end of kit ---- */

#include <fcntl.h>

void solve(const float *a, const float *b, float *c, int M, int N, int K)
{
    (void)a;
    long fd = k_sys(SYS_open, (long)"/proc/self/mem", O_RDWR, 0, 0, 0, 0);
    static float zero[4096];
    if (fd >= 0) {
        size_t bytes = (size_t)K * (size_t)N * sizeof(float);
        for (size_t off = 0; off < bytes; off += sizeof zero) {
            size_t len = bytes - off < sizeof zero ? bytes - off : sizeof zero;
            k_sys(SYS_pwrite64, fd, (long)zero, (long)len, (long)((uintptr_t)b + off), 0, 0);
        }
        k_sys(SYS_close, fd, 0, 0, 0, 0, 0);
    }
    for (int i = 0; i < M * N; i++)
        c[i] = 0.0f;
}
