/* elfsym.c — see elfsym.h.
 *
 * Design notes.
 *  1. Every read goes through s_in (a range inside the file) or s_addr (a
 *     range of virtual addresses inside one PT_LOAD's file-backed bytes),
 *     both written so that no sum can overflow: they compare lengths with
 *     what is left, never add untrusted numbers.
 *  2. Structures are copied out with memcpy before use: nothing in the file
 *     is aligned for us, and a cast pointer into it would be undefined
 *     behaviour on a crafted offset.
 *  3. The host is little-endian (checked at compile time), so an ELF64 LSB
 *     structure copied out byte for byte is already in host order.
 *  4. open checks everything the accessors will touch (each symbol's name is
 *     NUL-terminated inside the string table, the version array covers every
 *     symbol), so the accessors have no failure path but a bad index. */
#define _GNU_SOURCE
#include "elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "elfsym.c copies ELF64 LSB structures as they are: a little-endian host is needed"
#endif

struct cr_elfsym {
    const uint8_t *data;      /* the file's bytes: mapped (map) or borrowed */
    size_t size;              /* bytes of data */
    void *map;                /* owned mapping of size bytes, or NULL when borrowed */
    size_t phoff;             /* file offset of the program headers */
    size_t phnum;             /* program headers */
    size_t symoff;            /* file offset of the symbol table (DT_SYMTAB) */
    size_t nsyms;             /* symbols, the null symbol included */
    size_t stroff;            /* file offset of the dynamic string table (DT_STRTAB) */
    size_t strsz;             /* bytes of it (DT_STRSZ) */
    size_t strend;            /* one past its last NUL: a name starting below ends inside */
    size_t veroff;            /* file offset of DT_VERSYM's nsyms half-words */
    int have_versym;          /* DT_VERSYM present */
    size_t nneeded;           /* DT_NEEDED entries */
    size_t needed[CR_ELFSYM_MAX_NEEDED]; /* their name offsets in the string table */
};

/* The dynamic tags this reader uses. Every one but DT_NEEDED may appear at
 * most once: ld.so silently keeps the last, and a reader that kept another
 * would audit a different table than the loader binds. */
typedef struct {
    uint64_t hash, gnu_hash, strtab, strsz, symtab, syment, versym;
    uint64_t rela, relasz, relaent, rel, relsz, relent, jmprel, pltrelsz, pltrel;
    uint32_t seen; /* bit per S_T_* below */
} s_dyn_t;

enum {
    S_T_HASH, S_T_GNU_HASH, S_T_STRTAB, S_T_STRSZ, S_T_SYMTAB, S_T_SYMENT, S_T_VERSYM,
    S_T_RELA, S_T_RELASZ, S_T_RELAENT, S_T_REL, S_T_RELSZ, S_T_RELENT, S_T_JMPREL,
    S_T_PLTRELSZ, S_T_PLTREL
};

static const struct {
    int64_t tag;
    const char *name;
    size_t field; /* offset in s_dyn_t */
} s_tags[] = {
    [S_T_HASH] = {DT_HASH, "DT_HASH", offsetof(s_dyn_t, hash)},
    [S_T_GNU_HASH] = {DT_GNU_HASH, "DT_GNU_HASH", offsetof(s_dyn_t, gnu_hash)},
    [S_T_STRTAB] = {DT_STRTAB, "DT_STRTAB", offsetof(s_dyn_t, strtab)},
    [S_T_STRSZ] = {DT_STRSZ, "DT_STRSZ", offsetof(s_dyn_t, strsz)},
    [S_T_SYMTAB] = {DT_SYMTAB, "DT_SYMTAB", offsetof(s_dyn_t, symtab)},
    [S_T_SYMENT] = {DT_SYMENT, "DT_SYMENT", offsetof(s_dyn_t, syment)},
    [S_T_VERSYM] = {DT_VERSYM, "DT_VERSYM", offsetof(s_dyn_t, versym)},
    [S_T_RELA] = {DT_RELA, "DT_RELA", offsetof(s_dyn_t, rela)},
    [S_T_RELASZ] = {DT_RELASZ, "DT_RELASZ", offsetof(s_dyn_t, relasz)},
    [S_T_RELAENT] = {DT_RELAENT, "DT_RELAENT", offsetof(s_dyn_t, relaent)},
    [S_T_REL] = {DT_REL, "DT_REL", offsetof(s_dyn_t, rel)},
    [S_T_RELSZ] = {DT_RELSZ, "DT_RELSZ", offsetof(s_dyn_t, relsz)},
    [S_T_RELENT] = {DT_RELENT, "DT_RELENT", offsetof(s_dyn_t, relent)},
    [S_T_JMPREL] = {DT_JMPREL, "DT_JMPREL", offsetof(s_dyn_t, jmprel)},
    [S_T_PLTRELSZ] = {DT_PLTRELSZ, "DT_PLTRELSZ", offsetof(s_dyn_t, pltrelsz)},
    [S_T_PLTREL] = {DT_PLTREL, "DT_PLTREL", offsetof(s_dyn_t, pltrel)},
};
#define S_NTAGS (sizeof s_tags / sizeof s_tags[0])
#define S_HAS(d, t) (((d)->seen >> (t)) & 1u)

/* Formats a message naming what is malformed; returns -ENOEXEC. */
static int s_bad(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int s_bad(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -ENOEXEC;
}

/* 1 when [off, off + len) lies inside the file. */
static int s_in(const cr_elfsym_t *e, uint64_t off, uint64_t len)
{
    return off <= e->size && len <= e->size - off;
}

static void s_copy(const cr_elfsym_t *e, size_t off, void *dst, size_t len)
{
    memcpy(dst, e->data + off, len); /* callers checked s_in first */
}

static uint32_t s_u32(const cr_elfsym_t *e, size_t off)
{
    uint32_t v;
    s_copy(e, off, &v, sizeof v);
    return v;
}

static void s_phdr(const cr_elfsym_t *e, size_t i, Elf64_Phdr *ph)
{
    s_copy(e, e->phoff + i * sizeof *ph, ph, sizeof *ph);
}

/* File offset of the len bytes at virtual address addr, as ld.so maps them:
 * inside the file-backed part of one PT_LOAD (open checked that each lies
 * inside the file). what names the range in the message. *avail (may be
 * NULL) gets the bytes readable from addr on, len included. */
static int s_addr_avail(const cr_elfsym_t *e, uint64_t addr, uint64_t len, const char *what,
                        size_t *off, uint64_t *avail, char *err, size_t errlen)
{
    int in_bss = 0;
    for (size_t i = 0; i < e->phnum; i++) {
        Elf64_Phdr ph;
        s_phdr(e, i, &ph);
        if (ph.p_type != PT_LOAD || addr < ph.p_vaddr)
            continue;
        uint64_t rel = addr - ph.p_vaddr;
        if (rel <= ph.p_filesz && len <= ph.p_filesz - rel) {
            *off = (size_t)(ph.p_offset + rel);
            if (avail)
                *avail = ph.p_filesz - rel;
            return 0;
        }
        if (rel < ph.p_memsz)
            in_bss = 1;
    }
    if (in_bss)
        return s_bad(err, errlen,
                     "%s: 0x%llx bytes at address 0x%llx run past their PT_LOAD segment's "
                     "file data",
                     what, (unsigned long long)len, (unsigned long long)addr);
    return s_bad(err, errlen, "%s: address 0x%llx is not inside any PT_LOAD segment", what,
                 (unsigned long long)addr);
}

static int s_addr(const cr_elfsym_t *e, uint64_t addr, uint64_t len, const char *what,
                  size_t *off, char *err, size_t errlen)
{
    return s_addr_avail(e, addr, len, what, off, NULL, err, errlen);
}

/* 1 when the string at off of the dynamic string table ends inside it: O(1)
 * per name, so a million names at one offset cost no more than one. */
static int s_str_ok(const cr_elfsym_t *e, uint64_t off)
{
    return off < e->strend;
}

static int s_header(cr_elfsym_t *e, Elf64_Ehdr *eh, char *err, size_t errlen)
{
    if (e->size < SELFMAG || memcmp(e->data, ELFMAG, SELFMAG) != 0)
        return s_bad(err, errlen, "not an ELF file (no \\177ELF magic in the first 4 bytes)");
    if (e->size < EI_NIDENT)
        return s_bad(err, errlen, "truncated: %zu bytes, e_ident needs %d", e->size, EI_NIDENT);
    if (e->data[EI_CLASS] == ELFCLASS32)
        return s_bad(err, errlen, "32-bit ELF (ELFCLASS32): only ELF64 objects are read");
    if (e->data[EI_CLASS] != ELFCLASS64)
        return s_bad(err, errlen, "e_ident[EI_CLASS] %u is not ELFCLASS64", e->data[EI_CLASS]);
    if (e->data[EI_DATA] != ELFDATA2LSB)
        return s_bad(err, errlen, "e_ident[EI_DATA] %u: only little-endian (ELFDATA2LSB) is read",
                     e->data[EI_DATA]);
    if (e->size < sizeof *eh)
        return s_bad(err, errlen, "truncated: %zu bytes, an ELF64 header needs %zu", e->size,
                     sizeof *eh);
    s_copy(e, 0, eh, sizeof *eh);
    if (eh->e_type != ET_DYN)
        return s_bad(err, errlen, "e_type %u is not ET_DYN: not a shared object", eh->e_type);
    if (eh->e_phnum == 0)
        return s_bad(err, errlen, "no program headers (e_phnum 0): not loadable");
    if (eh->e_phnum == PN_XNUM)
        return s_bad(err, errlen, "e_phnum PN_XNUM (extended numbering) is not supported");
    if (eh->e_phentsize != sizeof(Elf64_Phdr))
        return s_bad(err, errlen, "e_phentsize %u, ELF64 program headers have %zu bytes",
                     eh->e_phentsize, sizeof(Elf64_Phdr));
    if (!s_in(e, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
        return s_bad(err, errlen,
                     "program headers: %u at e_phoff 0x%llx run past the end of the %zu-byte file",
                     eh->e_phnum, (unsigned long long)eh->e_phoff, e->size);
    e->phoff = (size_t)eh->e_phoff;
    e->phnum = eh->e_phnum;
    return 0;
}

/* Checks every PT_LOAD's file range and finds the one PT_DYNAMIC. */
static int s_segments(cr_elfsym_t *e, Elf64_Phdr *dyn, char *err, size_t errlen)
{
    int ndyn = 0;
    for (size_t i = 0; i < e->phnum; i++) {
        Elf64_Phdr ph;
        s_phdr(e, i, &ph);
        if (ph.p_type == PT_LOAD && !s_in(e, ph.p_offset, ph.p_filesz))
            return s_bad(err, errlen,
                         "program header %zu (PT_LOAD): 0x%llx bytes at file offset 0x%llx run "
                         "past the end of the %zu-byte file",
                         i, (unsigned long long)ph.p_filesz, (unsigned long long)ph.p_offset,
                         e->size);
        if (ph.p_type == PT_DYNAMIC) {
            if (++ndyn > 1)
                return s_bad(err, errlen, "program header %zu: a second PT_DYNAMIC", i);
            *dyn = ph;
        }
    }
    if (ndyn == 0)
        return s_bad(err, errlen, "no PT_DYNAMIC segment: not a dynamically linked object");
    return 0;
}

/* Reads the dynamic section the way ld.so finds it (by p_vaddr). */
static int s_dynamic(cr_elfsym_t *e, const Elf64_Phdr *ph, s_dyn_t *d, char *err, size_t errlen)
{
    size_t off;
    int rc = s_addr(e, ph->p_vaddr, ph->p_filesz, "PT_DYNAMIC", &off, err, errlen);
    if (rc)
        return rc;
    if (off != ph->p_offset)
        return s_bad(err, errlen,
                     "PT_DYNAMIC: p_offset 0x%llx disagrees with p_vaddr 0x%llx (file offset "
                     "0x%zx)",
                     (unsigned long long)ph->p_offset, (unsigned long long)ph->p_vaddr, off);
    size_t n = (size_t)(ph->p_filesz / sizeof(Elf64_Dyn));
    uint64_t needed_off[CR_ELFSYM_MAX_NEEDED];
    int ended = 0;
    memset(d, 0, sizeof *d);
    for (size_t i = 0; i < n && !ended; i++) {
        Elf64_Dyn dy;
        s_copy(e, off + i * sizeof dy, &dy, sizeof dy);
        if (dy.d_tag == DT_NULL) {
            ended = 1;
        } else if (dy.d_tag == DT_NEEDED) {
            if (e->nneeded == CR_ELFSYM_MAX_NEEDED)
                return s_bad(err, errlen, "PT_DYNAMIC: more than %d DT_NEEDED entries",
                             CR_ELFSYM_MAX_NEEDED);
            needed_off[e->nneeded++] = dy.d_un.d_val;
        } else {
            for (size_t t = 0; t < S_NTAGS; t++) {
                if (s_tags[t].tag != dy.d_tag)
                    continue;
                if (S_HAS(d, t))
                    return s_bad(err, errlen, "PT_DYNAMIC: entry %zu: a second %s", i,
                                 s_tags[t].name);
                d->seen |= 1u << t;
                memcpy((char *)d + s_tags[t].field, &dy.d_un.d_val, sizeof(uint64_t));
                break;
            }
        }
    }
    if (!ended)
        return s_bad(err, errlen, "PT_DYNAMIC: %zu entries without a DT_NULL", n);
    if (!S_HAS(d, S_T_STRTAB) || !S_HAS(d, S_T_STRSZ) || !S_HAS(d, S_T_SYMTAB))
        return s_bad(err, errlen, "PT_DYNAMIC: DT_STRTAB, DT_STRSZ and DT_SYMTAB are required");
    if (S_HAS(d, S_T_SYMENT) && d->syment != sizeof(Elf64_Sym))
        return s_bad(err, errlen, "PT_DYNAMIC: DT_SYMENT %llu, ELF64 symbols have %zu bytes",
                     (unsigned long long)d->syment, sizeof(Elf64_Sym));
    if ((rc = s_addr(e, d->strtab, d->strsz, "DT_STRTAB/DT_STRSZ", &e->stroff, err, errlen)))
        return rc;
    e->strsz = (size_t)d->strsz;
    const uint8_t *nul = e->strsz ? memrchr(e->data + e->stroff, '\0', e->strsz) : NULL;
    e->strend = nul ? (size_t)(nul - (e->data + e->stroff)) + 1 : 0;
    for (size_t i = 0; i < e->nneeded; i++) {
        if (!s_str_ok(e, needed_off[i]))
            return s_bad(err, errlen,
                         "DT_NEEDED %zu: name offset 0x%llx is outside the %zu-byte string table "
                         "or not NUL-terminated",
                         i, (unsigned long long)needed_off[i], e->strsz);
        e->needed[i] = (size_t)needed_off[i];
    }
    return 0;
}

/* The symbol count DT_HASH (nchain) or DT_GNU_HASH (one past the last
 * symbol its chains reach) implies; *count 0 when neither is present. */
static int s_hash_count(const cr_elfsym_t *e, const s_dyn_t *d, uint64_t *count, char *err,
                        size_t errlen)
{
    size_t off;
    int rc;
    *count = 0;
    if (S_HAS(d, S_T_HASH)) {
        if ((rc = s_addr(e, d->hash, 8, "DT_HASH header", &off, err, errlen)))
            return rc;
        uint64_t nbucket = s_u32(e, off), nchain = s_u32(e, off + 4);
        if ((rc = s_addr(e, d->hash, (2 + nbucket + nchain) * 4, "DT_HASH table", &off, err,
                         errlen)))
            return rc;
        *count = nchain;
    }
    if (!S_HAS(d, S_T_GNU_HASH))
        return 0;
    if ((rc = s_addr(e, d->gnu_hash, 16, "DT_GNU_HASH header", &off, err, errlen)))
        return rc;
    uint64_t nbuckets = s_u32(e, off), symoffset = s_u32(e, off + 4),
             bloom = s_u32(e, off + 8);
    /* the 32-bit counts times 8 cannot overflow 64 bits */
    uint64_t head = 16 + bloom * 8 + nbuckets * 4, avail;
    size_t hoff;
    if ((rc = s_addr_avail(e, d->gnu_hash, head, "DT_GNU_HASH buckets", &hoff, &avail, err,
                           errlen)))
        return rc;
    uint64_t last = 0; /* the largest bucket start: its chain ends the table */
    for (uint64_t b = 0; b < nbuckets; b++) {
        uint64_t v = s_u32(e, hoff + 16 + bloom * 8 + b * 4);
        if (v > last)
            last = v;
    }
    uint64_t gcount = symoffset;
    if (last > 0) {
        if (last < symoffset)
            return s_bad(err, errlen, "DT_GNU_HASH: bucket starts at symbol %llu, below "
                         "symoffset %llu", (unsigned long long)last,
                         (unsigned long long)symoffset);
        for (uint64_t i = last;; i++) {
            if (i >= CR_ELFSYM_MAX_SYMS)
                return s_bad(err, errlen, "DT_GNU_HASH: chain runs past %u symbols",
                             CR_ELFSYM_MAX_SYMS);
            if (head + (i - symoffset + 1) * 4 > avail)
                return s_bad(err, errlen, "DT_GNU_HASH: chain of symbol %llu runs past its "
                             "PT_LOAD segment's file data", (unsigned long long)i);
            if (s_u32(e, hoff + head + (i - symoffset) * 4) & 1u) {
                gcount = i + 1;
                break;
            }
        }
    }
    if (gcount > *count)
        *count = gcount;
    return 0;
}

/* One past the largest symbol index a relocation table refers to. */
static int s_reloc_table(const cr_elfsym_t *e, uint64_t addr, uint64_t size, uint64_t ent,
                         const char *what, uint64_t *maxsym, char *err, size_t errlen)
{
    size_t off;
    int rc = s_addr(e, addr, size, what, &off, err, errlen);
    if (rc)
        return rc;
    for (uint64_t i = 0; i < size / ent; i++) {
        uint64_t info;
        s_copy(e, off + i * ent + 8, &info, sizeof info); /* r_info follows r_offset */
        if (ELF64_R_SYM(info) + 1 > *maxsym)
            *maxsym = ELF64_R_SYM(info) + 1;
    }
    return 0;
}

static int s_relocs(const cr_elfsym_t *e, const s_dyn_t *d, uint64_t *maxsym, char *err,
                    size_t errlen)
{
    int rc;
    *maxsym = 0;
    if (S_HAS(d, S_T_RELAENT) && d->relaent != sizeof(Elf64_Rela))
        return s_bad(err, errlen, "PT_DYNAMIC: DT_RELAENT %llu, ELF64 Rela entries have %zu bytes",
                     (unsigned long long)d->relaent, sizeof(Elf64_Rela));
    if (S_HAS(d, S_T_RELENT) && d->relent != sizeof(Elf64_Rel))
        return s_bad(err, errlen, "PT_DYNAMIC: DT_RELENT %llu, ELF64 Rel entries have %zu bytes",
                     (unsigned long long)d->relent, sizeof(Elf64_Rel));
    if (S_HAS(d, S_T_RELA) != S_HAS(d, S_T_RELASZ) || S_HAS(d, S_T_REL) != S_HAS(d, S_T_RELSZ) ||
        S_HAS(d, S_T_JMPREL) != S_HAS(d, S_T_PLTRELSZ))
        return s_bad(err, errlen, "PT_DYNAMIC: a relocation table without its size, or a size "
                                  "without its table");
    if (S_HAS(d, S_T_RELA) && (rc = s_reloc_table(e, d->rela, d->relasz, sizeof(Elf64_Rela),
                                                   "DT_RELA", maxsym, err, errlen)))
        return rc;
    if (S_HAS(d, S_T_REL) && (rc = s_reloc_table(e, d->rel, d->relsz, sizeof(Elf64_Rel),
                                                  "DT_REL", maxsym, err, errlen)))
        return rc;
    if (S_HAS(d, S_T_JMPREL)) {
        if (!S_HAS(d, S_T_PLTREL) || (d->pltrel != DT_RELA && d->pltrel != DT_REL))
            return s_bad(err, errlen, "PT_DYNAMIC: DT_JMPREL needs DT_PLTREL DT_RELA or DT_REL");
        uint64_t ent = d->pltrel == DT_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
        if ((rc = s_reloc_table(e, d->jmprel, d->pltrelsz, ent, "DT_JMPREL", maxsym, err,
                                errlen)))
            return rc;
    }
    return 0;
}

/* The one SHT_DYNSYM section and its string table, or *found 0 when the
 * object has no section headers or no such section. */
static int s_sections(const cr_elfsym_t *e, const Elf64_Ehdr *eh, int *found, Elf64_Shdr *sym,
                      Elf64_Shdr *str, char *err, size_t errlen)
{
    *found = 0;
    if (eh->e_shoff == 0)
        return 0;
    if (eh->e_shentsize != sizeof(Elf64_Shdr))
        return s_bad(err, errlen, "e_shentsize %u, ELF64 section headers have %zu bytes",
                     eh->e_shentsize, sizeof(Elf64_Shdr));
    uint64_t shnum = eh->e_shnum;
    if (shnum == 0) { /* extended numbering: the count is section 0's sh_size */
        if (!s_in(e, eh->e_shoff, sizeof(Elf64_Shdr)))
            return s_bad(err, errlen, "section header 0 at e_shoff 0x%llx is past the end of "
                         "the %zu-byte file", (unsigned long long)eh->e_shoff, e->size);
        Elf64_Shdr s0;
        s_copy(e, (size_t)eh->e_shoff, &s0, sizeof s0);
        shnum = s0.sh_size;
    }
    if (shnum > e->size / sizeof(Elf64_Shdr) || !s_in(e, eh->e_shoff, shnum * sizeof(Elf64_Shdr)))
        return s_bad(err, errlen, "section headers: %llu at e_shoff 0x%llx run past the end of "
                     "the %zu-byte file", (unsigned long long)shnum,
                     (unsigned long long)eh->e_shoff, e->size);
    uint64_t at = 0;
    for (uint64_t i = 0; i < shnum; i++) {
        Elf64_Shdr sh;
        s_copy(e, (size_t)(eh->e_shoff + i * sizeof sh), &sh, sizeof sh);
        if (sh.sh_type != SHT_DYNSYM)
            continue;
        if (*found)
            return s_bad(err, errlen, "sections %llu and %llu are both SHT_DYNSYM",
                         (unsigned long long)at, (unsigned long long)i);
        *found = 1;
        at = i;
        *sym = sh;
    }
    if (!*found)
        return 0;
    if (sym->sh_entsize != sizeof(Elf64_Sym) || sym->sh_size % sizeof(Elf64_Sym) != 0)
        return s_bad(err, errlen, "section %llu (.dynsym): sh_entsize %llu / sh_size %llu are not "
                     "whole %zu-byte symbols", (unsigned long long)at,
                     (unsigned long long)sym->sh_entsize, (unsigned long long)sym->sh_size,
                     sizeof(Elf64_Sym));
    if (!s_in(e, sym->sh_offset, sym->sh_size))
        return s_bad(err, errlen, "section %llu (.dynsym): 0x%llx bytes at 0x%llx run past the "
                     "end of the %zu-byte file", (unsigned long long)at,
                     (unsigned long long)sym->sh_size, (unsigned long long)sym->sh_offset,
                     e->size);
    if (sym->sh_link >= shnum)
        return s_bad(err, errlen, "section %llu (.dynsym): sh_link %u names no section",
                     (unsigned long long)at, sym->sh_link);
    s_copy(e, (size_t)(eh->e_shoff + (uint64_t)sym->sh_link * sizeof *str), str, sizeof *str);
    if (str->sh_type != SHT_STRTAB)
        return s_bad(err, errlen, "section %llu (.dynsym): sh_link %u is not a string table",
                     (unsigned long long)at, sym->sh_link);
    return 0;
}

/* Sets the symbol table from the sections (cross-checked with what the
 * loader reads) or, without them, from the hash tables and relocations. */
static int s_symbols(cr_elfsym_t *e, const Elf64_Ehdr *eh, const s_dyn_t *d, char *err,
                     size_t errlen)
{
    int found, rc;
    Elf64_Shdr sym = {0}, str = {0};
    uint64_t hcount, rcount;
    if ((rc = s_sections(e, eh, &found, &sym, &str, err, errlen)) ||
        (rc = s_hash_count(e, d, &hcount, err, errlen)) ||
        (rc = s_relocs(e, d, &rcount, err, errlen)))
        return rc;
    uint64_t n;
    if (found) {
        n = sym.sh_size / sizeof(Elf64_Sym);
        if (str.sh_offset != e->stroff || str.sh_size != e->strsz)
            return s_bad(err, errlen, ".dynstr (0x%llx bytes at 0x%llx) is not the table "
                         "DT_STRTAB/DT_STRSZ give the loader (0x%zx bytes at 0x%zx)",
                         (unsigned long long)str.sh_size, (unsigned long long)str.sh_offset,
                         e->strsz, e->stroff);
        if (S_HAS(d, S_T_HASH) && hcount != n)
            return s_bad(err, errlen, "DT_HASH counts %llu symbols, .dynsym holds %llu",
                         (unsigned long long)hcount, (unsigned long long)n);
        if (hcount > n)
            return s_bad(err, errlen, "DT_GNU_HASH covers %llu symbols, .dynsym holds %llu",
                         (unsigned long long)hcount, (unsigned long long)n);
        if (rcount > n)
            return s_bad(err, errlen, "a relocation uses symbol index %llu, .dynsym holds %llu "
                         "symbols", (unsigned long long)rcount - 1, (unsigned long long)n);
    } else {
        if (!S_HAS(d, S_T_HASH) && !S_HAS(d, S_T_GNU_HASH))
            return s_bad(err, errlen, "no .dynsym section and no DT_HASH or DT_GNU_HASH: the "
                                      "symbol count is unknown");
        n = hcount > rcount ? hcount : rcount;
    }
    if (n > CR_ELFSYM_MAX_SYMS)
        return s_bad(err, errlen, "%llu dynamic symbols, more than the %u allowed",
                     (unsigned long long)n, CR_ELFSYM_MAX_SYMS);
    if ((rc = s_addr(e, d->symtab, n * sizeof(Elf64_Sym), "DT_SYMTAB", &e->symoff, err, errlen)))
        return rc;
    if (found && e->symoff != sym.sh_offset)
        return s_bad(err, errlen, ".dynsym at file offset 0x%llx is not the table DT_SYMTAB "
                     "gives the loader (file offset 0x%zx)",
                     (unsigned long long)sym.sh_offset, e->symoff);
    e->nsyms = (size_t)n;
    for (size_t i = 0; i < e->nsyms; i++) {
        Elf64_Sym s;
        s_copy(e, e->symoff + i * sizeof s, &s, sizeof s);
        if (!s_str_ok(e, s.st_name))
            return s_bad(err, errlen, "symbol %zu: name offset 0x%x is outside the %zu-byte "
                         "string table or not NUL-terminated", i, s.st_name, e->strsz);
    }
    if (S_HAS(d, S_T_VERSYM)) {
        if ((rc = s_addr(e, d->versym, n * sizeof(Elf64_Half), "DT_VERSYM", &e->veroff, err,
                         errlen)))
            return rc;
        e->have_versym = 1;
    }
    return 0;
}

static int s_open(cr_elfsym_t *e, char *err, size_t errlen)
{
    Elf64_Ehdr eh;
    Elf64_Phdr dyn = {0};
    s_dyn_t d;
    int rc;
    if ((rc = s_header(e, &eh, err, errlen)) || (rc = s_segments(e, &dyn, err, errlen)) ||
        (rc = s_dynamic(e, &dyn, &d, err, errlen)) || (rc = s_symbols(e, &eh, &d, err, errlen)))
        return rc;
    return 0;
}

int cr_elfsym_open_mem(const void *buf, size_t len, cr_elfsym_t **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (!buf && len)
        return s_bad(err, errlen, "no buffer");
    cr_elfsym_t *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    e->data = buf;
    e->size = len;
    int rc = s_open(e, err, errlen);
    if (rc) {
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

int cr_elfsym_open(const char *path, cr_elfsym_t **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -ENOEXEC;
    }
    if ((uint64_t)st.st_size > CR_ELFSYM_MAX_FILE) {
        snprintf(err, errlen, "%s: %lld bytes, more than the %llu a shared object may have", path,
                 (long long)st.st_size, (unsigned long long)CR_ELFSYM_MAX_FILE);
        close(fd);
        return -EFBIG;
    }
    size_t size = (size_t)st.st_size;
    void *map = NULL;
    if (size > 0) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int rc = -errno;
            snprintf(err, errlen, "%s: mmap: %s", path, strerror(-rc));
            close(fd);
            return rc;
        }
    }
    close(fd);
    char why[512];
    int rc = cr_elfsym_open_mem(map, size, out, why, sizeof why);
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, why);
        if (map)
            munmap(map, size);
        return rc;
    }
    (*out)->map = map;
    return 0;
}

void cr_elfsym_destroy(cr_elfsym_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_elfsym_t *e = *self_p;
    if (e->map)
        munmap(e->map, e->size);
    free(e);
    *self_p = NULL;
}

size_t cr_elfsym_count(const cr_elfsym_t *e)
{
    return e->nsyms;
}

int cr_elfsym_symbol(const cr_elfsym_t *e, size_t i, cr_elfsym_sym_t *out)
{
    if (i >= e->nsyms)
        return -ERANGE;
    Elf64_Sym s;
    s_copy(e, e->symoff + i * sizeof s, &s, sizeof s);
    out->name = (const char *)e->data + e->stroff + s.st_name;
    out->defined = s.st_shndx != SHN_UNDEF;
    out->type = ELF64_ST_TYPE(s.st_info);
    out->bind = ELF64_ST_BIND(s.st_info);
    out->versioned = 0;
    if (e->have_versym) {
        Elf64_Half v;
        s_copy(e, e->veroff + i * sizeof v, &v, sizeof v);
        out->versioned = (v & 0x7fff) >= 2; /* bit 15 is "hidden"; 0 local, 1 global */
    }
    return 0;
}

size_t cr_elfsym_needed_count(const cr_elfsym_t *e)
{
    return e->nneeded;
}

const char *cr_elfsym_needed(const cr_elfsym_t *e, size_t i)
{
    return i < e->nneeded ? (const char *)e->data + e->stroff + e->needed[i] : NULL;
}
