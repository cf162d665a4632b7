/* scheduler.c — see scheduler.h (the cr_sched_ module).
 *
 * The registry is a small array of heap entries: a farm has tens to a few
 * hundred workers and every lookup is a short scan, cheaper than keeping a
 * hash table coherent. Entries are heap-allocated so a pointer survives the
 * array growing. */
#include "scheduler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1024 ids: far above any farm; past it the id lost longest ago is forgotten */
#define CR_SCHED_MAX_HISTORY 1024

/* Loss history of one worker id; it outlives the registry entry. */
typedef struct {
    char id[CR_SCHED_ID_MAX + 1];        /* worker id */
    int64_t t[CR_SCHED_LOSS_RING];       /* monotonic ms of its last losses, ring */
    uint32_t n;                          /* losses recorded in total */
} s_hist_t;

struct cr_sched {
    cr_sched_worker_t **w; /* owned entries, [0, n) */
    size_t n;        /* workers registered */
    size_t cap;      /* slots allocated in w */
    s_hist_t *hist;  /* owned loss histories, [0, nhist) */
    size_t nhist;    /* ids with a history */
    uint32_t drain_after; /* 0 = never drain; <= CR_SCHED_LOSS_RING */
    /* hash indexes into w[] (open addressing, linear probing, -1 empty),
     * rebuilt on register and remove (rare) so that a message's lookup is
     * O(1) at a thousand workers instead of a scan */
    int32_t *by_id;       /* owned, nidx slots */
    int32_t *by_peer;     /* owned, nidx slots */
    size_t nidx;          /* slots: a power of two >= 2n */
};

static uint32_t s_hash(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint32_t h = 2166136261u; /* FNV-1a 32-bit */
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

/* Rebuilds both indexes. On ENOMEM they are dropped and lookups scan. */
static void s_reindex(cr_sched_t *s)
{
    size_t want = 16;
    while (want < 2 * s->n)
        want *= 2;
    if (want != s->nidx) {
        free(s->by_id);
        free(s->by_peer);
        s->by_id = malloc(want * sizeof *s->by_id);
        s->by_peer = malloc(want * sizeof *s->by_peer);
        s->nidx = s->by_id && s->by_peer ? want : 0;
        if (!s->nidx) {
            free(s->by_id), free(s->by_peer);
            s->by_id = s->by_peer = NULL;
            return;
        }
    }
    memset(s->by_id, 0xff, s->nidx * sizeof *s->by_id);
    memset(s->by_peer, 0xff, s->nidx * sizeof *s->by_peer);
    size_t mask = s->nidx - 1;
    for (size_t i = 0; i < s->n; i++) {
        size_t k = s_hash(s->w[i]->id, strlen(s->w[i]->id)) & mask;
        while (s->by_id[k] >= 0)
            k = (k + 1) & mask;
        s->by_id[k] = (int32_t)i;
        k = s_hash(s->w[i]->peer.bytes, s->w[i]->peer.len) & mask;
        while (s->by_peer[k] >= 0)
            k = (k + 1) & mask;
        s->by_peer[k] = (int32_t)i;
    }
}

/* 1 when some class w serves (a backend, or a multi-GPU class "cuda/N",
 * docs/multigpu.md) has no other registered worker that can take its jobs:
 * draining w would then stall that class's queue, so an unhealthy worker
 * stays in service while it is the last of one of its classes (a farm whose
 * workers are all flapping still makes progress, and each job's own
 * attempts cap what a poison job can cost). One rule for every class: the
 * only worker that judges over NCCL stays beside any number of plain cuda
 * workers (they cannot take its "cuda/1"), and so does the only "torch"
 * worker beside other "c" workers. */
static int s_last_healthy(const cr_sched_t *s, const cr_sched_worker_t *w)
{
    for (int b = 0; b < w->nclasses; b++) {
        int other = 0;
        for (size_t i = 0; i < s->n && !other; i++) {
            const cr_sched_worker_t *o = s->w[i];
            other = o != w && !o->drained && !o->draining && !o->unreachable &&
                    cr_sched_serves(o, w->classes[b]);
        }
        if (!other)
            return 1;
    }
    return 0;
}

/* Works out w's queue classes from its backends, nccl and gpus (once, at
 * register: dispatch and placement ask for them every turn). */
static void s_classes(cr_sched_worker_t *w)
{
    int n = 0, cuda = 0;
    for (int i = 0; i < w->nbackends && n < CR_SCHED_MAX_CLASSES; i++) {
        snprintf(w->classes[n++], sizeof w->classes[0], "%s", w->backends[i]);
        cuda |= strcmp(w->backends[i], "cuda") == 0;
    }
    uint32_t g = w->gpus ? w->gpus : 1;
    for (uint32_t k = 1; w->nccl && cuda && k <= g && n < CR_SCHED_MAX_CLASSES; k++)
        snprintf(w->classes[n++], sizeof w->classes[0], "cuda/%u", k);
    w->nclasses = n;
}

cr_sched_t *cr_sched_new(void)
{
    return calloc(1, sizeof(cr_sched_t));
}

void cr_sched_destroy(cr_sched_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_sched_t *s = *self_p;
    for (size_t i = 0; i < s->n; i++) {
        free(s->w[i]->sent);
        free(s->w[i]);
    }
    free(s->w);
    free(s->hist);
    free(s->by_id);
    free(s->by_peer);
    free(s);
    *self_p = NULL;
}

void cr_sched_set_drain_after(cr_sched_t *s, uint32_t drain_after)
{
    s->drain_after = drain_after > CR_SCHED_LOSS_RING ? CR_SCHED_LOSS_RING : drain_after;
}

static s_hist_t *s_hist_find(cr_sched_t *s, const char *id)
{
    for (size_t i = 0; i < s->nhist; i++)
        if (strcmp(s->hist[i].id, id) == 0)
            return &s->hist[i];
    return NULL;
}

/* Losses of id within the window ending at now_ms. */
static uint32_t s_recent_losses(cr_sched_t *s, const char *id, int64_t now_ms)
{
    const s_hist_t *h = s_hist_find(s, id);
    uint32_t k = 0;
    if (!h)
        return 0;
    uint32_t kept = h->n < CR_SCHED_LOSS_RING ? h->n : CR_SCHED_LOSS_RING;
    for (uint32_t i = 0; i < kept; i++)
        k += now_ms - h->t[i] <= CR_SCHED_DRAIN_WINDOW_MS;
    return k;
}

int cr_sched_note_lost(cr_sched_t *s, const char *id, int64_t now_ms)
{
    s_hist_t *h = s_hist_find(s, id);
    if (!h) {
        if (!s->hist && !(s->hist = calloc(CR_SCHED_MAX_HISTORY, sizeof *s->hist)))
            return 0; /* ENOMEM: no history, no draining; dispatch goes on */
        if (s->nhist < CR_SCHED_MAX_HISTORY) {
            h = &s->hist[s->nhist++];
        } else { /* forget the id whose latest loss is oldest */
            h = &s->hist[0];
            for (size_t i = 1; i < s->nhist; i++)
                if (s->hist[i].t[(s->hist[i].n - 1) % CR_SCHED_LOSS_RING] <
                    h->t[(h->n - 1) % CR_SCHED_LOSS_RING])
                    h = &s->hist[i];
        }
        memset(h, 0, sizeof *h);
        snprintf(h->id, sizeof h->id, "%s", id);
    }
    h->t[h->n++ % CR_SCHED_LOSS_RING] = now_ms;
    if (!s->drain_after || s_recent_losses(s, id, now_ms) < s->drain_after)
        return 0;
    cr_sched_worker_t *w = cr_sched_find(s, id);
    if (!w)
        return 1;
    if (s_last_healthy(s, w))
        return 0;
    w->drained = 1;
    return 1;
}

int cr_sched_note_result(cr_sched_t *s, cr_sched_worker_t *w, int infra)
{
    w->infra_streak = infra ? w->infra_streak + 1 : 0;
    if (!s->drain_after || w->drained || w->infra_streak < s->drain_after ||
        s_last_healthy(s, w))
        return 0;
    w->drained = 1;
    return 1;
}

cr_sched_worker_t *cr_sched_find(cr_sched_t *s, const char *id)
{
    if (s->nidx) {
        size_t mask = s->nidx - 1;
        for (size_t k = s_hash(id, strlen(id)) & mask; s->by_id[k] >= 0; k = (k + 1) & mask)
            if (strcmp(s->w[s->by_id[k]]->id, id) == 0)
                return s->w[s->by_id[k]];
        return NULL;
    }
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->w[i]->id, id) == 0)
            return s->w[i];
    return NULL;
}

cr_sched_worker_t *cr_sched_find_peer(cr_sched_t *s, const cr_peer_t *peer)
{
    if (s->nidx) {
        size_t mask = s->nidx - 1;
        for (size_t k = s_hash(peer->bytes, peer->len) & mask; s->by_peer[k] >= 0;
             k = (k + 1) & mask) {
            const cr_peer_t *p = &s->w[s->by_peer[k]]->peer;
            if (cr_wire_peer_cmp(p, peer) == 0)
                return s->w[s->by_peer[k]];
        }
        return NULL;
    }
    for (size_t i = 0; i < s->n; i++) {
        const cr_peer_t *p = &s->w[i]->peer;
        if (cr_wire_peer_cmp(p, peer) == 0)
            return s->w[i];
    }
    return NULL;
}

cr_sched_worker_t *cr_sched_register(cr_sched_t *s, const cr_sched_worker_t *info, int64_t now_ms,
                               int *was_known)
{
    if (was_known)
        *was_known = 0;
    if (!info->id[0])
        return NULL;
    cr_sched_worker_t *w = cr_sched_find(s, info->id);
    if (w) {
        if (was_known)
            *was_known = 1;
    } else {
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 16;
            void *g = realloc(s->w, cap * sizeof *s->w);
            if (!g)
                return NULL;
            s->w = g;
            s->cap = cap;
        }
        w = calloc(1, sizeof *w);
        if (!w)
            return NULL;
        s->w[s->n++] = w;
    }
    uint64_t done = w->done;
    free(w->sent); /* a new registration: the worker emptied its task cache */
    *w = *info;
    w->sent = NULL;
    w->nsent = w->capsent = w->sent_bytes = 0;
    w->id[sizeof w->id - 1] = '\0';
    w->host[sizeof w->host - 1] = '\0';
    w->device[sizeof w->device - 1] = '\0';
    if (w->nbackends < 0)
        w->nbackends = 0;
    if (w->nbackends > CR_SCHED_MAX_BACKENDS)
        w->nbackends = CR_SCHED_MAX_BACKENDS;
    for (int i = 0; i < w->nbackends; i++)
        w->backends[i][CR_SCHED_BACKEND_MAX] = '\0';
    if (w->credit < 1)
        w->credit = 1;
    if (w->credit > CR_SCHED_MAX_CREDIT)
        w->credit = CR_SCHED_MAX_CREDIT;
    if (w->gpus > CR_SCHED_MAX_GPUS)
        w->gpus = CR_SCHED_MAX_GPUS;
    w->nccl = w->nccl != 0;
    w->nvlink = w->nvlink != 0;
    s_classes(w);
    w->in_flight = 0;
    w->draining = 0;
    w->unreachable = 0;
    w->infra_streak = 0;
    w->drained = s->drain_after && s_recent_losses(s, w->id, now_ms) >= s->drain_after &&
                 !s_last_healthy(s, w);
    w->last_seen_ms = now_ms;
    w->done = done;
    s_reindex(s);
    return w;
}

void cr_sched_touch(cr_sched_worker_t *w, int64_t now_ms)
{
    w->last_seen_ms = now_ms;
    w->unreachable = 0;
}

int cr_sched_serves(const cr_sched_worker_t *w, const char *cls)
{
    for (int i = 0; i < w->nclasses; i++)
        if (strcmp(w->classes[i], cls) == 0)
            return 1;
    return 0;
}

int cr_sched_classes(const cr_sched_worker_t *w, const char **out)
{
    for (int i = 0; i < w->nclasses; i++)
        out[i] = w->classes[i];
    return w->nclasses;
}

uint32_t cr_sched_free_credit(const cr_sched_worker_t *w)
{
    if (w->draining || w->drained || w->unreachable || w->in_flight >= w->credit)
        return 0;
    return w->credit - w->in_flight;
}

size_t cr_sched_pick(const cr_sched_worker_t *w, const char *const *languages, size_t n, int *take)
{
    uint32_t room = cr_sched_free_credit(w);
    size_t picked = 0;
    for (size_t i = 0; i < n; i++) {
        take[i] = picked < room && cr_sched_serves(w, languages[i]);
        picked += (size_t)take[i];
    }
    return picked;
}

int cr_sched_task_sent(const cr_sched_worker_t *w, const char *hash)
{
    for (size_t i = 0; i < w->nsent; i++)
        if (strcmp(w->sent[i], hash) == 0)
            return 1;
    return 0;
}

void cr_sched_task_note(cr_sched_worker_t *w, const char *hash, size_t bytes)
{
    if (w->nsent >= CR_WIRE_TASK_CACHE || w->sent_bytes + bytes > CR_WIRE_TASK_CACHE_BYTES)
        w->nsent = w->sent_bytes = 0;
    if (w->nsent == w->capsent) {
        size_t cap = w->capsent ? 2 * w->capsent : 4;
        if (cap > CR_WIRE_TASK_CACHE)
            cap = CR_WIRE_TASK_CACHE;
        void *g = realloc(w->sent, cap * sizeof *w->sent);
        if (!g)
            return;
        w->sent = g;
        w->capsent = cap;
    }
    snprintf(w->sent[w->nsent++], sizeof w->sent[0], "%s", hash);
    w->sent_bytes += bytes;
}

void cr_sched_assigned(cr_sched_worker_t *w, uint32_t n)
{
    w->in_flight += n;
}

void cr_sched_finished(cr_sched_worker_t *w)
{
    if (w->in_flight > 0)
        w->in_flight--;
}

size_t cr_sched_expire(cr_sched_t *s, int64_t now_ms, int64_t heartbeat_ms, int64_t liveness,
                       cr_sched_worker_t **out, size_t max)
{
    size_t k = 0;
    int64_t silence = heartbeat_ms * liveness;
    for (size_t i = 0; i < s->n && k < max; i++)
        if (now_ms - s->w[i]->last_seen_ms > silence)
            out[k++] = s->w[i];
    return k;
}

void cr_sched_remove(cr_sched_t *s, cr_sched_worker_t *w)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->w[i] == w) {
            free(w->sent);
            free(w);
            s->w[i] = s->w[--s->n];
            s_reindex(s);
            return;
        }
    }
}

size_t cr_sched_count(const cr_sched_t *s)
{
    return s->n;
}

cr_sched_worker_t *cr_sched_at(cr_sched_t *s, size_t i)
{
    return i < s->n ? s->w[i] : NULL;
}
