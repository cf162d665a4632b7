/* taskcache.h — the task bundles a worker was sent, by hash.
 *
 * A worker that says Ready.task_cache is sent each task bundle once per
 * registration (docs/protocol.md, "Task bundles once"): an Assign carries
 * in its tasks the bundles it names that the coordinator did not send
 * before, and a Job whose task has no task_json names its bundle by hash.
 * This cache keeps the bundles received most recently, at most
 * CR_WIRE_TASK_CACHE of them and CR_WIRE_TASK_CACHE_BYTES of texts (and
 * always the newest), which covers every bundle the coordinator counts as
 * sent (wire.h says why). It is emptied whenever the worker sends Ready,
 * as the coordinator forgets what it sent when it registers the worker. */
#ifndef CR_TASKCACHE_H
#define CR_TASKCACHE_H

#include "crucible.pb-c.h"

#include <stddef.h>

typedef struct cr_taskcache cr_taskcache_t;

/* A new empty cache (caller destroys), or NULL on ENOMEM. */
cr_taskcache_t *cr_taskcache_new(void);

/* Frees the cache and every bundle in it; nulls *self_p. Safe on NULL. */
void cr_taskcache_destroy(cr_taskcache_t **self_p);

/* Forgets every bundle. */
void cr_taskcache_clear(cr_taskcache_t *tc);

/* Keeps a copy of tb (received now: the newest), replacing one of the same
 * hash, then drops the oldest past the bounds. 0, CR_E_USAGE for a bundle
 * without a hash or texts, or -ENOMEM (the cache is then as before). */
int cr_taskcache_put(cr_taskcache_t *tc, const Crucible__TaskBundle *tb);

/* The bundle of hash (the cache's: valid until the next put or clear), or
 * NULL when it is not kept. */
const Crucible__TaskBundle *cr_taskcache_get(const cr_taskcache_t *tc, const char *hash);

/* Bundles kept. */
size_t cr_taskcache_count(const cr_taskcache_t *tc);

/* The whole bundle that named (a Job's task) stands for, into *out, whose
 * strings are borrowed from named, tasks or the cache: named itself when it
 * carries its texts; else the bundle of its hash, from the Assign's own
 * tasks[0..ntasks) first, then the cache, under named's name. Returns 0,
 * or CR_E_NOT_FOUND when that bundle is in neither. */
int cr_taskcache_resolve(const cr_taskcache_t *tc, Crucible__TaskBundle *const *tasks,
                         size_t ntasks, const Crucible__TaskBundle *named,
                         Crucible__TaskBundle *out);

#endif
