/* kept.h — what the serving judge keeps between jobs, as bookkeeping only:
 * a least-recently-used set of up to CR_KEPT_MAX items (the CUDA judge's
 * reference executors), each named by the object it loaded (its path, and
 * that file's identity when it loaded it), and the judge's serving settings
 * read from the environment. No CUDA and no processes here, so that the
 * pick/evict rules are tested on the host (tests/test_kept.c); the items
 * are opaque, and whatever this hands back (a stale or evicted item) the
 * caller ends (docs/judge.md §6). */
#ifndef CR_KEPT_H
#define CR_KEPT_H

#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

/* Reference executors kept at most: a context holds several hundred MB of
 * device memory (bench/RESULTS.md, session 15), 16 of them a few GiB of the
 * H200's 139; a GRPO batch of 8 tasks needs 8. */
#define CR_KEPT_MAX 16
/* Spare candidate executors started in one burst at most (the judge's
 * process-wide tables of live and abandoned executors hold 64, exec.c). */
#define CR_KEPT_SPARES_MAX 8

typedef struct {
    void *item;          /* the kept thing; owned by the set; NULL = a free slot */
    char path[PATH_MAX]; /* the object it loaded */
    struct stat st;      /* that file's identity when it loaded it */
    uint64_t used;       /* the set's clock at the item's last put: larger = more recent */
} cr_kept_slot_t;

typedef struct {
    int cap;         /* items kept at most, 1..CR_KEPT_MAX */
    uint64_t clock;  /* puts so far */
    cr_kept_slot_t slot[CR_KEPT_MAX];
} cr_kept_t;

/* An empty set keeping at most cap items (clamped to 1..CR_KEPT_MAX). */
void cr_kept_init(cr_kept_t *k, int cap);

/* Whether a and b are the same file, unchanged (device, inode, size,
 * modification time): the worker's object cache names a build by its
 * inputs, and a file replaced there is another build. */
int cr_kept_same_file(const struct stat *a, const struct stat *b);

/* The item kept for path, taken out of the set (the caller owns it), its
 * file's identity in *st; NULL when none is kept for path. now is path's
 * identity as the caller sees it (NULL: it could not stat it): an item kept
 * for path whose file is not now the same is taken out too and handed back
 * in *stale for the caller to end (NULL otherwise). Items kept for other
 * paths stay. */
void *cr_kept_take(cr_kept_t *k, const char *path, const struct stat *now, struct stat *st,
                   void **stale);

/* Keeps item, which loaded path when that file was st, as the most recent.
 * Returns 0; *evicted is what it pushed out for the caller to end (an item
 * already kept for path, else the least recently put one when the set was
 * full), NULL when nothing was. Returns -1 when path does not fit a slot:
 * nothing kept, the caller still owns item, *evicted NULL. */
int cr_kept_put(cr_kept_t *k, void *item, const char *path, const struct stat *st,
                void **evicted);

/* Takes any one item out (the least recent); NULL when the set is empty:
 * for ending them all. */
void *cr_kept_pop(cr_kept_t *k);

/* Items kept now. */
int cr_kept_count(const cr_kept_t *k);

/* The integer setting in environment variable name, lo..hi; def when it is
 * unset or empty, and (with a warning naming it) when it is not a whole
 * number in range. */
int cr_kept_setting(const char *name, int def, int lo, int hi);

#endif
