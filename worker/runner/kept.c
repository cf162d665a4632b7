/* kept.c — see kept.h. */
#include "kept.h"

#include "log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cr_kept_init(cr_kept_t *k, int cap)
{
    memset(k, 0, sizeof *k);
    k->cap = cap < 1 ? 1 : cap > CR_KEPT_MAX ? CR_KEPT_MAX : cap;
}

int cr_kept_same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Empties slot s, returning its item. */
static void *s_out(cr_kept_slot_t *s)
{
    void *item = s->item;
    s->item = NULL;
    s->path[0] = '\0';
    s->used = 0;
    return item;
}

void *cr_kept_take(cr_kept_t *k, const char *path, const struct stat *now, struct stat *st,
                   void **stale)
{
    *stale = NULL;
    if (!path)
        return NULL;
    for (int i = 0; i < CR_KEPT_MAX; i++) {
        cr_kept_slot_t *s = &k->slot[i];
        if (!s->item || strcmp(s->path, path) != 0)
            continue;
        if (!now || !cr_kept_same_file(now, &s->st)) {
            *stale = s_out(s);
            return NULL;
        }
        *st = s->st;
        return s_out(s);
    }
    return NULL;
}

int cr_kept_put(cr_kept_t *k, void *item, const char *path, const struct stat *st,
                void **evicted)
{
    *evicted = NULL;
    if (!item || !path || strlen(path) >= sizeof k->slot[0].path)
        return -1;
    cr_kept_slot_t *free_slot = NULL, *oldest = NULL;
    int n = 0;
    for (int i = 0; i < CR_KEPT_MAX; i++) {
        cr_kept_slot_t *s = &k->slot[i];
        if (!s->item) {
            if (!free_slot)
                free_slot = s;
            continue;
        }
        if (strcmp(s->path, path) == 0) { /* one item a path: the newer one stays */
            *evicted = s_out(s);
            free_slot = s;
            oldest = NULL;
            n = -1; /* room made: no other eviction */
            break;
        }
        n++;
        if (!oldest || s->used < oldest->used)
            oldest = s;
    }
    cr_kept_slot_t *to = free_slot;
    int cap = k->cap < 1 ? 1 : k->cap; /* a set never initialised keeps one */
    if ((n >= cap || !to) && oldest) { /* full: the least recently put one goes */
        *evicted = s_out(oldest);
        to = oldest;
    }
    to->item = item;
    snprintf(to->path, sizeof to->path, "%s", path);
    to->st = *st;
    to->used = ++k->clock;
    return 0;
}

void *cr_kept_pop(cr_kept_t *k)
{
    cr_kept_slot_t *oldest = NULL;
    for (int i = 0; i < CR_KEPT_MAX; i++)
        if (k->slot[i].item && (!oldest || k->slot[i].used < oldest->used))
            oldest = &k->slot[i];
    return oldest ? s_out(oldest) : NULL;
}

int cr_kept_count(const cr_kept_t *k)
{
    int n = 0;
    for (int i = 0; i < CR_KEPT_MAX; i++)
        n += k->slot[i].item != NULL;
    return n;
}

int cr_kept_setting(const char *name, int def, int lo, int hi)
{
    const char *v = getenv(name);
    if (!v || !v[0])
        return def;
    char *end;
    long n = strtol(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end || n < lo || n > hi) {
        cr_warn("%s='%s' is not a whole number of %d-%d; using %d", name, v, lo, hi, def);
        return def;
    }
    return (int)n;
}
