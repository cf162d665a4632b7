/* gw.h — what the gateway's modules share (as SQLite's files share sqliteInt.h).
 *
 * The gateway is one more client of the coordinator: one DEALER (the C
 * client library) owned by the broker thread (state.c), and HTTP handler
 * threads (http.c, libmicrohttpd, one thread per connection) that read and
 * change the batch table under cr__gw_t.mu and wait on cr__gw_t.cond.
 *
 * Design notes.
 *  1. Every batch the gateway knows is an entry of the table, made by a
 *     handler (submit, a remote-reward sample, or a read of a batch the
 *     gateway does not hold: it is adopted and subscribed). Handlers never
 *     touch the socket: they set flags (need_submit, need_subscribe,
 *     need_cancel) and wake the broker through an eventfd.
 *  2. The broker sends, receives, and records what came back into the
 *     entry (records by seq, GroupDone, BatchDone, errors), then broadcasts
 *     cond. A record whose seq is not above the entry's last_seq is a
 *     replay and is dropped, so a reconnect never hands a record over twice.
 *  3. An entry is freed only by the broker's cron, when no handler holds it
 *     (refs == 0) and it has been finished (or failed) for keep_s.
 *  4. Silence: with a submit unacknowledged or a stream open, the
 *     coordinator owes us messages (heartbeats every heartbeat-ms); after
 *     heartbeat-ms x liveness without any, the broker reconnects, resubmits
 *     what was not acknowledged (idempotent by batch and job id) and
 *     subscribes again after each entry's last_seq.
 *  5. Waits are bounded: a handler waits until its own deadline (the
 *     caller's timeout or --request-timeout-s) and then answers with what
 *     it has or an explicit 504, never longer. */
#ifndef CR_GW_H
#define CR_GW_H

#include "config.h"
#include "crucible.pb-c.h"
#include "gateway.h"

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define CR_GW_ID_MAX 128 /* bytes of a batch id, NUL included; the store's ids are shorter */

enum { CR__GW_NEW = 0, CR__GW_SENT, CR__GW_ACKED, CR__GW_FAILED };

typedef struct cr__gw_batch {
    struct cr__gw_batch *next;     /* table list */
    char id[CR_GW_ID_MAX];         /* batch id */
    int state;                     /* CR__GW_* */
    int adopted;                   /* not submitted here: only streamed */
    int refs;                      /* handlers holding it; never freed while > 0 */
    /* the submit, kept until acknowledged (a reconnect resends it) */
    Crucible__TaskBundle **tasks;  /* ntasks bundles; task_owned[i] says who owns each */
    int *task_owned;               /* 1: owned here (inline), 0: the gateway's loaded task */
    size_t ntasks;
    Crucible__JobSpec **jobs;      /* owned; freed once acknowledged */
    size_t njobs_spec;
    Crucible__JobOptions opts;     /* strings point into reward / clock */
    char reward[CR_CONFIG_STR];
    char clock[CR_CONFIG_STR];
    int need_submit, need_subscribe; /* broker work flags */
    char *need_cancel;             /* job id to cancel ("" = all), owned; NULL = none */
    /* the acknowledgement */
    uint32_t accepted, duplicate, rejected;
    json_t *errors;                /* array of strings, owned */
    int http_status;               /* FAILED: status to answer with */
    char error[512];               /* FAILED: why */
    /* the records */
    json_t *index;                 /* job id -> integer index into the arrays, owned */
    size_t n, cap;                 /* jobs known, slots */
    char **job_ids;                /* owned */
    char **rec;                    /* record JSON text per job; NULL until it came; owned */
    uint64_t *rec_seq;             /* seq per job; 0 until it came */
    double *reward_v;              /* reward per job (valid where has_reward) */
    int *has_reward;               /* 1: a reward; 0: none (infrastructure) or not yet */
    int *status;                   /* Status per job; 0 until it came */
    size_t ndone;                  /* records that came */
    size_t *order;                 /* job indices in arrival (seq) order; n slots */
    uint64_t last_seq;             /* highest seq recorded */
    json_t *groups;                /* array of {group_id, job_ids, rewards, advantages, seq} */
    int done;                      /* BatchDone came */
    uint32_t total;                /* BatchDone.total */
    uint32_t cancelled;            /* last CancelAck's count */
    uint64_t cancel_gen;           /* CancelAcks received */
    int64_t t_created_ms;          /* monotonic */
    int64_t t_finished_ms;         /* monotonic; 0 = not finished */
} cr__gw_batch_t;

typedef struct {
    const cr_config_t *cfg;        /* borrowed, lives as long as the gateway */
    pthread_mutex_t mu;            /* guards everything below and every batch */
    pthread_cond_t cond;           /* broadcast on any change a handler may wait for */
    int wake_fd;                   /* eventfd: handlers -> broker */
    cr__gw_batch_t *batches;       /* the table, owned */
    json_t *by_id;                 /* batch id -> entry address (an integer), owned */
    size_t nbatches;
    Crucible__TaskBundle **loaded; /* --tasks bundles, owned; immutable after start */
    size_t nloaded;
    char **tokens;                 /* bearer tokens, owned; NULL when none */
    size_t ntokens;
    int need_status;               /* a handler wants a cluster StatusReply */
    char *status_json;             /* last StatusReply as JSON, owned */
    uint64_t status_gen;           /* StatusReplies received */
    int connected;                 /* heard from the coordinator since the last reconnect */
    int stop;                      /* set by the main thread: the broker returns */
    uint64_t requests;             /* HTTP requests served (for /v1/health) */
    double overhead_us_sum;        /* gateway-side time of remote-reward requests, excluding waits */
    uint64_t overhead_n;
} cr__gw_t;

/* ---- state.c ---- */

/* Under mu: the entry of id, or NULL. */
cr__gw_batch_t *cr__gw_find(cr__gw_t *g, const char *id);
/* Under mu: a new empty entry of id (state NEW), linked; NULL on ENOMEM. */
cr__gw_batch_t *cr__gw_add(cr__gw_t *g, const char *id);
/* Under mu: the index of a job id in b, adding it when add; -1 if absent / ENOMEM. */
long cr__gw_job(cr__gw_batch_t *b, const char *job_id, int add);
/* Wakes the broker (any thread). */
void cr__gw_wake(cr__gw_t *g);
/* The broker thread's body: arg is the cr__gw_t. */
void *cr__gw_broker(void *arg);
/* Frees an entry's submit (tasks it owns, jobs) and empties it. */
void cr__gw_free_submit(cr__gw_batch_t *b);
/* Frees an entry (unlinked by the caller). */
void cr__gw_batch_free(cr__gw_batch_t *b);
/* A loaded task by name, or NULL (no lock: immutable). */
Crucible__TaskBundle *cr__gw_loaded(cr__gw_t *g, const char *name);

/* ---- http.c ---- */

/* Starts the HTTP daemon on cfg->listen; returns an opaque handle or NULL
 * with err saying why. */
void *cr__gw_http_start(cr__gw_t *g, char *err, size_t errlen);
void cr__gw_http_stop(void *daemon);
/* The port the daemon is bound to (for --listen HOST:0). */
unsigned cr__gw_http_port(void *daemon);

/* ---- gateway.c ---- */

#define cr__gw_extract cr_gateway_extract /* gateway.h */

#endif
