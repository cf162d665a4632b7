/* docs/hacks.md #14, calling the reference, for vector_add_cuda, without any
 * dl* call for the link audit to see: reads /proc/self/maps, walks each
 * mapped object's dynamic symbol table in memory, and calls the first
 * cr_entry that is not its own (the reference's) with its own arguments.
 * The answer is right and the audit passes; the launch checks see a kernel
 * whose host stub lies in the reference's object and whose name occurs
 * nowhere in the candidate's file: HACK_DETECTED, foreign_kernel. */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*entry_fn)(void **);
extern "C" void cr_entry(void **); /* this object's own (the shim's), to skip it */

/* The cr_entry an object loaded at base exports, read from its dynamic
 * symbol table in memory; NULL when it has none, or when it imports a
 * symbol whose name starts with skip_import. */
static entry_fn entry_at(uintptr_t base, const char *skip_import)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_type != ET_DYN)
        return NULL;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    const Elf64_Dyn *dyn = NULL;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dyn = (const Elf64_Dyn *)(base + ph[i].p_vaddr);
    if (!dyn)
        return NULL;
    uintptr_t symtab = 0, strtab = 0;
    for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_SYMTAB)
            symtab = d->d_un.d_ptr;
        if (d->d_tag == DT_STRTAB)
            strtab = d->d_un.d_ptr;
    }
    if (symtab && symtab < base) /* glibc relocates these in place; others may not */
        symtab += base;
    if (strtab && strtab < base)
        strtab += base;
    if (!symtab || strtab <= symtab)
        return NULL;
    /* ld puts .dynsym right before .dynstr */
    const Elf64_Sym *sym = (const Elf64_Sym *)symtab;
    size_t count = (strtab - symtab) / sizeof *sym;
    entry_fn e = NULL;
    for (size_t i = 0; i < count; i++) {
        const char *name = (const char *)strtab + sym[i].st_name;
        if (sym[i].st_shndx == SHN_UNDEF) {
            if (skip_import && !strncmp(name, skip_import, strlen(skip_import)))
                return NULL;
        } else if (sym[i].st_value && !strcmp(name, "cr_entry")) {
            e = (entry_fn)(base + sym[i].st_value);
        }
    }
    return e;
}

/* Another loaded object's cr_entry (the reference's), found through
 * /proc/self/maps: no dl* call for the link audit to see. */
static entry_fn find_reference(const char *skip_import)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return NULL;
    char line[4096];
    entry_fn found = NULL;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long start, end, off;
        char perms[8], path[3000] = "";
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %2999s", &start, &end, perms, &off, path) < 4)
            continue;
        if (off != 0 || perms[0] != 'r' || path[0] != '/' || !strstr(path, ".so"))
            continue;
        entry_fn e = entry_at((uintptr_t)start, skip_import);
        if (e && e != cr_entry)
            found = e;
    }
    fclose(f);
    return found;
}

void solve(const float *a, const float *b, float *c, int n)
{
    static entry_fn ref;
    if (!ref)
        ref = find_reference(NULL);
    if (!ref)
        return;
    void *pa = (void *)a, *pb = (void *)b, *pc = c;
    int nn = n;
    void *args[4] = {&pa, &pb, &pc, &nn};
    ref(args);
}
