/* scheduler.h — the coordinator's in-memory worker registry and its dispatch policy.
 *
 * A worker exists here from its Ready until it is lost (silent for liveness
 * heartbeat intervals), unreachable, or gone after a Disconnect. Pure data
 * and policy, no sockets: the coordinator feeds it events and asks it what
 * to do. Pointers returned stay valid until cr_sched_remove of that worker
 * or cr_sched_destroy. */
#ifndef CR_SCHEDULER_H
#define CR_SCHEDULER_H

#include "hash.h"
#include "wire.h"

#include <stddef.h>
#include <stdint.h>

#define CR_SCHED_ID_MAX 128      /* bytes of a worker id (= store's ids) */
#define CR_SCHED_MAX_BACKENDS 8  /* "c", "cuda", "torch": room to grow */
#define CR_SCHED_BACKEND_MAX 15  /* bytes of a backend name */
/* 1024 jobs at once: far above compile pool + 2 on any machine; a larger
 * credit is clamped rather than trusted. */
#define CR_SCHED_MAX_CREDIT 1024
/* 10 min: a worker in a crash loop (systemd restarts it within seconds) is
 * lost several times inside it; one lost once a day never adds up. */
#define CR_SCHED_DRAIN_WINDOW_MS (10 * 60 * 1000)
/* losses remembered per worker id: the largest drain-after that works */
#define CR_SCHED_LOSS_RING 16
/* 8 GPUs: the most one worker serves (CR_TASK_MAX_GPUS, an HGX node); a larger
 * Ready.gpus is clamped rather than trusted */
#define CR_SCHED_MAX_GPUS 8
/* queue classes one worker serves: its backends, then cuda/1 .. cuda/8 */
#define CR_SCHED_MAX_CLASSES (CR_SCHED_MAX_BACKENDS + CR_SCHED_MAX_GPUS)

typedef struct {
    char id[CR_SCHED_ID_MAX + 1];  /* worker id (also its routing id) */
    cr_peer_t peer;                /* routing id on the workers socket */
    char backends[CR_SCHED_MAX_BACKENDS][CR_SCHED_BACKEND_MAX + 1]; /* languages it serves */
    int nbackends;                 /* entries used in backends */
    uint32_t credit;               /* jobs it can hold at once */
    uint32_t in_flight;            /* jobs assigned to it and not yet resulted */
    int64_t last_seen_ms;          /* monotonic ms of its last message */
    char host[128];                /* host name from Ready */
    char device[128];              /* device name from Ready */
    uint64_t done;                 /* results received from it */
    int draining;                  /* 1 after it said Disconnect: no new jobs */
    int unreachable;               /* 1 after a send to it failed; cleared by its next message */
    int drained;                   /* 1 when unhealthy (lost or INFRA_ERROR drain-after
                                      times): stays connected, gets no new jobs */
    uint32_t infra_streak;         /* its INFRA_ERROR / WORKER_LOST results in a row */
    int task_cache;                /* Ready.task_cache: each task bundle is sent it once */
    int assign_acks;               /* Ready.assign_acks: Acks may ride in its Assigns */
    uint32_t gpus;                 /* Ready.gpus: GPUs of one node it owns, 0..CR_SCHED_MAX_GPUS
                                      (0 and 1 both mean one) */
    int nccl;                      /* Ready.nccl: its runner judges multi-GPU tasks */
    int nvlink;                    /* Ready.nvlink: its GPUs are all joined by NVLink */
    char (*sent)[CR_HASH_HEX_LEN + 1]; /* owned: hashes of the bundles sent it since its
                                      Ready (cr_sched_task_sent); NULL = none */
    size_t nsent;                  /* entries used in sent */
    size_t capsent;                /* entries allocated */
    size_t sent_bytes;             /* cr_wire_task_bytes of the bundles in sent */
    char classes[CR_SCHED_MAX_CLASSES][CR_SCHED_BACKEND_MAX + 1]; /* the queue classes it
                                      serves (cr_sched_classes), worked out once at
                                      cr_sched_register from backends, nccl and gpus */
    int nclasses;                  /* entries used in classes */
} cr_sched_worker_t;

typedef struct cr_sched cr_sched_t;

/* Returns a new empty registry (caller destroys), or NULL on ENOMEM. */
cr_sched_t *cr_sched_new(void);

/* Frees the registry and every worker in it; nulls *self_p. Safe on NULL. */
void cr_sched_destroy(cr_sched_t **self_p);

/* Registers a worker from its Ready: info's id, peer, backends, credit,
 * host and device are copied; the rest is reset (in_flight 0, not draining,
 * not unreachable, last_seen now_ms; done is kept across a re-Ready;
 * drained when its id's losses in the window reach drain-after). A known
 * id is reset in place (*was_known = 1): its old assignments are the
 * caller's to requeue. Credit is clamped to 1..CR_SCHED_MAX_CREDIT. Returns
 * the registry's entry, or NULL on ENOMEM / empty id. */
cr_sched_worker_t *cr_sched_register(cr_sched_t *s, const cr_sched_worker_t *info, int64_t now_ms,
                               int *was_known);

/* Health draining: a worker id lost (or found restarted) drain_after times
 * within CR_SCHED_DRAIN_WINDOW_MS, or whose results were infrastructure
 * failures drain_after times in a row, is drained: cr_sched_free_credit is 0
 * for it until it registers again with fewer losses in the window (a
 * re-Ready resets the streak). 0 turns it off; values above
 * CR_SCHED_LOSS_RING are clamped. The default is 0 (off). */
void cr_sched_set_drain_after(cr_sched_t *s, uint32_t drain_after);

/* Remembers that worker id was lost (or restarted while registered) at
 * now_ms, whether or not it is registered. Returns 1 when the id is now
 * over the limit (a registered entry is then marked drained), else 0. */
int cr_sched_note_lost(cr_sched_t *s, const char *id, int64_t now_ms);

/* Counts one result of w: infra = 1 for an infrastructure failure. Returns
 * 1 when this result drained w, else 0. */
int cr_sched_note_result(cr_sched_t *s, cr_sched_worker_t *w, int infra);

/* Lookups; NULL when unknown. */
cr_sched_worker_t *cr_sched_find_peer(cr_sched_t *s, const cr_peer_t *peer);
cr_sched_worker_t *cr_sched_find(cr_sched_t *s, const char *id);

/* Any message from the worker: it is alive and reachable. */
void cr_sched_touch(cr_sched_worker_t *w, int64_t now_ms);

/* 1 when the worker serves a job of placement class cls (cr_task_class): a
 * language it serves, or "cuda/<N>" (a task with "gpus": N, docs/multigpu.md)
 * when it also judges over NCCL and owns at least N GPUs; that is, when cls
 * is one of its classes (cr_sched_classes), compared as a string: a class
 * cr_task_class would not write ("cuda/02", "cuda/x") is served by nobody. */
int cr_sched_serves(const cr_sched_worker_t *w, const char *cls);

/* The queue classes w serves, in the order its queues are merged: its
 * backends, then for a cuda worker with NCCL "cuda/1" up to "cuda/<gpus>".
 * Writes pointers into out[] (into w: valid while w is) and returns how many
 * (at most CR_SCHED_MAX_CLASSES). */
int cr_sched_classes(const cr_sched_worker_t *w, const char **out);

/* Jobs the worker may take now: credit − in_flight, 0 when draining or
 * unreachable. */
uint32_t cr_sched_free_credit(const cr_sched_worker_t *w);

/* Dispatch policy for one worker: from candidate job languages (oldest
 * first), marks in take[] the ones to assign — those it serves, oldest
 * first, at most its free credit. Returns how many were marked. */
size_t cr_sched_pick(const cr_sched_worker_t *w, const char *const *languages, size_t n, int *take);

/* Task bundles sent once (docs/protocol.md): 1 when w was sent the bundle
 * of hash since its Ready, else 0. */
int cr_sched_task_sent(const cr_sched_worker_t *w, const char *hash);

/* Notes that w was sent the bundle of hash, of bytes (cr_wire_task_bytes),
 * in a message that left: first forgetting every bundle noted before when
 * one more would pass CR_WIRE_TASK_CACHE bundles or CR_WIRE_TASK_CACHE_BYTES
 * (the worker keeps at least what is noted, wire.h). On ENOMEM nothing is
 * noted: the bundle is sent again next time. */
void cr_sched_task_note(cr_sched_worker_t *w, const char *hash, size_t bytes);

/* Bookkeeping when jobs are assigned to / finished by a worker. */
void cr_sched_assigned(cr_sched_worker_t *w, uint32_t n);
void cr_sched_finished(cr_sched_worker_t *w);

/* Writes to out (up to max) the workers silent for more than
 * liveness × heartbeat_ms at now_ms; returns how many. They stay registered
 * until the caller, having requeued their jobs, removes them. */
size_t cr_sched_expire(cr_sched_t *s, int64_t now_ms, int64_t heartbeat_ms, int64_t liveness,
                       cr_sched_worker_t **out, size_t max);

/* Removes and frees w. */
void cr_sched_remove(cr_sched_t *s, cr_sched_worker_t *w);

/* Iteration: the number of workers and the i-th (order changes on remove). */
size_t cr_sched_count(const cr_sched_t *s);
cr_sched_worker_t *cr_sched_at(cr_sched_t *s, size_t i);

#endif
