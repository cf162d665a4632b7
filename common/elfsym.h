/* elfsym.h — the dynamic symbol table and DT_NEEDED list of an ELF64
 * little-endian shared object, read without libelf.
 *
 * The input is hostile (a candidate's build output, or any bytes a fuzzer
 * makes): every offset, size and count is checked against the file before it
 * is used, nothing is asserted, and a malformed file is refused by open with
 * a message naming what is wrong ("PT_DYNAMIC: DT_STRSZ 0x10000 bytes at
 * 0x3e0 run past the end of their PT_LOAD segment"). Everything is validated
 * at open, so the accessors cannot fail on a reader open returned.
 *
 * What is read is what ld.so reads: the dynamic section found through
 * PT_DYNAMIC and the addresses in it, translated through the PT_LOAD
 * segments. Section headers (.dynsym) give the exact symbol count when
 * present; the loader never looks at them, so a file whose .dynsym or
 * .dynstr sit elsewhere than DT_SYMTAB / DT_STRTAB say, or that has fewer
 * symbols than its hash table or relocations use, is refused rather than
 * trusted. Without section headers the count comes from DT_HASH or
 * DT_GNU_HASH (and the relocations). */
#ifndef CR_ELFSYM_H
#define CR_ELFSYM_H

#include <stddef.h>

/* 1 GiB: a candidate object with fat binaries for several architectures is
 * tens of MiB; anything larger is refused before it is mapped. */
#define CR_ELFSYM_MAX_FILE (1ull << 30)
/* 4 Mi symbols: libcublas, the largest object a task may link, has about
 * a thousand dynamic symbols; a count above this is a crafted file. */
#define CR_ELFSYM_MAX_SYMS (1u << 22)
/* 256 DT_NEEDED entries: a real object needs a handful. */
#define CR_ELFSYM_MAX_NEEDED 256

typedef struct cr_elfsym cr_elfsym_t;

/* One dynamic symbol. name points into the reader and lives until
 * cr_elfsym_destroy. */
typedef struct {
    const char *name; /* NUL-terminated; "" for the null symbol (index 0) */
    int defined;      /* 1: st_shndx != SHN_UNDEF (the object provides it) */
    int type;         /* STT_* of <elf.h>: STT_FUNC, STT_OBJECT, ... */
    int bind;         /* STB_* of <elf.h>: STB_GLOBAL, STB_WEAK, STB_LOCAL, ... */
    int versioned;    /* 1: DT_VERSYM ties it to a symbol version (index >= 2);
                         0: unversioned, or no DT_VERSYM at all */
} cr_elfsym_sym_t;

/* Maps the file at path read-only and validates it (see above). Returns 0
 * and *out (caller destroys), or a negative code with err set and *out
 * NULL: -ENOEXEC for a malformed or unsupported file (not ELF, 32-bit,
 * big-endian, not a shared object, a bad offset, size or count), -EFBIG over
 * CR_ELFSYM_MAX_FILE, -ENOMEM, or -errno of open/fstat/mmap. The file must
 * not shrink while the reader is open (a worker's cache entries never do). */
int cr_elfsym_open(const char *path, cr_elfsym_t **out, char *err, size_t errlen);

/* The same on len bytes at buf, which the caller keeps unchanged and alive
 * until cr_elfsym_destroy (the reader borrows it). */
int cr_elfsym_open_mem(const void *buf, size_t len, cr_elfsym_t **out, char *err,
                       size_t errlen);

/* Safe on NULL; nulls *self_p. */
void cr_elfsym_destroy(cr_elfsym_t **self_p);

/* Number of dynamic symbols, the null symbol at index 0 included. */
size_t cr_elfsym_count(const cr_elfsym_t *e);

/* Symbol i into *out. Returns 0, or -ERANGE when i >= cr_elfsym_count. */
int cr_elfsym_symbol(const cr_elfsym_t *e, size_t i, cr_elfsym_sym_t *out);

/* Number of DT_NEEDED entries, and the i-th ("libc.so.6"), or NULL when i
 * is out of range; the string lives until cr_elfsym_destroy. */
size_t cr_elfsym_needed_count(const cr_elfsym_t *e);
const char *cr_elfsym_needed(const cr_elfsym_t *e, size_t i);

#endif
