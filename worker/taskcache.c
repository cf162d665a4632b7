/* taskcache.c — see taskcache.h.
 *
 * An array ordered by receipt, oldest first: a farm's few hundred bundles
 * make a linear lookup cheaper than a job's compile by far, and dropping
 * the oldest is a memmove of pointers. */
#include "taskcache.h"

#include "error.h"
#include "wire.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cr_taskcache {
    Crucible__TaskBundle **tb; /* owned copies (free_unpacked), oldest first */
    size_t n;                  /* bundles kept */
    size_t bytes;              /* cr_wire_task_bytes of all of them */
};

cr_taskcache_t *cr_taskcache_new(void)
{
    cr_taskcache_t *tc = calloc(1, sizeof *tc);
    if (tc && !(tc->tb = calloc(CR_WIRE_TASK_CACHE + 1, sizeof *tc->tb))) {
        free(tc);
        tc = NULL;
    }
    return tc;
}

void cr_taskcache_clear(cr_taskcache_t *tc)
{
    for (size_t i = 0; i < tc->n; i++)
        crucible__task_bundle__free_unpacked(tc->tb[i], NULL);
    tc->n = 0;
    tc->bytes = 0;
}

void cr_taskcache_destroy(cr_taskcache_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_taskcache_clear(*self_p);
    free((*self_p)->tb);
    free(*self_p);
    *self_p = NULL;
}

/* Removes entry i. */
static void s_drop(cr_taskcache_t *tc, size_t i)
{
    tc->bytes -= cr_wire_task_bytes(tc->tb[i]);
    crucible__task_bundle__free_unpacked(tc->tb[i], NULL);
    memmove(tc->tb + i, tc->tb + i + 1, (tc->n - i - 1) * sizeof *tc->tb);
    tc->n--;
}

int cr_taskcache_put(cr_taskcache_t *tc, const Crucible__TaskBundle *tb)
{
    if (!tb->hash || !tb->hash[0] || !tb->task_json || !tb->task_json[0])
        return CR_E_USAGE;
    /* a deep copy through pack/unpack: the Assign is freed right after */
    size_t len = crucible__task_bundle__get_packed_size(tb);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return -ENOMEM;
    crucible__task_bundle__pack(tb, buf);
    Crucible__TaskBundle *copy = crucible__task_bundle__unpack(NULL, len, buf);
    free(buf);
    if (!copy)
        return -ENOMEM;
    for (size_t i = 0; i < tc->n; i++)
        if (strcmp(tc->tb[i]->hash, tb->hash) == 0) {
            s_drop(tc, i);
            break;
        }
    tc->tb[tc->n++] = copy; /* room: at most CR_WIRE_TASK_CACHE before, one spare slot */
    tc->bytes += cr_wire_task_bytes(copy);
    while (tc->n > 1 && (tc->n > CR_WIRE_TASK_CACHE || tc->bytes > CR_WIRE_TASK_CACHE_BYTES))
        s_drop(tc, 0);
    return 0;
}

const Crucible__TaskBundle *cr_taskcache_get(const cr_taskcache_t *tc, const char *hash)
{
    for (size_t i = tc->n; i-- > 0;)
        if (strcmp(tc->tb[i]->hash, hash) == 0)
            return tc->tb[i];
    return NULL;
}

size_t cr_taskcache_count(const cr_taskcache_t *tc)
{
    return tc->n;
}

int cr_taskcache_resolve(const cr_taskcache_t *tc, Crucible__TaskBundle *const *tasks,
                         size_t ntasks, const Crucible__TaskBundle *named,
                         Crucible__TaskBundle *out)
{
    if (named->task_json && named->task_json[0]) {
        *out = *named;
        return 0;
    }
    const Crucible__TaskBundle *tb = NULL;
    for (size_t i = 0; named->hash && named->hash[0] && !tb && i < ntasks; i++)
        if (tasks[i]->hash && strcmp(tasks[i]->hash, named->hash) == 0)
            tb = tasks[i];
    if (!tb && named->hash && named->hash[0])
        tb = cr_taskcache_get(tc, named->hash);
    if (!tb)
        return CR_E_NOT_FOUND;
    *out = *tb;
    if (named->name && named->name[0])
        out->name = named->name;
    return 0;
}
