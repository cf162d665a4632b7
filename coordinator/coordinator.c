/* coordinator.c — the broker's main loop and protocol handlers.
 *
 * One thread, one loop, named phases (STYLE.md): poll (timeout = next cron),
 * handle clients, intake (Submits stored in steps; one stored in full is
 * committed and answered here), handle workers, replay, cron, commit (then
 * Acks and records go out), dispatch (an Ack due to a worker that gets an
 * Assign rides in it), the Acks left. Every state change goes
 * through the store first and is announced second, so a crash between the
 * two loses an announcement (the client resubscribes after its last seq),
 * never a record.
 *
 * Worker accounting: in_flight counts the jobs the store says are ASSIGNED
 * to the worker; it goes up in dispatch and down when such a job becomes
 * DONE or goes back to the queue, whoever caused it.
 *
 * Trust (docs/security.md, "Coordinator boundaries"):
 *  1. A result is recorded only from the worker its job is ASSIGNED to, on
 *     the connection that worker registered from and, under CURVE, with the
 *     key it registered with; any other is refused, logged, acknowledged
 *     (so an honest worker stops resending it) and not recorded.
 *  2. Under CURVE a worker id belongs to the first key it registered with,
 *     for good (the store's worker_keys table survives restarts).
 *  3. An assignment is a lease: when it runs out (--lease-s) or its holder
 *     is gone, the job is requeued with the try counted.
 *  4. A client's subscriptions, status and cancels are its key's (CURVE);
 *     the clients socket never hands a live route to a second connection
 *     with the same routing id, a subscription ends when a message under
 *     another key arrives on its route, and routing ids are never logged. */
#include "coordinator.h"

#include "curve.h"
#include "error.h"
#include "hash.h"
#include "jobmetrics.h"
#include "log.h"
#include "metrics.h"
#include "record.h"
#include "reward.h"
#include "scheduler.h"
#include "store.h"
#include "task.h"
#include "text.h"
#include "timeutil.h"
#include "wire.h"
#include "zap.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

/* Acks one Assign without jobs carries (s_acks_together): a worker's
 * results of one turn are at most its credit, which a farm keeps in the
 * tens; past this they take several messages. */
#define CR_COORD_ACKS_MSG 64
/* Messages handled per socket per loop turn, so that a flood on one side
 * cannot starve the other or the dispatch phase (CR_COORD_PHASE_MS bounds
 * the time as well). Enough for a turn to take what a thousand workers sent
 * since the last one: their results then share one commit, and a dispatch
 * sweep over the workers serves them all (bench/RESULTS.md, 2026-12-02:
 * at 256 a turn took a quarter of that, for a commit and a sweep each). */
#define CR_COORD_BURST 4096
/* Bytes a batch of records streamed to a client (s_send_record) is first
 * given, doubled as records are added, up to CR_WIRE_BATCH_BYTES: a lone
 * small record (a verdict without its profile is ~150 bytes) costs no 8 KiB,
 * and a full batch grows four times. */
#define CR_COORD_BATCH_MIN 512
/* Records one catching-up subscriber is sent per loop turn (s_replay_step):
 * well under the clients socket's high-water mark. */
#define CR_COORD_REPLAY_STEP 512
/* Messages queued to one client before a send to it fails and its
 * subscriptions end (it resumes from the store after its last seq): this
 * bounds the memory a reader that does not read can hold, whatever the
 * batch's size. */
#define CR_COORD_CLIENT_HWM 4096
/* ms one socket's phase may read for before the loop moves on: two such
 * phases, cron and dispatch stay inside CR_COORD_TURN_BOUND_MS. */
#define CR_COORD_PHASE_MS 15
/* Messages the workers' phase reads in every turn, however late: the
 * workers' heartbeats and results are never starved by a stream of large
 * Submits (about half a millisecond of results). */
#define CR_COORD_MIN_READ 64
/* A Submit is stored in steps (s_phase_intake) of at most this many jobs
 * and bytes of specs, as many a turn as CR_COORD_INTAKE_MS and
 * CR_COORD_INTAKE_TURN_BYTES allow: 2000 jobs in one step held the loop
 * 25-80 ms here, 63 MiB of them 400 ms, and the turn's commit syncs what
 * its steps wrote, about 6 ms a MiB on this machine (bench/RESULTS.md,
 * 2026-12-02). */
#define CR_COORD_INTAKE_JOBS 256
#define CR_COORD_INTAKE_BYTES (1 << 20)
#define CR_COORD_INTAKE_TURN_BYTES (2 << 20)
#define CR_COORD_INTAKE_MS 10
/* Most SubmitAck.errors lines: one per bad task, capped against a flood. */
#define CR_COORD_MAX_ERRORS 64
/* Throughput window: one bucket per second over a minute. */
#define CR_COORD_TP_SECONDS 60
/* Debug builds re-check every store invariant this often (ms); it reads the
 * whole database, so not more. */
#define CR_COORD_CHECK_MS 10000
/* A derived lease (--lease-s 0) adds this to the job's timeouts times the
 * holder's credit: a minute covers a loaded machine's start-up and upload. */
#define CR_COORD_LEASE_MARGIN_MS 60000
/* Jobs per Submit when a hand-filled config leaves it 0: the settings
 * table's default (common/config.c says why). */
#define CR_COORD_MAX_SUBMIT_JOBS 2000
/* A loop turn longer than this is the coordinator's own busy moment: its
 * length is not held against the workers' liveness (s_clock_ms), and it is
 * logged. The bound the loop keeps (bench/RESULTS.md measures it). */
#define CR_COORD_TURN_BOUND_MS 50
/* ms a subscriber whose queue was full waits before its catch-up from the
 * store tries again: from the least, doubled each time its queue is found
 * full again, up to the most, and back to the least once a message to it
 * goes through. A reader that does not read then costs one bounded step
 * every 100 ms, not a step every turn; one that reads, a little slower than
 * the records come, is not held to 4096 records (its queue) per 100 ms: at
 * a fixed 100 ms a 1,000,000-job batch streamed at 41k records/s while its
 * jobs were done at 56k/s (bench/RESULTS.md, issue 20 session 4). */
#define CR_COORD_SLOW_RETRY_MIN_MS 5
#define CR_COORD_SLOW_RETRY_MS 100
/* Replies (SubmitAck, StatusReply, Error) kept for clients whose queue was
 * full, all clients together: past it a reply is dropped (the client's
 * request times out and is resent; Submits are idempotent). */
#define CR_COORD_CARRY_MAX 4096
/* Workers sent a heartbeat per loop turn: a sweep over a thousand workers
 * takes 8 turns, each well under a millisecond of sends. */
#define CR_COORD_BEAT_SLICE 128
/* Cache buckets and entries (batch options, task bundles): a farm runs a few
 * batches and a few hundred tasks at once; past the cap the cache refills. */
#define CR_COORD_CACHE_BUCKETS 1024
#define CR_COORD_CACHE_MAX 4096

typedef struct {
    cr_peer_t peer;                     /* client connection on the clients socket; peer.user
                                           is the key that subscribed ("" plaintext) */
    char batch_id[CR_STORE_ID_MAX + 1]; /* batch it follows */
    int dead;                           /* 1 when a send failed: reaped by s_subs_reap */
    int replaying;                      /* 1 while it catches up from the store: live
                                           records skip it, s_phase_replay sends them */
    int follow;                         /* 1: stays live once caught up */
    uint64_t after;                     /* replaying: records up to this seq were sent */
    uint64_t id;                        /* unique in the process: outbox messages name it */
    uint64_t sent_seq;                  /* the last record its connection took */
    int64_t backoff_ms;                 /* its next wait after a full queue; 0 = the least
                                           (CR_COORD_SLOW_RETRY_MIN_MS) */
    int64_t retry_ms;                   /* mono ms before which its catch-up waits: its
                                           queue was full (s_outbox_flush) */
    int batched;                        /* 1: its client reads Result.records (asked for
                                           record_batches): the turn's records go several a
                                           message (s_send_record) */
    size_t open;                        /* 1 + the index in the outbox of its batch that
                                           records are still added to; 0 = none */
} s_sub_t;

/* Cache of unpacked messages by key (s_cache_get). */
typedef struct s_cache_ent {
    struct s_cache_ent *next; /* bucket chain */
    void *msg;                /* owned unpacked message */
    char key[];               /* batch id or task hash */
} s_cache_ent_t;

typedef struct {
    s_cache_ent_t *b[CR_COORD_CACHE_BUCKETS]; /* owned chains */
    size_t n;                                 /* entries */
    void (*free_fn)(void *msg);               /* frees one msg */
} s_cache_t;

/* An Ack kept for an assign_acks worker (s_ack): sent inside the Assign
 * that dispatch makes for it right after the commit, or alone after that. */
typedef struct {
    cr_peer_t peer;                     /* the worker's connection */
    char batch_id[CR_STORE_ID_MAX + 1]; /* Ack.batch_id */
    char job_id[CR_STORE_ID_MAX + 1];   /* Ack.job_id */
    uint32_t attempt;                   /* Ack.attempt */
    int sent;                           /* 1 once it went inside an Assign */
} s_ack_t;

/* A message kept until the turn's transaction commits (s_send). */
typedef struct {
    void *sock;        /* c->clients or c->workers */
    cr_peer_t peer;    /* its destination */
    uint8_t *buf;      /* owned; the packed envelope starts at buf + off */
    size_t off;        /* bytes before it: a batch's room for its head */
    size_t len;        /* bytes from buf + off */
    size_t cap;        /* bytes allocated after buf + off (a batch grows) */
    int batch;         /* 1: a batch of records (s_send_record) whose head is written
                          when it is sent (s_batch_seal) */
    uint64_t sub;      /* the subscription it belongs to (s_sub_t.id); 0 = none */
    uint64_t seq;      /* the (last) record's seq when it is a Result; else 0 */
} s_outmsg_t;

struct cr_coordinator {
    /* --- configuration --- */
    cr_config_t cfg;                /* copy; defaults filled where 0 */
    /* --- sockets --- */
    void *zctx;                     /* owned ZeroMQ context */
    void *clients;                  /* ROUTER, cfg.clients_endpoint */
    void *workers;                  /* ROUTER, cfg.workers_endpoint */
    cr_curve_t curve;               /* CURVE server keys; curve.on = 0 for plaintext */
    cr_zap_t *zap;                  /* owned ZAP handler when curve.on */
    /* --- state --- */
    cr_store_t *store;              /* owned; the durable queue */
    cr_sched_t *sched;              /* owned; live workers */
    s_sub_t *subs;                  /* owned array of result subscribers */
    size_t nsubs;                   /* entries used */
    size_t capsubs;                 /* entries allocated */
    size_t rr;                      /* dispatch starts at this worker: round robin */
    int dispatch_due;               /* 1 when jobs were queued or credit freed since dispatch */
    s_cache_t options;              /* batch id -> its JobOptions */
    s_cache_t bundles;              /* task hash -> its TaskBundle */
    s_cache_t totals;               /* batch id -> its job count (uint64_t) */
    struct s_intake *intake;        /* owned FIFO of Submits being stored (s_phase_intake) */
    struct s_intake *intake_done;   /* owned: stored in full this turn, freed at its commit */
    int env_taken;                  /* 1: the handler kept the envelope (s_phase_socket) */
    cr_wire_specs_t *specs;         /* owned: the packed jobs of the Submit being handled,
                                       taken by s_client_submit (NULL: decoded whole) */
    cr_store_key_t *pool;           /* owned: room for the keys a dispatch reads from the
                                       queue (s_phase_dispatch), kept between turns */
    size_t cap_pool;                /* keys it holds */
    cr_wire_specs_t *records;       /* owned: the records of the Result being handled as
                                       they came, or NULL (cr_wire_recv_records) */
    int intake_skipped;             /* 1: the last turn left the intake out (too long already) */
    /* --- the turn's transaction (group commit) --- */
    int turn_open;                  /* 1 between s_turn_begin and s_turn_end */
    uint32_t turn_records;          /* records made since s_turn_begin */
    const char *durability;         /* cfg.durability, "full" when unset */
    s_outmsg_t *out;                /* owned: messages kept for after the commit */
    size_t nout;                    /* entries used */
    size_t capout;                  /* entries allocated */
    size_t nopen;                   /* subscriptions with an open batch (s_batches_close's
                                       shortcut: never fewer than there are) */
    uint64_t tag_sub;               /* subscription the messages being kept belong to */
    uint64_t next_sub_id;           /* last s_sub_t.id given */
    s_ack_t *acks;                  /* owned: Acks kept for assign_acks workers (s_ack);
                                       [0, nacks_due) are durable, the rest of this turn */
    size_t nacks;                   /* entries used */
    size_t nacks_due;               /* entries whose turn committed */
    size_t capacks;                 /* entries allocated */
    s_ack_t **ack_order;            /* owned: the due entries of acks sorted by peer after
                                       the commit (s_acks_sort), pointers so that the sort
                                       moves 8 bytes an Ack, not the entry's ~600 */
    size_t cap_order;               /* pointers allocated */
    size_t nsorted;                 /* due entries ack_order covers; 0 = none */
    s_outmsg_t *carry;              /* owned: replies a full client queue refused, sent
                                       again at the next flush (at most CR_COORD_CARRY_MAX) */
    size_t ncarry;                  /* entries used */
    int64_t busy_ms;                /* ms the loop spent in stretches over the turn bound */
    int64_t longest_turn_ms;        /* the longest such stretch, ms */
    uint64_t turns;                 /* loop turns (every wake-up of the poll), logged at exit */
    /* --- timers --- */
    int64_t next_cron_ms;           /* monotonic ms of the next cron phase */
    int beating;                    /* 1 while a sweep of heartbeats is under way */
    size_t beat_next;               /* the sweep's next worker, by cr_sched_at index */
    int64_t next_check_ms;          /* monotonic ms of the next invariant check (debug) */
    /* --- throughput --- */
    uint32_t tp_count[CR_COORD_TP_SECONDS]; /* results per second, by second % 60 */
    int64_t tp_sec[CR_COORD_TP_SECONDS];    /* which second each bucket holds */
    /* --- metrics (NULL when --metrics-addr is empty; s_metrics_*) --- */
    cr_metrics_t *metrics;          /* owned */
    cr_metrics_http_t *metrics_http; /* owned; GET /metrics */
    /* --- control --- */
    atomic_int stop;                /* set by cr_coordinator_stop */
};

static volatile sig_atomic_t s_signalled; /* set by SIGINT / SIGTERM */
/* random per process: keys the hash that stands for a routing id in logs */
static unsigned char s_tag_key[16];

static void s_on_signal(int sig)
{
    (void)sig;
    s_signalled = 1;
}

/* ---- small helpers ---- */

static int s_intake_has(const cr_coordinator_t *c, const char *batch_id);

/* A peer for logs: never its routing id, which is all a second connection
 * would need to ask for its route. With CURVE the key's head comes first
 * (it is who the peer is, and public); the connection is a hash of the id
 * under a per-process random key: stable within one log, useless outside. */
static const char *s_peer_name(const cr_peer_t *p, char *buf, size_t cap)
{
    cr_hash_t h;
    char hex[CR_HASH_HEX_LEN + 1];
    cr_hash_init(&h);
    cr_hash_update(&h, s_tag_key, sizeof s_tag_key);
    cr_hash_update(&h, p->bytes, p->len);
    cr_hash_final_hex(&h, hex);
    if (p->user[0])
        snprintf(buf, cap, "key %.12s… conn %.8s", p->user, hex);
    else
        snprintf(buf, cap, "conn %.8s", hex);
    return buf;
}

/* A batch's owner, for queue limits and access: "curve:<z85 key>" for a
 * CURVE client (the key the ZAP handler authenticated), else the full hex
 * of the connection's routing id. */
static void s_owner_of(const cr_peer_t *p, char out[CR_STORE_OWNER_MAX + 1])
{
    if (p->user[0]) {
        snprintf(out, CR_STORE_OWNER_MAX + 1, "curve:%s", p->user);
        return;
    }
    size_t off = 0;
    for (size_t i = 0; i < p->len && off + 2 < CR_STORE_OWNER_MAX + 1; i++)
        off += (size_t)snprintf(out + off, CR_STORE_OWNER_MAX + 1 - off, "%02x", p->bytes[i]);
    out[off] = '\0';
}

/* 1 when peer may see and cancel batch b. With CURVE only its submitter's
 * key may; a plaintext peer (loopback only, see curve.h) has no identity
 * beyond a routing id that changes with every connection, so `crucible
 * watch` after `crucible submit` must still work there: no check. */
static int s_may_see(const cr_peer_t *peer, const cr_store_batch_t *b)
{
    if (!peer->user[0])
        return 1;
    char owner[CR_STORE_OWNER_MAX + 1];
    s_owner_of(peer, owner);
    return strcmp(owner, b->owner) == 0;
}

/* 1 when id is 1..CR_STORE_ID_MAX bytes of UTF-8 without control
 * characters. (NUL bytes inside a field are refused before this, by
 * cr_wire_recv_text: after decoding they would just end the string.) */
static int s_id_ok(const char *id, int may_be_empty)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0)
        return may_be_empty;
    if (n > CR_STORE_ID_MAX || !cr_wire_utf8_ok(id, n))
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f)
            return 0;
    return 1;
}

static int s_send_now(void *sock, const cr_peer_t *peer, Crucible__Envelope *env)
{
    int rc = cr_wire_send(sock, peer, env);
    if (rc != 0) {
        char who[80];
        cr_debug("send %s to %s failed: %s", cr_wire_body_name(env),
                 s_peer_name(peer, who, sizeof who), zmq_strerror(zmq_errno()));
    }
    return rc;
}

/* The next free slot of the turn's outbox (grown as needed), or NULL when
 * out of memory; it counts once the caller fills it and bumps c->nout. */
static s_outmsg_t *s_outbox_slot(cr_coordinator_t *c)
{
    if (c->nout == c->capout) {
        size_t cap = c->capout ? 2 * c->capout : 256;
        void *g = realloc(c->out, cap * sizeof *c->out);
        if (!g)
            return NULL;
        c->out = g;
        c->capout = cap;
    }
    s_outmsg_t *m = &c->out[c->nout];
    m->off = m->cap = 0;
    m->batch = 0;
    return m;
}

/* Records sent to peer after this go in a new message: what was just kept
 * for it (a GroupDone, a BatchDone, a reply) keeps its place after the
 * records before it. */
static void s_batches_close(cr_coordinator_t *c, const cr_peer_t *peer)
{
    for (size_t i = 0; c->nopen && i < c->nsubs; i++)
        if (c->subs[i].open && cr_wire_peer_cmp(&c->subs[i].peer, peer) == 0) {
            c->subs[i].open = 0;
            c->nopen--;
        }
}

/* Sends env, or, while a turn's transaction is open, keeps it for after
 * the commit: everything to clients (a record streamed, a SubmitAck, a
 * status must describe committed state) and Acks to workers (a worker
 * forgets a result once acknowledged, so the result must be durable
 * first). Assigns and heartbeats go at once: an Assign whose commit is then
 * lost names a job the store has QUEUED, and its result is refused as not
 * the worker's (trust note 1). A kept message counts as sent here; a send
 * that fails at the flush ends that client's subscriptions (s_outbox_flush). */
static int s_send(cr_coordinator_t *c, void *sock, const cr_peer_t *peer, Crucible__Envelope *env)
{
    if (!c->turn_open ||
        (sock == c->workers && env->body_case != CRUCIBLE__ENVELOPE__BODY_ACK))
        return s_send_now(sock, peer, env);
    s_outmsg_t *m = s_outbox_slot(c);
    if (!m)
        return -ENOMEM;
    if (cr_wire_pack(env, &m->buf, &m->len) != 0)
        return CR_E_ZMQ;
    if (sock == c->clients)
        s_batches_close(c, peer);
    m->sock = sock;
    m->peer = *peer;
    m->sub = sock == c->clients ? c->tag_sub : 0;
    m->seq = env->body_case == CRUCIBLE__ENVELOPE__BODY_RESULT && env->result &&
                     env->result->record
                 ? env->result->record->seq
                 : 0;
    c->nout++;
    return 0;
}

/* s_send of a client message already packed (buf, len bytes: an envelope;
 * seq its record's when a Result): copied, the caller keeps buf. */
static int s_send_bytes(cr_coordinator_t *c, const cr_peer_t *peer, const uint8_t *buf,
                        size_t len, uint64_t seq)
{
    if (!c->turn_open) {
        if (zmq_send(c->clients, peer->bytes, peer->len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
            zmq_send(c->clients, buf, len, ZMQ_DONTWAIT) >= 0)
            return 0;
        char who[80];
        cr_debug("send Result to %s failed: %s", s_peer_name(peer, who, sizeof who),
                 zmq_strerror(zmq_errno()));
        return CR_E_ZMQ;
    }
    s_outmsg_t *m = s_outbox_slot(c);
    if (!m)
        return -ENOMEM;
    if (!(m->buf = malloc(len ? len : 1)))
        return -ENOMEM;
    memcpy(m->buf, buf, len);
    s_batches_close(c, peer);
    m->len = len;
    m->sock = c->clients;
    m->peer = *peer;
    m->sub = c->tag_sub;
    m->seq = seq;
    c->nout++;
    return 0;
}

/* Sends a stored record (blob, len bytes packed; seq its seq) to sub as
 * s_send would: to a subscriber that reads batches, while a turn is open,
 * added to its batch of the turn (a new batch when none is open or the
 * record would take it past CR_WIRE_BATCH_BYTES); otherwise alone,
 * Envelope{Result{record}}. 0, or -ENOMEM / CR_E_TOO_BIG. */
static int s_send_record(cr_coordinator_t *c, s_sub_t *sub, const uint8_t *blob, size_t len,
                         uint64_t seq)
{
    size_t entry = cr_wire_batch_entry(len); /* 0: no batch can be made */
    if (!sub->batched || !c->turn_open || !entry || entry > CR_WIRE_BATCH_BYTES) {
        uint8_t *buf = NULL;
        size_t blen = 0;
        int rc = cr_wire_pack_result(blob, len, &buf, &blen);
        if (rc == 0) {
            uint64_t tag = c->tag_sub;
            c->tag_sub = sub->id;
            rc = s_send_bytes(c, &sub->peer, buf, blen, seq);
            c->tag_sub = tag;
        }
        free(buf);
        return rc;
    }
    s_outmsg_t *m = sub->open ? &c->out[sub->open - 1] : NULL;
    if (m && m->len + entry > CR_WIRE_BATCH_BYTES)
        m = NULL; /* full: a new batch */
    /* room as the batch needs it: doubled from CR_COORD_BATCH_MIN, up to
     * the most a batch holds */
    size_t have = m ? m->cap : 0, used = m ? m->len : 0, cap = have ? have : CR_COORD_BATCH_MIN;
    while (cap < used + entry)
        cap *= 2;
    if (cap > CR_WIRE_BATCH_BYTES)
        cap = CR_WIRE_BATCH_BYTES;
    if (!m) {
        /* a new batch: it is sent, and freed, at the flush */
        if (!(m = s_outbox_slot(c)))
            return -ENOMEM;
        if (!(m->buf = malloc(CR_WIRE_BATCH_HEAD + cap)))
            return -ENOMEM;
        m->off = CR_WIRE_BATCH_HEAD;
        m->len = 0;
        m->cap = cap;
        m->batch = 1;
        m->sock = c->clients;
        m->peer = sub->peer;
        m->sub = sub->id;
        c->nout++;
        c->nopen += !sub->open;
        sub->open = c->nout;
    } else if (cap > have) {
        uint8_t *g = realloc(m->buf, CR_WIRE_BATCH_HEAD + cap);
        if (!g)
            return -ENOMEM; /* what the batch holds stays, and is sent */
        m->buf = g;
        m->cap = cap;
    }
    m->len += cr_wire_batch_put(m->buf + m->off + m->len, blob, len);
    m->seq = seq;
    return 0;
}

/* Writes a batch's head before its records (its room at the front of the
 * buffer): the message is then whole, and no record may be added. */
static void s_batch_seal(s_outmsg_t *m)
{
    if (!m->batch)
        return;
    uint8_t head[CR_WIRE_BATCH_HEAD];
    size_t nh = cr_wire_batch_head(head, m->len);
    memcpy(m->buf + m->off - nh, head, nh);
    m->off -= nh;
    m->len += nh;
    m->batch = 0;
}

static void s_error(cr_coordinator_t *c, void *sock, const cr_peer_t *peer, int code,
                    const char *batch_id, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void s_error(cr_coordinator_t *c, void *sock, const cr_peer_t *peer, int code,
                    const char *batch_id, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cr_wire_utf8_scrub(msg);
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Error err = CRUCIBLE__ERROR__INIT;
    err.code = (char *)cr_errname(code);
    err.message = msg;
    err.batch_id = (char *)(batch_id ? batch_id : "");
    env.body_case = CRUCIBLE__ENVELOPE__BODY_ERROR;
    env.error = &err;
    s_send(c, sock, peer, &env);
}

/* ---- caches: what never changes once stored ---- */

/* A batch's options and a task bundle never change once stored (a known
 * batch id or hash is left as it is), so the loop unpacks each once, not
 * once per job. Chained hash buckets; past CR_COORD_CACHE_MAX entries the
 * cache is emptied between turns (s_turn_begin: nothing handed out is held
 * then) and refills from the store: it grows with what is in use, not with
 * the history of the farm. */
static uint32_t s_fnv(const char *k)
{
    uint32_t h = 2166136261u; /* FNV-1a 32-bit offset basis */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 16777619u;
    return h;
}

static void *s_cache_get(s_cache_t *cache, const char *key)
{
    for (s_cache_ent_t *e = cache->b[s_fnv(key) % CR_COORD_CACHE_BUCKETS]; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e->msg;
    return NULL;
}

static void s_cache_clear(s_cache_t *cache)
{
    for (size_t i = 0; i < CR_COORD_CACHE_BUCKETS; i++) {
        while (cache->b[i]) {
            s_cache_ent_t *e = cache->b[i];
            cache->b[i] = e->next;
            cache->free_fn(e->msg);
            free(e);
        }
    }
    cache->n = 0;
}

/* Takes ownership of msg (freed with the cache's free_fn, also on failure). */
static void *s_cache_put(s_cache_t *cache, const char *key, void *msg)
{
    size_t klen = strlen(key);
    s_cache_ent_t *e = malloc(sizeof *e + klen + 1);
    if (!e) {
        cache->free_fn(msg);
        return NULL;
    }
    memcpy(e->key, key, klen + 1);
    e->msg = msg;
    uint32_t b = s_fnv(key) % CR_COORD_CACHE_BUCKETS;
    e->next = cache->b[b];
    cache->b[b] = e;
    cache->n++;
    return msg;
}

/* A batch's options in the cache: decoded, and packed as stored, which is
 * what each of its jobs carries in an Assign (cr_wire_pack_assign). */
typedef struct {
    Crucible__JobOptions *msg; /* owned, decoded */
    uint8_t *packed;           /* owned: the stored bytes */
    size_t len;                /* their bytes */
} s_opts_t;

static void s_free_options(void *m)
{
    s_opts_t *o = m;
    if (o->msg)
        crucible__job_options__free_unpacked(o->msg, NULL);
    free(o->packed);
    free(o);
}

static void s_free_bundle(void *m)
{
    crucible__task_bundle__free_unpacked(m, NULL);
}

/* The batch's stored options, decoded and packed (the cache's: do not
 * free; valid until the turn ends), or NULL. */
static s_opts_t *s_batch_opts(cr_coordinator_t *c, const char *batch_id)
{
    s_opts_t *o = s_cache_get(&c->options, batch_id);
    if (o)
        return o;
    if (!(o = calloc(1, sizeof *o)))
        return NULL;
    if (cr_store_batch_options(c->store, batch_id, &o->packed, &o->len) != 0 ||
        !(o->msg = crucible__job_options__unpack(NULL, o->len, o->packed))) {
        s_free_options(o);
        return NULL;
    }
    return s_cache_put(&c->options, batch_id, o);
}

static Crucible__JobOptions *s_batch_options(cr_coordinator_t *c, const char *batch_id)
{
    s_opts_t *o = s_batch_opts(c, batch_id);
    return o ? o->msg : NULL;
}

/* The task bundle stored under hash, like s_batch_options. */
static Crucible__TaskBundle *s_task_bundle(cr_coordinator_t *c, const char *hash)
{
    Crucible__TaskBundle *t = s_cache_get(&c->bundles, hash);
    if (t)
        return t;
    uint8_t *blob = NULL;
    size_t len = 0;
    if (cr_store_task(c->store, hash, &blob, &len) != 0)
        return NULL;
    t = crucible__task_bundle__unpack(NULL, len, blob);
    free(blob);
    return t ? s_cache_put(&c->bundles, hash, t) : NULL;
}

static void s_cache_del(s_cache_t *cache, const char *key)
{
    for (s_cache_ent_t **pp = &cache->b[s_fnv(key) % CR_COORD_CACHE_BUCKETS]; *pp;
         pp = &(*pp)->next) {
        if (strcmp((*pp)->key, key) == 0) {
            s_cache_ent_t *e = *pp;
            *pp = e->next;
            cache->free_fn(e->msg);
            free(e);
            cache->n--;
            return;
        }
    }
}

/* The batch's job count (cached until its next Submit, the only thing that
 * changes it): a record whose seq equals it completes the batch (seqs are
 * 1..done, store.c invariant 7), so the others need no batch read. 0 when
 * unknown. */
static uint64_t s_batch_total(cr_coordinator_t *c, const char *batch_id)
{
    uint64_t *t = s_cache_get(&c->totals, batch_id);
    if (t)
        return *t;
    cr_store_batch_t b;
    if (cr_store_batch_get(c->store, batch_id, &b) != 0 || !(t = malloc(sizeof *t)))
        return 0;
    *t = b.total;
    return s_cache_put(&c->totals, batch_id, t) ? *t : 0;
}

static uint32_t s_max_attempts(cr_coordinator_t *c, const char *batch_id)
{
    Crucible__JobOptions *o = s_batch_options(c, batch_id);
    return o && o->max_attempts ? o->max_attempts : (uint32_t)c->cfg.max_attempts;
}

/* The clock liveness is judged by: monotonic ms less the time the loop
 * itself was stuck in turns longer than CR_COORD_TURN_BOUND_MS. Whatever a
 * worker sent meanwhile waits in the socket unread; its silence then is
 * ours, not the worker's, and must not make it lost. */
static int64_t s_clock_ms(const cr_coordinator_t *c)
{
    return cr_time_mono_ms() - c->busy_ms;
}

/* Ends a stretch of the turn begun at *t0 (mono ms): a stretch over the
 * bound is logged and counted as the loop's own busy time. */
static void s_turn_mark(cr_coordinator_t *c, int64_t *t0, const char *what)
{
    int64_t now = cr_time_mono_ms(), d = now - *t0;
    *t0 = now;
    if (d <= CR_COORD_TURN_BOUND_MS)
        return;
    c->busy_ms += d;
    if (d > c->longest_turn_ms) {
        c->longest_turn_ms = d;
        cr_warn("loop: %s took %lld ms, over the %d ms bound: not held against workers' liveness",
                what, (long long)d, CR_COORD_TURN_BOUND_MS);
    }
}

static void s_count_result(cr_coordinator_t *c)
{
    int64_t sec = cr_time_mono_ms() / 1000;
    int i = (int)(sec % CR_COORD_TP_SECONDS);
    if (c->tp_sec[i] != sec) {
        c->tp_sec[i] = sec;
        c->tp_count[i] = 0;
    }
    c->tp_count[i]++;
}

static double s_jobs_per_minute(const cr_coordinator_t *c)
{
    int64_t sec = cr_time_mono_ms() / 1000;
    uint64_t sum = 0;
    for (int i = 0; i < CR_COORD_TP_SECONDS; i++)
        if (sec - c->tp_sec[i] < CR_COORD_TP_SECONDS)
            sum += c->tp_count[i];
    return (double)sum;
}

/* ---- metrics: Prometheus on --metrics-addr (common/metrics.h) ---- */

/* Declares the families and listens. Returns 0, or -1 (logged). */
static int s_metrics_open(cr_coordinator_t *c)
{
    if (!c->cfg.metrics_addr[0])
        return 0;
    char err[512] = "out of memory";
    if (!(c->metrics = cr_metrics_new()) || cr_jobmetrics_declare(c->metrics, "crucible") != 0 ||
        cr_metrics_declare(c->metrics, "crucible_queue_depth", CR_METRIC_GAUGE, "jobs queued",
                           NULL, 0) != 0 ||
        cr_metrics_declare(c->metrics, "crucible_jobs_running", CR_METRIC_GAUGE,
                           "jobs assigned to a worker", NULL, 0) != 0 ||
        cr_metrics_declare(c->metrics, "crucible_workers", CR_METRIC_GAUGE,
                           "workers by state (ready, draining, drained, unreachable)", NULL,
                           0) != 0 ||
        cr_metrics_declare(c->metrics, "crucible_workers_lost_total", CR_METRIC_COUNTER,
                           "workers declared lost", NULL, 0) != 0 ||
        cr_metrics_declare(c->metrics, "crucible_evaluations_per_second", CR_METRIC_GAUGE,
                           "records per second over the last minute", NULL, 0) != 0 ||
        !(c->metrics_http = cr_metrics_http_new(c->cfg.metrics_addr, c->metrics, err,
                                                sizeof err))) {
        cr_error("coordinator: metrics: %s", err);
        return -1;
    }
    cr_metrics_add(c->metrics, "crucible_workers_lost_total", NULL, 0);
    cr_info("coordinator: metrics on http://%s/metrics", c->cfg.metrics_addr);
    return 0;
}

/* The gauges as of now, just before a scrape is answered. */
static void s_metrics_refresh(cr_coordinator_t *c)
{
    cr_store_counts_t counts = {0};
    cr_store_counts(c->store, &counts);
    cr_metrics_set(c->metrics, "crucible_queue_depth", NULL, (double)counts.queued);
    cr_metrics_set(c->metrics, "crucible_jobs_running", NULL, (double)counts.assigned);
    cr_metrics_set(c->metrics, "crucible_evaluations_per_second", NULL,
                   s_jobs_per_minute(c) / 60.0);
    double by[4] = {0};
    for (size_t i = 0; i < cr_sched_count(c->sched); i++) {
        const cr_sched_worker_t *w = cr_sched_at(c->sched, i);
        by[w->drained ? 2 : w->draining ? 1 : w->unreachable ? 3 : 0]++;
    }
    static const char *const state[4] = {"state=\"ready\"", "state=\"draining\"",
                                         "state=\"drained\"", "state=\"unreachable\""};
    for (int i = 0; i < 4; i++)
        cr_metrics_set(c->metrics, "crucible_workers", state[i], by[i]);
}

/* ---- subscribers ---- */

static void s_sub_drop(cr_coordinator_t *c, const cr_peer_t *peer, const char *batch_id)
{
    for (size_t i = 0; i < c->nsubs; i++) {
        s_sub_t *s = &c->subs[i];
        if (cr_wire_peer_cmp(&s->peer, peer) == 0 &&
            strcmp(s->batch_id, batch_id) == 0)
            s->dead = 1;
    }
}

/* A message from peer under a key other than the one its route's
 * subscriptions were made with: the route is not theirs any more (a client
 * set another's routing id on a new connection). Those subscriptions end;
 * the owner resubscribes from its own connection after its last seq. */
static void s_subs_reap(cr_coordinator_t *c);

static void s_subs_check_key(cr_coordinator_t *c, const cr_peer_t *peer)
{
    int ended = 0;
    for (size_t i = 0; i < c->nsubs; i++) {
        s_sub_t *s = &c->subs[i];
        if (!s->dead && cr_wire_peer_cmp(&s->peer, peer) == 0 &&
            strcmp(s->peer.user, peer->user) != 0) {
            s->dead = 1;
            ended++;
        }
    }
    if (ended) {
        char who[80];
        cr_warn("client %s: its connection's routing id carries %d subscription%s of another "
                "key: they end (routing id reused)", s_peer_name(peer, who, sizeof who), ended,
                ended == 1 ? "" : "s");
        s_subs_reap(c);
    }
}

static int s_sub_add(cr_coordinator_t *c, const cr_peer_t *peer, const char *batch_id)
{
    if (c->nsubs == c->capsubs) {
        size_t cap = c->capsubs ? 2 * c->capsubs : 16;
        void *g = realloc(c->subs, cap * sizeof *c->subs);
        if (!g)
            return -ENOMEM;
        c->subs = g;
        c->capsubs = cap;
    }
    s_sub_t *s = &c->subs[c->nsubs++];
    memset(s, 0, sizeof *s);
    s->peer = *peer;
    s->id = ++c->next_sub_id;
    snprintf(s->batch_id, sizeof s->batch_id, "%s", batch_id);
    return 0;
}

/* Removes subscribers marked dead (never during a publish loop). */
static void s_subs_reap(cr_coordinator_t *c)
{
    size_t k = 0;
    for (size_t i = 0; i < c->nsubs; i++)
        if (!c->subs[i].dead)
            c->subs[k++] = c->subs[i];
    c->nsubs = k;
}

/* Sends env to every live subscriber of batch_id; a failed send (client
 * gone, or too far behind) ends that subscription: the client resumes with
 * Subscribe{after_seq}. rec (rlen bytes), when not NULL, is instead a
 * stored record, seq its seq, sent by s_send_record. */
static void s_publish(cr_coordinator_t *c, const char *batch_id, Crucible__Envelope *env,
                      const uint8_t *rec, size_t rlen, uint64_t seq)
{
    for (size_t i = 0; i < c->nsubs; i++) {
        s_sub_t *s = &c->subs[i];
        if (s->dead || s->replaying || strcmp(s->batch_id, batch_id) != 0)
            continue;
        c->tag_sub = s->id;
        int rc = rec ? s_send_record(c, s, rec, rlen, seq) : s_send(c, c->clients, &s->peer, env);
        c->tag_sub = 0;
        if (rc != 0) {
            char who[80];
            cr_info("subscriber %s of batch %s unreachable: subscription ended",
                    s_peer_name(&s->peer, who, sizeof who), batch_id);
            s->dead = 1;
        }
    }
}

/* ---- batch and group announcements ---- */

typedef struct {
    size_t n;       /* members collected */
    size_t cap;     /* slots allocated */
    char **ids;     /* owned job ids */
    double *reward; /* rewards, 0 without one */
    int *has;       /* 1 when the member has a reward */
} s_group_t;

static int s_group_collect(const Crucible__RewardRecord *rec, void *arg)
{
    s_group_t *g = arg;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        char **ids = realloc(g->ids, cap * sizeof *ids);
        if (ids)
            g->ids = ids;
        double *r = realloc(g->reward, cap * sizeof *r);
        if (r)
            g->reward = r;
        int *h = realloc(g->has, cap * sizeof *h);
        if (h)
            g->has = h;
        if (!ids || !r || !h)
            return 1;
        g->cap = cap;
    }
    g->ids[g->n] = strdup(rec->job_id);
    if (!g->ids[g->n])
        return 1;
    g->reward[g->n] = rec->has_reward ? rec->reward : 0.0;
    g->has[g->n] = rec->has_reward;
    g->n++;
    return 0;
}

static void s_group_free(s_group_t *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->ids[i]);
    free(g->ids);
    free(g->reward);
    free(g->has);
}

/* Builds GroupDone for a complete group and sends it to `to` (one client,
 * for a replay) or publishes it (live). Live, the advantages are also
 * written into the stored records so a later replay carries them. */
static void s_group_done(cr_coordinator_t *c, const char *batch_id, const char *group_id,
                         const cr_peer_t *to, int live)
{
    s_group_t g = {0};
    double *adv = NULL;
    if (cr_store_group_records(c->store, batch_id, group_id, s_group_collect, &g) != 0 ||
        g.n == 0)
        goto out;
    adv = calloc(g.n, sizeof *adv);
    if (!adv)
        goto out;
    cr_reward_advantages(g.reward, g.has, (int)g.n, adv);
    if (live && cr_store_begin(c->store) == 0) {
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < g.n; i++)
            rc = cr_store_set_advantage(c->store, batch_id, g.ids[i], adv[i]);
        if (rc == 0)
            rc = cr_store_commit(c->store);
        if (rc != 0) {
            cr_store_rollback(c->store);
            cr_error("batch %s group %s: advantages not stored: %s", batch_id, group_id,
                     cr_strerror(rc));
        }
    }
    Crucible__GroupDone gd = CRUCIBLE__GROUP_DONE__INIT;
    gd.batch_id = (char *)batch_id;
    gd.group_id = (char *)group_id;
    gd.n_job_ids = gd.n_rewards = gd.n_advantages = g.n;
    gd.job_ids = g.ids;
    gd.rewards = g.reward;
    gd.advantages = adv;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_GROUP_DONE;
    env.group_done = &gd;
    if (to)
        s_send(c, c->clients, to, &env);
    else
        s_publish(c, batch_id, &env, NULL, 0, 0);
out:
    free(adv);
    s_group_free(&g);
}

typedef struct {
    Crucible__BatchDone__ByStatusEntry e[CR_STORE_NSTATUS];     /* entries, unused tail */
    Crucible__BatchDone__ByStatusEntry *p[CR_STORE_NSTATUS];    /* what the message points at */
} s_by_status_t;

/* BatchDone for a complete batch, to one client or to its subscribers (who
 * are then done with it). */
static void s_batch_done(cr_coordinator_t *c, const char *batch_id, const cr_store_batch_t *b,
                         const cr_peer_t *to)
{
    uint32_t counts[CR_STORE_NSTATUS] = {0};
    s_by_status_t bs;
    Crucible__BatchDone bd = CRUCIBLE__BATCH_DONE__INIT;
    if (cr_store_batch_counts(c->store, batch_id, counts, NULL, NULL) != 0)
        return;
    for (int i = 0; i < CR_STORE_NSTATUS; i++) {
        if (!counts[i])
            continue;
        crucible__batch_done__by_status_entry__init(&bs.e[bd.n_by_status]);
        bs.e[bd.n_by_status].key = (char *)cr_status_name(i);
        bs.e[bd.n_by_status].value = counts[i];
        bs.p[bd.n_by_status] = &bs.e[bd.n_by_status];
        bd.n_by_status++;
    }
    bd.by_status = bs.p;
    bd.batch_id = (char *)batch_id;
    bd.total = b->total;
    bd.last_seq = b->last_seq;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_BATCH_DONE;
    env.batch_done = &bd;
    if (to) {
        s_send(c, c->clients, to, &env);
        return;
    }
    s_publish(c, batch_id, &env, NULL, 0, 0);
    for (size_t i = 0; i < c->nsubs; i++)
        if (!c->subs[i].replaying && strcmp(c->subs[i].batch_id, batch_id) == 0)
            c->subs[i].dead = 1; /* a replaying one gets BatchDone when it catches up */
    s_subs_reap(c);
}

/* A job just became DONE (its record has its seq): stream it, then the
 * group and the batch if this record completed them. blob (len bytes),
 * when not NULL, is rec packed as the store keeps it: the stream is made
 * of it instead of packing rec again. */
static void s_on_record_packed(cr_coordinator_t *c, const Crucible__RewardRecord *rec,
                               const uint8_t *blob, size_t len)
{
    c->turn_records++;
    uint8_t *packed = NULL;
    if (!blob && cr_wire_record_pack(rec, &packed, &len) == 0)
        blob = packed;
    if (blob) {
        s_publish(c, rec->batch_id, NULL, blob, len, rec->seq);
    } else { /* no memory to pack it: the subscribers resume from the store */
        cr_error("job %s/%s: record not streamed: out of memory", rec->batch_id, rec->job_id);
        for (size_t i = 0; i < c->nsubs; i++)
            if (strcmp(c->subs[i].batch_id, rec->batch_id) == 0)
                c->subs[i].dead = 1;
    }
    free(packed);
    if (c->metrics)
        cr_jobmetrics_record(c->metrics, "crucible", NULL, rec);

    if (rec->group_id && rec->group_id[0]) {
        uint32_t members = 0, done = 0;
        uint64_t last = 0;
        if (cr_store_group_state(c->store, rec->batch_id, rec->group_id, &members, &done,
                                 &last) == 0 &&
            members > 0 && done == members && last == rec->seq)
            s_group_done(c, rec->batch_id, rec->group_id, NULL, 1);
    }
    /* Records made together (a cancel, a submit) are announced one by one
     * after they are all stored: only the last one completes the batch. */
    cr_store_batch_t b;
    if (rec->seq == s_batch_total(c, rec->batch_id) &&
        cr_store_batch_get(c->store, rec->batch_id, &b) == 0 && b.total > 0 &&
        b.done == b.total && b.last_seq == rec->seq && !s_intake_has(c, rec->batch_id)) {
        cr_info("batch %s done: %u records", rec->batch_id, b.total);
        s_batch_done(c, rec->batch_id, &b, NULL);
    }
    s_subs_reap(c);
}

static void s_on_record(cr_coordinator_t *c, const Crucible__RewardRecord *rec)
{
    s_on_record_packed(c, rec, NULL, 0);
}

/* ---- workers ---- */

static void s_worker_send(cr_coordinator_t *c, cr_sched_worker_t *w, Crucible__Envelope *env)
{
    s_send(c, c->workers, &w->peer, env);
}

static void s_send_cancel(cr_coordinator_t *c, cr_sched_worker_t *w, const char *batch_id,
                          const char *job_id)
{
    Crucible__Cancel m = CRUCIBLE__CANCEL__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    m.batch_id = (char *)batch_id;
    m.job_id = (char *)job_id;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_CANCEL;
    env.cancel = &m;
    s_worker_send(c, w, &env);
}

/* Puts every job the store has ASSIGNED to worker_id back in the queue:
 * counting the try (the worker was lost) or not (it left politely, or the
 * Assign never reached it). Records made on the way (INFRA_ERROR after the
 * last attempt) are announced. *n_failed gets how many ended that way. */
static size_t s_requeue_worker_jobs(cr_coordinator_t *c, const char *worker_id, int count,
                                    const char *why, size_t *n_failed)
{
    cr_store_key_t *keys = NULL;
    size_t n = 0, requeued = 0, failed = 0;
    if (cr_store_worker_jobs(c->store, worker_id, &keys, &n) != 0)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        Crucible__RewardRecord *rec = NULL;
        int rc = count ? cr_store_requeue(c->store, keys[i].batch_id, keys[i].job_id,
                                          s_max_attempts(c, keys[i].batch_id), why, &rec)
                       : cr_store_unassign(c->store, keys[i].batch_id, keys[i].job_id);
        if (rc != 0) {
            cr_error("job %s/%s of worker %s not requeued: %s", keys[i].batch_id,
                     keys[i].job_id, worker_id, cr_strerror(rc));
            continue;
        }
        if (rec) {
            failed++;
            cr_warn("job %s/%s: %s", keys[i].batch_id, keys[i].job_id, rec->message);
            s_on_record(c, rec);
            crucible__reward_record__free_unpacked(rec, NULL);
        } else {
            requeued++;
        }
    }
    free(keys);
    if (requeued)
        c->dispatch_due = 1;
    if (n_failed)
        *n_failed = failed;
    return requeued;
}

/* The worker is gone: its jobs go back to the queue and it leaves the
 * registry. A worker that said Disconnect first is not held against its jobs. */
static void s_worker_lost(cr_coordinator_t *c, cr_sched_worker_t *w, const char *why)
{
    size_t failed = 0;
    size_t n = s_requeue_worker_jobs(c, w->id, !w->draining, why, &failed);
    char more[64] = "";
    if (failed)
        snprintf(more, sizeof more, ", %zu recorded INFRA_ERROR (attempts spent)", failed);
    cr_warn("worker %s lost: %s; %zu jobs requeued%s", w->id, why, n, more);
    if (c->metrics)
        cr_metrics_add(c->metrics, "crucible_workers_lost_total", NULL, 1);
    if (!w->draining && cr_sched_note_lost(c->sched, w->id, cr_time_mono_ms()))
        cr_warn("worker %s drained: lost %lld times in %d min; when it registers again it gets "
                "no new jobs", w->id, (long long)c->cfg.drain_after,
                CR_SCHED_DRAIN_WINDOW_MS / 60000);
    cr_sched_remove(c->sched, w);
}

static void s_worker_ready(cr_coordinator_t *c, const cr_peer_t *peer, const Crucible__Ready *r)
{
    char who[80];
    s_peer_name(peer, who, sizeof who);
    if (!s_id_ok(r->worker_id, 0) || strlen(r->worker_id) > CR_SCHED_ID_MAX) {
        cr_warn("worker peer %s: Ready with an invalid worker_id: ignored", who);
        s_error(c, c->workers, peer, CR_E_USAGE, "", "Ready: worker_id must be 1..%d bytes",
                CR_SCHED_ID_MAX);
        return;
    }
    /* Under CURVE the id is the key's it was first seen with: checked
     * before anything of the id's (its jobs, its registry entry) is touched,
     * so a Ready under a stolen id changes nothing. */
    if (peer->user[0]) {
        char bound[CR_STORE_KEY_MAX + 1];
        int rc = cr_store_worker_key(c->store, r->worker_id, peer->user, cr_time_now_ms(), bound);
        if (rc != 0) {
            if (rc == CR_E_STATE)
                cr_warn("worker peer %s: Ready as worker %s, which belongs to key %.12s…: "
                        "refused", who, r->worker_id, bound);
            s_error(c, c->workers, peer, rc == CR_E_STATE ? CR_E_STATE : rc, "",
                    "Ready: worker id '%s' is bound to another key", r->worker_id);
            return;
        }
    }
    cr_sched_worker_t *old = cr_sched_find_peer(c->sched, peer);
    if (old && strcmp(old->id, r->worker_id) != 0)
        s_worker_lost(c, old, "its connection re-registered under another id");

    /* Whatever the store still has assigned to this id did not survive: the
     * worker restarted, or it was told Disconnect and lost track. */
    size_t failed = 0;
    size_t n = s_requeue_worker_jobs(c, r->worker_id, 1, "worker restarted", &failed);
    if (n || failed)
        cr_warn("worker %s re-registered: %zu jobs requeued, %zu recorded INFRA_ERROR",
                r->worker_id, n, failed);
    /* a Ready from a worker still registered, or one that held jobs, is a
     * restart nobody saw: it counts as a loss towards draining */
    if ((n || failed || cr_sched_find(c->sched, r->worker_id)) &&
        cr_sched_note_lost(c->sched, r->worker_id, cr_time_mono_ms()))
        cr_warn("worker %s drained: restarted or lost %lld times in %d min; it gets no new jobs",
                r->worker_id, (long long)c->cfg.drain_after, CR_SCHED_DRAIN_WINDOW_MS / 60000);

    cr_sched_worker_t info;
    memset(&info, 0, sizeof info);
    snprintf(info.id, sizeof info.id, "%s", r->worker_id);
    info.peer = *peer;
    for (size_t i = 0; i < r->n_backends && info.nbackends < CR_SCHED_MAX_BACKENDS; i++) {
        /* a '/' names a placement class (cuda/2), which a worker earns by its
         * gpus and nccl, never by naming it */
        if (strlen(r->backends[i]) > CR_SCHED_BACKEND_MAX || !r->backends[i][0] ||
            strchr(r->backends[i], '/'))
            continue;
        snprintf(info.backends[info.nbackends++], CR_SCHED_BACKEND_MAX + 1, "%s",
                 r->backends[i]);
    }
    /* the coordinator bounds what one worker holds, whatever it claims */
    info.credit = r->credit;
    if ((int64_t)info.credit > c->cfg.max_credit) {
        cr_info("worker %s claims credit %u: clamped to --max-credit %lld", r->worker_id,
                r->credit, (long long)c->cfg.max_credit);
        info.credit = (uint32_t)c->cfg.max_credit;
    }
    snprintf(info.host, sizeof info.host, "%s", r->host);
    snprintf(info.device, sizeof info.device, "%s", r->device_name);
    info.task_cache = r->task_cache;
    info.assign_acks = r->assign_acks;
    info.gpus = r->gpus; /* clamped by cr_sched_register */
    info.nccl = r->nccl;
    info.nvlink = r->nvlink;
    int known = 0;
    cr_sched_worker_t *w = cr_sched_register(c->sched, &info, s_clock_ms(c), &known);
    c->dispatch_due = 1;
    if (!w) {
        cr_error("worker %s: cannot register: out of memory", r->worker_id);
        return;
    }
    char backends[CR_SCHED_MAX_BACKENDS * (CR_SCHED_BACKEND_MAX + 2) + 1] = "";
    for (int i = 0; i < w->nbackends; i++) {
        if (i)
            strcat(backends, ",");
        strcat(backends, w->backends[i]);
    }
    cr_info("worker %s %s: host %s, device %s, backends %s, credit %u, gpus %u%s%s", w->id,
            known ? "ready again" : "ready", w->host[0] ? w->host : "?",
            w->device[0] ? w->device : "?", backends[0] ? backends : "none", w->credit,
            w->gpus ? w->gpus : 1, w->nccl ? ", nccl" : "", w->nvlink ? ", nvlink" : "");
}

/* Keeps an Ack for an assign_acks worker until the turn commits; 0, or -1
 * when it must go the ordinary way (no turn open, ids past the store's
 * bound, no memory). */
static int s_ack_keep(cr_coordinator_t *c, cr_sched_worker_t *w, const Crucible__RewardRecord *rec)
{
    if (!c->turn_open || !w->assign_acks || strlen(rec->batch_id) > CR_STORE_ID_MAX ||
        strlen(rec->job_id) > CR_STORE_ID_MAX)
        return -1;
    if (c->nacks == c->capacks) {
        size_t cap = c->capacks ? 2 * c->capacks : 256;
        void *g = realloc(c->acks, cap * sizeof *c->acks);
        if (!g)
            return -1;
        c->acks = g;
        c->capacks = cap;
    }
    s_ack_t *a = &c->acks[c->nacks++];
    c->nsorted = 0; /* ack_order points into acks: sort again (it may have moved) */
    a->peer = w->peer;
    cr_text_copy(a->batch_id, sizeof a->batch_id, rec->batch_id);
    cr_text_copy(a->job_id, sizeof a->job_id, rec->job_id);
    a->attempt = rec->attempt;
    a->sent = 0;
    return 0;
}

static int s_ack_cmp(const void *x, const void *y)
{
    return cr_wire_peer_cmp(&(*(s_ack_t *const *)x)->peer, &(*(s_ack_t *const *)y)->peer);
}

/* The turn committed: its kept Acks are due, grouped by worker in
 * ack_order for s_acks_for. Only results keep Acks (s_ack_keep) and none
 * is handled between this sort and s_acks_flush (dispatch makes none), so
 * acks does not move under the pointers. Without memory for the order,
 * none rides in an Assign: all go alone. */
static void s_acks_sort(cr_coordinator_t *c)
{
    c->nacks_due = c->nacks;
    if (c->nsorted == c->nacks_due)
        return; /* the dispatch turn's commit: no Ack kept since the last sort */
    c->nsorted = 0;
    if (c->nacks_due > c->cap_order) {
        void *g = realloc(c->ack_order, c->nacks_due * sizeof *c->ack_order);
        if (!g)
            return;
        c->ack_order = g;
        c->cap_order = c->nacks_due;
    }
    for (size_t i = 0; i < c->nacks_due; i++)
        c->ack_order[i] = &c->acks[i];
    qsort(c->ack_order, c->nacks_due, sizeof *c->ack_order, s_ack_cmp);
    c->nsorted = c->nacks_due;
}

/* The due Acks of w's connection: *n of them from ack_order[*first]
 * (n = 0: none). */
static void s_acks_for(cr_coordinator_t *c, const cr_sched_worker_t *w, size_t *first, size_t *n)
{
    size_t lo = 0, hi = c->nsorted;
    size_t top = hi;
    while (lo < hi) { /* the first entry not below w's peer */
        size_t mid = lo + (hi - lo) / 2;
        if (cr_wire_peer_cmp(&c->ack_order[mid]->peer, &w->peer) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < top && cr_wire_peer_cmp(&c->ack_order[end]->peer, &w->peer) == 0)
        end++;
    *first = lo;
    *n = end - lo;
}

/* Sends Ack{batch, job, attempt} alone to peer, as s_send does: kept for
 * after the turn's commit while one is open, else at once. */
static void s_ack_alone(cr_coordinator_t *c, const cr_peer_t *peer, const char *batch_id,
                        const char *job_id, uint32_t attempt)
{
    Crucible__Ack ack = CRUCIBLE__ACK__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    ack.batch_id = (char *)batch_id;
    ack.job_id = (char *)job_id;
    ack.attempt = attempt;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    /* lost: the worker resends the result, which is acknowledged again */
    s_send(c, c->workers, peer, &env);
}

/* Sends the due Acks among acks[0..n) (all of one worker's connection)
 * that no Assign took: one alone, several in one Assign without jobs. */
static void s_acks_together(cr_coordinator_t *c, s_ack_t *const *acks, size_t n)
{
    Crucible__Ack ackv[CR_COORD_ACKS_MSG];
    Crucible__Ack *ackp[CR_COORD_ACKS_MSG];
    size_t k = 0;
    for (size_t i = 0; i <= n; i++) {
        if (k == CR_COORD_ACKS_MSG || (i == n && k > 1)) {
            Crucible__Assign a = CRUCIBLE__ASSIGN__INIT;
            Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
            a.n_acks = k;
            a.acks = ackp;
            a.result_batches = 1;
            env.body_case = CRUCIBLE__ENVELOPE__BODY_ASSIGN;
            env.assign = &a;
            /* lost: the worker resends the results, which are acknowledged again */
            s_send(c, c->workers, &acks[0]->peer, &env);
            k = 0;
        }
        if (i == n)
            break;
        if (acks[i]->sent)
            continue;
        crucible__ack__init(&ackv[k]);
        ackv[k].batch_id = acks[i]->batch_id;
        ackv[k].job_id = acks[i]->job_id;
        ackv[k].attempt = acks[i]->attempt;
        ackp[k] = &ackv[k];
        k++;
    }
    if (k == 1)
        s_ack_alone(c, &acks[0]->peer, ackv[0].batch_id, ackv[0].job_id, ackv[0].attempt);
}

/* Sends the due Acks that no Assign took and forgets them: a worker's in
 * one message (s_acks_together), or each alone when there was no memory
 * to sort them by worker; Acks kept since (none: dispatch makes no
 * results) stay. After the turn's commit: no turn is open, so they go at
 * once, in the turn that made them durable. */
static void s_acks_flush(cr_coordinator_t *c)
{
    if (c->nsorted == c->nacks_due) {
        for (size_t i = 0, j; i < c->nsorted; i = j) {
            for (j = i + 1; j < c->nsorted &&
                            cr_wire_peer_cmp(&c->ack_order[j]->peer, &c->ack_order[i]->peer) == 0;
                 j++)
                ;
            s_acks_together(c, c->ack_order + i, j - i);
        }
    } else {
        for (size_t i = 0; i < c->nacks_due; i++)
            if (!c->acks[i].sent)
                s_ack_alone(c, &c->acks[i].peer, c->acks[i].batch_id, c->acks[i].job_id,
                            c->acks[i].attempt);
    }
    if (c->nacks > c->nacks_due) /* acks is NULL before the first */
        memmove(c->acks, c->acks + c->nacks_due, (c->nacks - c->nacks_due) * sizeof *c->acks);
    c->nacks -= c->nacks_due;
    c->nacks_due = 0;
    c->nsorted = 0;
}

/* Acknowledges rec to w once the turn is durable: inside w's next Assign
 * when one is due in the same turn (an assign_acks worker), else alone. */
static void s_ack(cr_coordinator_t *c, cr_sched_worker_t *w, const Crucible__RewardRecord *rec)
{
    if (s_ack_keep(c, w, rec) != 0)
        s_ack_alone(c, &w->peer, rec->batch_id, rec->job_id, rec->attempt);
}

/* A worker's verdict. rec belongs to the envelope (the caller frees it);
 * sent (len bytes) is rec as it came, or NULL. w is the registered worker
 * of the connection it came on, under the key it registered with
 * (s_on_worker_msg checked both): trust note 1. */
static void s_worker_result(cr_coordinator_t *c, cr_sched_worker_t *w, Crucible__RewardRecord *rec,
                            const uint8_t *sent, size_t len)
{
    if (!rec || !s_id_ok(rec->batch_id, 0) || !s_id_ok(rec->job_id, 0)) {
        cr_warn("worker %s: Result without a record or its batch/job ids: refused", w->id);
        s_error(c, c->workers, &w->peer, CR_E_USAGE, "", "Result: record with batch_id and job_id "
                                                      "required");
        return;
    }
    cr_store_job_info_t info;
    int rc = cr_store_job_get(c->store, rec->batch_id, rec->job_id, &info);
    if (rc == CR_E_NOT_FOUND) {
        cr_warn("worker %s: result for unknown job %s/%s: acknowledged and dropped", w->id,
                rec->batch_id, rec->job_id);
        s_ack(c, w, rec);
        return;
    }
    if (rc != 0)
        return; /* not acknowledged: the worker resends in 5 s */
    if (info.state == CR_JOB_DONE) {
        cr_debug("worker %s: duplicate result for %s/%s attempt %u: acknowledged and dropped",
                 w->id, rec->batch_id, rec->job_id, rec->attempt);
        s_ack(c, w, rec);
        return;
    }
    if (rec->status <= 0 || rec->status >= CR_STORE_NSTATUS) {
        char msg[256];
        snprintf(msg, sizeof msg, "worker %s sent status %d, which this coordinator does not know",
                 w->id, (int)rec->status);
        cr_warn("job %s/%s: %s", rec->batch_id, rec->job_id, msg);
        rec->status = CRUCIBLE__STATUS__STATUS_INFRA_ERROR;
        cr_wire_set_str(&rec->message, msg); /* out of memory: the worker's stays */
    }
    /* who ran it is the coordinator's to say, not the record's */
    cr_wire_set_str(&rec->worker_id, w->id);
    /* this worker's, and this try's: a late result of an earlier try it also
     * ran (a lease that ran out, then the job came back to it) is not the
     * current one's verdict; a record that names no try (0) names none */
    int holds = info.state == CR_JOB_ASSIGNED && strcmp(info.worker_id, w->id) == 0 &&
                rec->attempt == info.attempt;
    int infra = rec->status == CRUCIBLE__STATUS__STATUS_INFRA_ERROR ||
                rec->status == CRUCIBLE__STATUS__STATUS_WORKER_LOST;
    if (!holds) {
        /* Not this worker's job (another's, or queued: its lease ran out, it
         * was requeued when the worker registered again, or it never was),
         * or an earlier try's: whatever try holds it decides. Acknowledged,
         * so an honest worker stops resending it; never recorded. */
        cr_warn("worker %s: %s for %s/%s attempt %u, which is %s%s: refused, not recorded",
                w->id, cr_status_name(rec->status), rec->batch_id, rec->job_id, rec->attempt,
                info.state == CR_JOB_ASSIGNED ? "assigned to worker " : "assigned to no worker",
                info.state == CR_JOB_ASSIGNED ? info.worker_id : "");
        s_ack(c, w, rec);
        return;
    }

    if (cr_sched_note_result(c->sched, w, infra))
        cr_warn("worker %s drained: its last %u results were infrastructure failures (%s); "
                "it gets no new jobs until it registers again", w->id, w->infra_streak,
                rec->message ? rec->message : "");

    Crucible__JobOptions *opts = s_batch_options(c, rec->batch_id);
    uint32_t max_attempts =
        opts && opts->max_attempts ? opts->max_attempts : (uint32_t)c->cfg.max_attempts;

    /* An infrastructure failure is retried, never turned into a verdict,
     * while attempts remain (DESIGN.md §2). */
    if (infra && info.attempt < max_attempts) {
        rc = cr_store_requeue(c->store, rec->batch_id, rec->job_id, max_attempts, rec->message,
                              NULL);
        if (rc == 0) {
            cr_warn("job %s/%s attempt %u on %s: %s (%s); retrying", rec->batch_id, rec->job_id,
                    info.attempt, w->id, cr_status_name(rec->status), rec->message);
            cr_sched_finished(w);
            c->dispatch_due = 1;
            s_ack(c, w, rec);
        }
        goto out;
    }

    rc = cr_reward_apply(rec, opts ? opts->reward : NULL);
    if (rc != 0)
        cr_warn("job %s/%s: reward formula '%s': %s; record kept without reward", rec->batch_id,
                rec->job_id, opts ? opts->reward : "", cr_strerror(rc));
    cr_store_job_info_t prev;
    /* stored as it came, with the fields set here and by the store after
     * it: the worker's fields are not packed again */
    rc = cr_store_complete_sent(c->store, rec, sent, len, &prev);
    if (rc == CR_E_DUPLICATE || rc == CR_E_NOT_FOUND) {
        s_ack(c, w, rec);
        goto out;
    }
    if (rc != 0) {
        cr_error("job %s/%s: result from %s not stored: %s", rec->batch_id, rec->job_id, w->id,
                 cr_strerror(rc));
        goto out; /* not acknowledged: the worker resends */
    }
    s_count_result(c);
    c->dispatch_due = 1;
    w->done++;
    if (prev.state == CR_JOB_ASSIGNED) /* it was w's: checked above, in this turn */
        cr_sched_finished(w);
    cr_debug("job %s/%s: %s from %s (seq %llu)", rec->batch_id, rec->job_id,
             cr_status_name(rec->status), w->id, (unsigned long long)rec->seq);
    const uint8_t *blob = NULL;
    size_t blen = 0;
    if (cr_store_last_record(c->store, &blob, &blen) != 0)
        blob = NULL;
    s_on_record_packed(c, rec, blob, blen);
    s_ack(c, w, rec);
out:
    return;
}

/* A Result: one record, or (Assign.result_batches) several, each handled
 * as if it came alone. One of more than CR_WIRE_RESULT_BATCH records is
 * refused whole, unacknowledged (a turn's bound holds whatever a worker
 * sends; an honest worker's are then resent one a message). */
static void s_worker_results(cr_coordinator_t *c, cr_sched_worker_t *w, Crucible__Result *res)
{
    if (res && res->n_records > CR_WIRE_RESULT_BATCH) {
        cr_warn("worker %s: Result of %zu records (at most %d): refused, not recorded", w->id,
                res->n_records, CR_WIRE_RESULT_BATCH);
        s_error(c, c->workers, &w->peer, CR_E_LIMIT, "", "Result: %zu records, at most %d in "
                "one message", res->n_records, CR_WIRE_RESULT_BATCH);
        return;
    }
    if (res && res->record && res->n_records) {
        cr_warn("worker %s: Result with both a record and records: refused, not recorded",
                w->id);
        s_error(c, c->workers, &w->peer, CR_E_USAGE, "", "Result: a record or records, not "
                "both");
        return;
    }
    /* the records as they came (c->records), when the receive found them */
    const cr_wire_specs_t *sent = c->records;
    size_t n = res && res->n_records ? res->n_records : 1;
    if (sent && sent->n != n)
        sent = NULL;
    if (!res || !res->n_records)
        s_worker_result(c, w, res ? res->record : NULL, sent ? sent->spec[0] : NULL,
                        sent ? sent->len[0] : 0);
    for (size_t i = 0; res && i < res->n_records; i++)
        s_worker_result(c, w, res->records[i], sent ? sent->spec[i] : NULL,
                        sent ? sent->len[i] : 0);
}

static void s_on_worker_msg(cr_coordinator_t *c, const cr_peer_t *peer, Crucible__Envelope *env)
{
    char who[80];
    if (env->body_case == CRUCIBLE__ENVELOPE__BODY_READY) {
        if (env->ready)
            s_worker_ready(c, peer, env->ready);
        return;
    }
    cr_sched_worker_t *w = cr_sched_find_peer(c->sched, peer);
    if (!w) {
        cr_info("worker peer %s: %s from an unregistered worker: told to Disconnect",
                s_peer_name(peer, who, sizeof who), cr_wire_body_name(env));
        Crucible__Disconnect d = CRUCIBLE__DISCONNECT__INIT;
        Crucible__Envelope out = CRUCIBLE__ENVELOPE__INIT;
        d.reason = "unknown worker: send Ready";
        out.body_case = CRUCIBLE__ENVELOPE__BODY_DISCONNECT;
        out.disconnect = &d;
        s_send(c, c->workers, peer, &out);
        return;
    }
    if (strcmp(w->peer.user, peer->user) != 0) {
        /* Its route now carries another key: a peer took the routing id over
         * (the workers socket hands a route to the newest connection, so a
         * restarted worker gets its own back). Whatever was sent to the
         * route may have gone to that peer: the worker is treated as lost,
         * its jobs requeued, and the message refused. */
        char why[96];
        snprintf(why, sizeof why, "its routing id was taken by %s",
                 s_peer_name(peer, who, sizeof who));
        cr_warn("worker %s: %s from its connection under another key: refused",
                w->id, cr_wire_body_name(env));
        s_worker_lost(c, w, why);
        s_error(c, c->workers, peer, CR_E_STATE, "", "this routing id belongs to another worker");
        return;
    }
    if (w->unreachable)
        c->dispatch_due = 1; /* it can take jobs again */
    cr_sched_touch(w, s_clock_ms(c));
    switch (env->body_case) {
    case CRUCIBLE__ENVELOPE__BODY_HEARTBEAT:
    case CRUCIBLE__ENVELOPE__BODY_ACK:
        break; /* a sign of life is all they carry for us */
    case CRUCIBLE__ENVELOPE__BODY_RESULT:
        s_worker_results(c, w, env->result);
        break;
    case CRUCIBLE__ENVELOPE__BODY_DISCONNECT:
        w->draining = 1;
        cr_info("worker %s leaving (%s): %u jobs in flight", w->id,
                env->disconnect && env->disconnect->reason[0] ? env->disconnect->reason
                                                              : "no reason",
                w->in_flight);
        break;
    default:
        cr_warn("worker %s: unexpected %s on the workers endpoint", w->id,
                cr_wire_body_name(env));
        s_error(c, c->workers, peer, CR_E_USAGE, "", "unexpected %s on the workers endpoint",
                cr_wire_body_name(env));
        break;
    }
    /* A draining worker with nothing left leaves now. */
    if (w->draining && w->in_flight == 0) {
        cr_info("worker %s drained: removed", w->id);
        cr_sched_remove(c->sched, w);
    }
}

/* ---- clients ---- */

typedef struct {
    const char *name;           /* TaskBundle.name (borrowed from the Submit) */
    Crucible__TaskBundle *tb;   /* borrowed */
    int valid;                  /* 1 when it parsed */
    char hash[CR_HASH_HEX_LEN + 1]; /* content hash: BLAKE2b of the three texts */
    char language[CR_STORE_LANG_MAX + 1]; /* placement class: the parsed task's language,
                                             "cuda/N" for N ranks (cr_task_class) */
    char msg[600];              /* why it is invalid */
    char warn[300];             /* valid, but no connected worker serves its class; "" = fine */
} s_bundle_t;

static void s_bundle_check(s_bundle_t *b, Crucible__TaskBundle *tb)
{
    b->tb = tb;
    b->name = tb->name;
    if (!s_id_ok(tb->name, 0)) {
        snprintf(b->msg, sizeof b->msg, "tasks[].name: a task bundle needs a name of 1..%d "
                 "bytes of UTF-8 without control characters", CR_STORE_ID_MAX);
        return;
    }
    char origin[CR_STORE_ID_MAX + 16], err[512] = "";
    snprintf(origin, sizeof origin, "%s/task.json", tb->name);
    cr_task_t *t = NULL;
    int rc = cr_task_parse(tb->task_json, origin, &t, err, sizeof err);
    if (rc != 0) {
        snprintf(b->msg, sizeof b->msg, "%s", err[0] ? err : cr_strerror(rc));
        return;
    }
    if (!t->language || strlen(t->language) > CR_STORE_LANG_MAX)
        snprintf(b->msg, sizeof b->msg, "%s: language: missing or too long", origin);
    else if (!tb->reference_source[0])
        snprintf(b->msg, sizeof b->msg, "%s: reference: the bundle has no reference source",
                 origin);
    else if (t->baseline && !tb->baseline_source[0])
        snprintf(b->msg, sizeof b->msg, "%s: baseline: the bundle has no baseline source",
                 origin);
    else {
        cr_task_class(t, b->language, sizeof b->language);
        b->valid = 1;
    }
    cr_task_destroy(&t);
    /* a parser's message may quote the bundle's bytes: never sent back raw */
    cr_wire_utf8_scrub(b->msg);
    cr_hash_t h;
    cr_hash_init(&h);
    cr_hash_update_str(&h, tb->task_json);
    cr_hash_update_str(&h, tb->reference_source);
    cr_hash_update_str(&h, tb->baseline_source);
    cr_hash_final_hex(&h, b->hash);
}

/* Fills out from the Submit's options and the configured defaults, and
 * checks the result. Strings in out are borrowed (submit or config). */
static int s_resolve_options(const cr_coordinator_t *c, const Crucible__JobOptions *in,
                             Crucible__JobOptions *out, char *err, size_t errlen)
{
    const cr_config_t *cfg = &c->cfg;
    if (in)
        *out = *in;
    else
        crucible__job_options__init(out);
    if (!(out->compile_timeout_s > 0))
        out->compile_timeout_s = cfg->compile_timeout_s;
    if (!(out->run_timeout_s > 0))
        out->run_timeout_s = cfg->run_timeout_s;
    if (!(out->time_budget_s > 0))
        out->time_budget_s = cfg->time_budget_s;
    if (!(out->rse_target > 0))
        out->rse_target = cfg->rse_target;
    if (!out->reward || !out->reward[0])
        out->reward = (char *)(cfg->reward[0] ? cfg->reward : "default");
    if (out->ref_policy == CRUCIBLE__REF_POLICY__REF_INTERLEAVED &&
        strcmp(cfg->ref_policy, "cached") == 0)
        out->ref_policy = CRUCIBLE__REF_POLICY__REF_CACHED;
    if (!out->clock_policy || !out->clock_policy[0])
        out->clock_policy = (char *)(cfg->clock_policy[0] ? cfg->clock_policy : "observe");
    if (out->max_attempts == 0)
        out->max_attempts = (uint32_t)cfg->max_attempts;
    if (!(out->queue_timeout_s > 0))
        out->queue_timeout_s = cfg->queue_timeout_s;

    double t[5] = {out->compile_timeout_s, out->run_timeout_s, out->time_budget_s,
                   out->rse_target, out->queue_timeout_s};
    for (int i = 0; i < 5; i++) {
        if (!isfinite(t[i]) || t[i] < 0) {
            snprintf(err, errlen, "options: times and rse_target must be finite and >= 0");
            return CR_E_USAGE;
        }
    }
    if (!cr_reward_known(out->reward)) {
        snprintf(err, errlen, "options.reward: unknown formula '%.64s'", out->reward);
        return CR_E_USAGE;
    }
    const char *cp = out->clock_policy;
    int ok = strcmp(cp, "observe") == 0 || strcmp(cp, "lock:base") == 0;
    if (!ok && strncmp(cp, "lock:", 5) == 0 && cp[5]) {
        size_t k = strspn(cp + 5, "0123456789");
        ok = cp[5 + k] == '\0' && k <= 5;
    }
    if (!ok) {
        snprintf(err, errlen, "options.clock_policy: '%.64s' is not observe, lock:base or "
                              "lock:<MHz>", cp);
        return CR_E_USAGE;
    }
    if (out->ref_policy != CRUCIBLE__REF_POLICY__REF_INTERLEAVED &&
        out->ref_policy != CRUCIBLE__REF_POLICY__REF_CACHED) {
        snprintf(err, errlen, "options.ref_policy: unknown value %d", (int)out->ref_policy);
        return CR_E_USAGE;
    }
    return 0;
}

typedef struct {
    cr_coordinator_t *c;   /* the coordinator */
    s_sub_t *sub;          /* the subscription caught up */
    const cr_peer_t *to;   /* the subscribing client */
    const char *batch_id;  /* its batch */
    char (*groups)[CR_STORE_ID_MAX + 1]; /* complete groups, by last seq */
    uint64_t *group_seq;   /* last seq of each */
    size_t ngroups;        /* used */
    size_t capgroups;      /* allocated */
    uint64_t after;        /* replay starts after this seq */
    int failed;            /* 1 when a send failed: stop */
    size_t limit;          /* records to send in this step */
    size_t n;              /* records sent */
    uint64_t last;         /* seq of the last one sent */
} s_replay_t;

static void s_replay_group(const char *group_id, uint64_t last_seq, void *arg)
{
    s_replay_t *r = arg;
    if (last_seq <= r->after)
        return; /* its GroupDone went out before after_seq */
    if (r->ngroups == r->capgroups) {
        size_t cap = r->capgroups ? 2 * r->capgroups : 16;
        void *g1 = realloc(r->groups, cap * sizeof *r->groups);
        if (g1)
            r->groups = g1;
        void *g2 = realloc(r->group_seq, cap * sizeof *r->group_seq);
        if (g2)
            r->group_seq = g2;
        if (!g1 || !g2)
            return;
        r->capgroups = cap;
    }
    snprintf(r->groups[r->ngroups], sizeof r->groups[0], "%s", group_id);
    r->group_seq[r->ngroups++] = last_seq;
}

/* Replays one stored record to the subscriber as it is stored (no decode
 * and pack again), then the GroupDone that followed it live. */
static int s_replay_record(uint64_t seq, const uint8_t *rec, size_t len, void *arg)
{
    s_replay_t *r = arg;
    if (s_send_record(r->c, r->sub, rec, len, seq) != 0) {
        r->failed = 1;
        return 1;
    }
    for (size_t i = 0; i < r->ngroups; i++)
        if (r->group_seq[i] == seq)
            s_group_done(r->c, r->batch_id, r->groups[i], r->to, 0);
    r->last = seq;
    return ++r->n >= r->limit;
}

static void s_status_reply(cr_coordinator_t *c, const cr_peer_t *peer, const char *batch_id);

/* One step of a subscriber's catch-up: up to CR_COORD_REPLAY_STEP stored
 * records after sub->after, then, once it has them all, BatchDone when the
 * batch is complete, or else live records (follow) or a StatusReply that
 * ends it (no follow: the client knows it has all). A step is bounded, so
 * a subscription from seq 0 to a batch of millions neither stalls the loop
 * nor holds the batch in memory: it is served from the store, a step a
 * turn, and the clients socket's high-water mark bounds what waits unread. */
static void s_replay_step(cr_coordinator_t *c, s_sub_t *sub)
{
    s_replay_t r = {.c = c, .sub = sub, .to = &sub->peer, .batch_id = sub->batch_id,
                    .after = sub->after, .limit = CR_COORD_REPLAY_STEP, .last = sub->after};
    c->tag_sub = sub->id;
    if (cr_store_groups_done(c->store, sub->batch_id, s_replay_group, &r) == 0)
        cr_store_records_packed(c->store, sub->batch_id, sub->after, s_replay_record, &r);
    free(r.groups);
    free(r.group_seq);
    sub->after = r.last;
    if (r.failed) {
        c->tag_sub = 0;
        sub->dead = 1;
        return;
    }
    if (r.n >= r.limit) {
        c->tag_sub = 0;
        return; /* more next turn */
    }
    cr_store_batch_t b;
    if (cr_store_batch_get(c->store, sub->batch_id, &b) != 0) {
        c->tag_sub = 0;
        sub->dead = 1;
        return;
    }
    if (b.total > 0 && b.done == b.total && !s_intake_has(c, sub->batch_id)) {
        s_batch_done(c, sub->batch_id, &b, &sub->peer);
        sub->dead = 1;
    } else if (sub->follow) {
        sub->replaying = 0;
    } else {
        s_status_reply(c, &sub->peer, sub->batch_id);
        sub->dead = 1;
    }
    c->tag_sub = 0;
}

/* ms until the next catch-up from the store is due (0 or less: now);
 * INT64_MAX when no subscriber catches up. */
static int64_t s_replay_wait(const cr_coordinator_t *c)
{
    int64_t now = cr_time_mono_ms(), next = INT64_MAX;
    for (size_t i = 0; i < c->nsubs; i++)
        if (c->subs[i].replaying && !c->subs[i].dead && c->subs[i].retry_ms - now < next)
            next = c->subs[i].retry_ms - now;
    return next;
}

/* The replay phase: a step for every subscriber still catching up. */
static void s_phase_replay(cr_coordinator_t *c)
{
    int any = 0;
    int64_t now = cr_time_mono_ms();
    for (size_t i = 0; i < c->nsubs; i++) {
        if (c->subs[i].replaying && !c->subs[i].dead && c->subs[i].retry_ms <= now) {
            s_replay_step(c, &c->subs[i]);
            any = 1;
        }
    }
    if (any)
        s_subs_reap(c);
}

/* Replays the batch's records after after_seq to peer (s_replay_step, the
 * first step now, the rest in the following turns), then follows it or
 * ends as s_replay_step says; batched: the client reads Result.records. */
static void s_subscribe(cr_coordinator_t *c, const cr_peer_t *peer, const char *batch_id,
                        uint64_t after_seq, int follow, int batched)
{
    cr_store_batch_t b;
    int rc = cr_store_batch_get(c->store, batch_id, &b);
    if (rc == 0 && !s_may_see(peer, &b))
        rc = CR_E_NOT_FOUND; /* another client's batch: its existence is not revealed */
    if (rc != 0) {
        s_error(c, c->clients, peer, rc == CR_E_NOT_FOUND ? CR_E_NOT_FOUND : CR_E_STORE, batch_id,
                "batch '%s': %s", batch_id, cr_strerror(rc));
        return;
    }
    s_sub_drop(c, peer, batch_id);
    s_subs_reap(c);
    if (s_sub_add(c, peer, batch_id) != 0) {
        s_error(c, c->clients, peer, -ENOMEM, batch_id, "subscribe: out of memory");
        return;
    }
    s_sub_t *sub = &c->subs[c->nsubs - 1];
    sub->replaying = 1;
    sub->follow = follow != 0;
    sub->batched = batched != 0;
    sub->after = after_seq;
    sub->sent_seq = after_seq;
    s_replay_step(c, sub);
    s_subs_reap(c);
}

/* ---- intake: a Submit stored a step a turn ---- */

/* Work of one intake: what its steps have stored. */
typedef struct {
    size_t next;       /* jobs of the Submit stored so far */
    uint32_t n_new;    /* of them new (INVALID_TASK ones included) */
    uint32_t n_dup;    /* of them known before */
    uint32_t rejected; /* of them recorded INVALID_TASK */
    int started;       /* 1: the batch and its tasks are stored, the limit checked */
    int finished;      /* 1: every job is stored and the SubmitAck is queued */
} s_intake_at_t;

/* A Submit accepted by s_client_submit and stored by s_phase_intake in
 * steps of at most CR_COORD_INTAKE_JOBS jobs and CR_COORD_INTAKE_BYTES of
 * specs, as many a turn as CR_COORD_INTAKE_MS allows, so that no Submit
 * holds the loop for long whatever its size. Steps join the turn's
 * transaction; at (s_intake_settle) is the committed progress, cur the
 * progress including this turn. */
/* A client message held until the Submit before it from the same
 * connection is stored (s_intake_release): a client's messages are
 * handled in the order sent, so a Subscribe right after a Submit finds the
 * batch. */
typedef struct s_deferred {
    struct s_deferred *next;       /* in arrival order */
    cr_peer_t peer;                /* its connection */
    Crucible__Envelope *env;       /* owned */
} s_deferred_t;

typedef struct s_intake {
    struct s_intake *next;         /* FIFO: only the head one is stored */
    s_deferred_t *after;           /* owned: the connection's messages since, in order */
    s_deferred_t **after_tail;     /* where the next one goes */
    cr_peer_t peer;                /* the submitting connection */
    Crucible__Envelope *env;       /* owned: the Submit, which jobs[] point into */
    cr_wire_specs_t *specs;        /* owned: its jobs packed as they came, or NULL (they
                                      are packed from env's, step by step) */
    Crucible__Submit *sub;         /* env->submit */
    char owner[CR_STORE_OWNER_MAX + 1]; /* the batch's owner (its first submitter) */
    s_bundle_t *bundles;           /* owned: one per sub->tasks, checked */
    cr_store_job_in_t *jobs;       /* owned: one per sub->jobs; spec packed per step */
    char (*unknown)[CR_STORE_ID_MAX + 40]; /* owned: "unknown task" message per job */
    const char *errors[CR_COORD_MAX_ERRORS]; /* SubmitAck.errors, into bundles/unknown */
    size_t nerrors;                /* entries used */
    const char *warnings[CR_COORD_MAX_ERRORS]; /* SubmitAck.warnings, into bundles */
    size_t nwarnings;              /* entries used */
    uint8_t *opts_blob;            /* owned: the resolved options, packed */
    size_t opts_len;               /* bytes */
    uint64_t last_seq0;            /* the batch's last seq before this Submit */
    s_intake_at_t at;              /* committed progress */
    s_intake_at_t cur;             /* progress with this turn's steps */
} s_intake_t;

static void s_intake_free(s_intake_t *in)
{
    if (!in)
        return;
    while (in->after) {
        s_deferred_t *d = in->after;
        in->after = d->next;
        cr_wire_free(&d->env);
        free(d);
    }
    cr_wire_free(&in->env);
    cr_wire_specs_free(&in->specs);
    free(in->bundles);
    free(in->jobs);
    free(in->unknown);
    free(in->opts_blob);
    free(in);
}

/* 1 while a Submit of batch_id is being stored: the batch is not done,
 * even when every job stored so far has its record. */
static int s_intake_has(const cr_coordinator_t *c, const char *batch_id)
{
    for (const s_intake_t *in = c->intake; in; in = in->next)
        if (strcmp(in->sub->batch_id, batch_id) == 0)
            return 1;
    return 0;
}

/* Holds env (taking it) behind the last Submit of peer's connection still
 * being stored; 0 when there is none (handle it now). */
static int s_intake_defer(cr_coordinator_t *c, const cr_peer_t *peer, Crucible__Envelope *env)
{
    s_intake_t *last = NULL;
    for (s_intake_t *in = c->intake; in; in = in->next)
        if (cr_wire_peer_cmp(&in->peer, peer) == 0)
            last = in;
    s_deferred_t *d = last ? calloc(1, sizeof *d) : NULL;
    if (!d)
        return 0; /* none, or out of memory: handled now, out of order at worst */
    d->peer = *peer;
    d->env = env;
    if (!last->after_tail)
        last->after_tail = &last->after;
    *last->after_tail = d;
    last->after_tail = &d->next;
    c->env_taken = 1;
    return 1;
}

static void s_on_client_msg(cr_coordinator_t *c, const cr_peer_t *peer, Crucible__Envelope *env);

/* The Submit of in is stored (or refused): the messages its connection
 * sent after it are handled now, in order. */
static void s_intake_release(cr_coordinator_t *c, s_intake_t *in)
{
    while (in->after) {
        s_deferred_t *d = in->after;
        in->after = d->next;
        int taken = c->env_taken;
        c->env_taken = 0;
        s_on_client_msg(c, &d->peer, d->env);
        if (!c->env_taken)
            cr_wire_free(&d->env);
        c->env_taken = taken;
        free(d);
    }
    in->after_tail = NULL;
}

static void s_client_submit(cr_coordinator_t *c, const cr_peer_t *peer, Crucible__Envelope *env)
{
    Crucible__Submit *sub = env->submit;
    char who[80], err[1024];
    const char *batch = sub->batch_id;
    s_peer_name(peer, who, sizeof who);

    if (!s_id_ok(batch, 0)) {
        s_error(c, c->clients, peer, CR_E_USAGE, "", "Submit: batch_id: must be 1..%d bytes of UTF-8 "
                "without control characters", CR_STORE_ID_MAX);
        return;
    }
    if (sub->n_jobs == 0) {
        s_error(c, c->clients, peer, CR_E_USAGE, batch, "Submit: no jobs");
        return;
    }
    for (size_t i = 0; i < sub->n_jobs; i++) {
        Crucible__JobSpec *js = sub->jobs[i];
        const char *bad = !s_id_ok(js->job_id, 0)   ? "job_id"
                          : !s_id_ok(js->group_id, 1) ? "group_id"
                          : !s_id_ok(js->task, 1)     ? "task"
                                                      : NULL;
        if (bad) {
            s_error(c, c->clients, peer, CR_E_USAGE, batch, "Submit: jobs[%zu].%s: must be at most "
                    "%d bytes of UTF-8 without control characters (job_id non-empty)", i, bad,
                    CR_STORE_ID_MAX);
            return;
        }
    }
    Crucible__JobOptions opts;
    if (s_resolve_options(c, sub->options, &opts, err, sizeof err) != 0) {
        s_error(c, c->clients, peer, CR_E_USAGE, batch, "Submit: %s", err);
        return;
    }

    s_intake_t *in = calloc(1, sizeof *in);
    if (!in)
        goto nomem;
    in->peer = *peer;
    in->sub = sub;
    /* Validate every bundle; a name given twice with different contents is
     * ambiguous, so both are invalid. */
    in->bundles = calloc(sub->n_tasks ? sub->n_tasks : 1, sizeof *in->bundles);
    in->jobs = calloc(sub->n_jobs, sizeof *in->jobs);
    in->unknown = calloc(sub->n_jobs, sizeof *in->unknown);
    if (!in->bundles || !in->jobs || !in->unknown)
        goto nomem;
    s_bundle_t *bundles = in->bundles;
    for (size_t i = 0; i < sub->n_tasks; i++) {
        s_bundle_check(&bundles[i], sub->tasks[i]);
        for (size_t k = 0; k < i; k++) {
            if (bundles[k].name && bundles[i].name &&
                strcmp(bundles[k].name, bundles[i].name) == 0 &&
                strcmp(bundles[k].hash, bundles[i].hash) != 0) {
                bundles[k].valid = bundles[i].valid = 0;
                snprintf(bundles[i].msg, sizeof bundles[i].msg,
                         "two different task bundles are named '%s'", bundles[i].name);
                memcpy(bundles[k].msg, bundles[i].msg, sizeof bundles[k].msg);
            }
        }
    }
    /* A class no connected worker serves (a task with "gpus" and no worker of
     * that many GPUs): its jobs are queued all the same and wait for one, as a
     * user who starts the worker next expects; the ack says so. */
    for (size_t i = 0; i < sub->n_tasks; i++) {
        if (!bundles[i].valid || !strchr(bundles[i].language, '/'))
            continue;
        int served = 0;
        for (size_t k = 0; k < cr_sched_count(c->sched) && !served; k++)
            served = cr_sched_serves(cr_sched_at(c->sched, k), bundles[i].language);
        if (served)
            continue;
        snprintf(bundles[i].warn, sizeof bundles[i].warn,
                 "%.128s: placement class %s: no connected worker owns the GPUs and judges over "
                 "NCCL; its jobs wait for one (--queue-timeout-s bounds the wait)",
                 bundles[i].name, bundles[i].language);
        cr_warn("%s", bundles[i].warn);
        if (in->nwarnings < CR_COORD_MAX_ERRORS)
            in->warnings[in->nwarnings++] = bundles[i].warn;
    }
    for (size_t i = 0; i < sub->n_tasks; i++)
        if (!bundles[i].valid && in->nerrors < CR_COORD_MAX_ERRORS)
            in->errors[in->nerrors++] = bundles[i].msg;

    /* Jobs and their bundles; the specs are packed step by step. */
    for (size_t i = 0; i < sub->n_jobs; i++) {
        Crucible__JobSpec *js = sub->jobs[i];
        s_bundle_t *b = NULL;
        for (size_t k = 0; k < sub->n_tasks && !b; k++)
            if (bundles[k].name && strcmp(bundles[k].name, js->task) == 0)
                b = &bundles[k];
        cr_store_job_in_t *j = &in->jobs[i];
        j->job_id = js->job_id;
        j->group_id = js->group_id;
        j->has_keys = 1; /* the store keeps these in memory, not decoding the spec */
        j->task = js->task;
        j->sample_index = js->sample_index;
        j->turn = js->turn;
        j->task_hash = b && b->valid ? b->hash : "";
        j->language = b && b->valid ? b->language : "";
        if (!b) {
            snprintf(in->unknown[i], sizeof in->unknown[i], "unknown task '%s'", js->task);
            int seen = 0;
            for (size_t k = 0; k < in->nerrors; k++)
                seen |= strcmp(in->errors[k], in->unknown[i]) == 0;
            if (!seen && in->nerrors < CR_COORD_MAX_ERRORS)
                in->errors[in->nerrors++] = in->unknown[i];
        }
    }
    in->opts_len = crucible__job_options__get_packed_size(&opts);
    in->opts_blob = malloc(in->opts_len ? in->opts_len : 1);
    if (!in->opts_blob)
        goto nomem;
    crucible__job_options__pack(&opts, in->opts_blob);

    /* The owner of the queue limit is the batch's first submitter. */
    cr_store_batch_t before;
    int known = cr_store_batch_get(c->store, batch, &before) == 0;
    if (known && !s_may_see(peer, &before)) {
        s_error(c, c->clients, peer, CR_E_DUPLICATE, batch, "Submit: batch id '%s' is taken", batch);
        s_intake_free(in);
        return;
    }
    if (known)
        snprintf(in->owner, sizeof in->owner, "%s", before.owner);
    else
        s_owner_of(peer, in->owner);
    in->last_seq0 = known ? before.last_seq : 0;
    /* queued behind the Submits before it (a client's Submits are stored in
     * the order they came); the envelope is the intake's now */
    in->env = env;
    c->env_taken = 1;
    if (c->specs && c->specs->n == sub->n_jobs) {
        in->specs = c->specs; /* stored as they came: no decode of the sources, no re-pack */
        c->specs = NULL;
    }
    s_intake_t **tail = &c->intake;
    while (*tail)
        tail = &(*tail)->next;
    *tail = in;
    return;

nomem:
    cr_error("batch %s from %s: out of memory", batch, who);
    s_error(c, c->clients, peer, -ENOMEM, batch, "Submit: coordinator out of memory");
    s_intake_free(in);
}

/* The first step: the batch, its options and its tasks, and the queue
 * limit, which counts every job of the Submit the store does not know
 * (refused means nothing was stored). Inside the caller's savepoint. */
static int s_intake_start(cr_coordinator_t *c, s_intake_t *in, uint64_t *queued)
{
    const char *batch = in->sub->batch_id;
    int rc = cr_store_add_batch(c->store, batch, in->owner, in->opts_blob, in->opts_len,
                                cr_time_now_ms(), NULL);
    for (size_t i = 0; rc == 0 && i < in->sub->n_tasks; i++) {
        if (!in->bundles[i].valid)
            continue;
        Crucible__TaskBundle tb = *in->bundles[i].tb;
        tb.hash = in->bundles[i].hash; /* ours: a client's hash is not trusted as a cache key */
        size_t len = crucible__task_bundle__get_packed_size(&tb);
        uint8_t *blob = malloc(len ? len : 1);
        if (!blob) {
            rc = -ENOMEM;
            break;
        }
        crucible__task_bundle__pack(&tb, blob);
        rc = cr_store_add_task(c->store, in->bundles[i].hash, in->bundles[i].name, blob, len);
        free(blob);
    }
    if (rc == 0 && c->cfg.queue_limit > 0) {
        /* the jobs it does not know are at most all of them: when even all
         * fit, no job needs looking up */
        uint32_t fresh = 0;
        rc = cr_store_queued_by_owner(c->store, in->owner, queued);
        if (rc == 0 && *queued + in->sub->n_jobs > (uint64_t)c->cfg.queue_limit)
            rc = cr_store_count_new(c->store, batch, in->jobs, in->sub->n_jobs, &fresh);
        if (rc == 0 && fresh > 0 && *queued + fresh > (uint64_t)c->cfg.queue_limit) {
            *queued += fresh;
            rc = CR_E_LIMIT;
        }
    }
    return rc;
}

/* Stores the next step of in (inside the turn's transaction, in a savepoint
 * of its own). Returns 0, or the error that ended the intake (answered). */
static int s_intake_step(cr_coordinator_t *c, s_intake_t *in, size_t *stored)
{
    Crucible__Submit *sub = in->sub;
    const char *batch = sub->batch_id;
    char who[80];
    s_peer_name(&in->peer, who, sizeof who);
    size_t from = in->cur.next, to = from, bytes = 0;
    while (to < sub->n_jobs && to - from < CR_COORD_INTAKE_JOBS &&
           (to == from || bytes < CR_COORD_INTAKE_BYTES)) {
        in->jobs[to].spec_len = in->specs ? in->specs->len[to]
                                          : crucible__job_spec__get_packed_size(sub->jobs[to]);
        bytes += in->jobs[to].spec_len;
        to++;
    }
    uint8_t *buf = in->specs ? NULL : malloc(bytes ? bytes : 1);
    Crucible__RewardRecord **made = calloc(to - from, sizeof *made);
    size_t nmade = 0;
    uint64_t queued = 0;
    int rc = (buf || in->specs) && made ? 0 : -ENOMEM;
    for (size_t i = from, off = 0; rc == 0 && i < to; off += in->jobs[i].spec_len, i++) {
        if (in->specs) {
            in->jobs[i].spec = in->specs->spec[i];
            continue;
        }
        crucible__job_spec__pack(sub->jobs[i], buf + off);
        in->jobs[i].spec = buf + off;
    }
    if (rc == 0)
        rc = cr_store_begin(c->store);
    int open = rc == 0;
    if (rc == 0 && !in->cur.started)
        rc = s_intake_start(c, in, &queued);
    uint32_t n_new = 0, n_dup = 0;
    if (rc == 0)
        rc = cr_store_add_jobs(c->store, batch, in->jobs + from, to - from, cr_time_now_ms(),
                               &n_new, &n_dup);
    for (size_t i = from; rc == 0 && i < to; i++) {
        if (!in->jobs[i].is_new || in->jobs[i].task_hash[0])
            continue;
        const char *why = in->unknown[i];
        for (size_t k = 0; k < sub->n_tasks; k++)
            if (in->bundles[k].name && strcmp(in->bundles[k].name, sub->jobs[i]->task) == 0)
                why = in->bundles[k].msg;
        Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
        r.batch_id = (char *)batch;
        r.job_id = sub->jobs[i]->job_id;
        r.status = CRUCIBLE__STATUS__STATUS_INVALID_TASK;
        r.message = (char *)why;
        r.t_finished = cr_time_now_ms();
        Crucible__RewardRecord *rec = cr_wire_record_dup(&r);
        rc = rec ? cr_store_complete(c->store, rec, NULL) : -ENOMEM;
        if (rec)
            made[nmade++] = rec;
    }
    if (rc == 0)
        rc = cr_store_commit(c->store);
    else if (open)
        cr_store_rollback(c->store);
    for (size_t i = from; i < to; i++)
        in->jobs[i].spec = NULL;
    free(buf);
    s_cache_del(&c->totals, batch); /* the step changed it */
    if (rc == 0) {
        *stored += bytes;
        in->cur.started = 1;
        in->cur.next = to;
        in->cur.n_new += n_new;
        in->cur.n_dup += n_dup;
        in->cur.rejected += (uint32_t)nmade;
        c->dispatch_due |= n_new > nmade;
        /* records made at submit go to the batch's subscribers */
        for (size_t i = 0; i < nmade; i++)
            s_on_record(c, made[i]);
    }
    for (size_t i = 0; i < nmade; i++)
        crucible__reward_record__free_unpacked(made[i], NULL);
    free(made);
    if (rc == CR_E_LIMIT) {
        cr_info("batch %s from %s refused: queue limit %lld (%llu queued with it)", batch, who,
                (long long)c->cfg.queue_limit, (unsigned long long)queued);
        s_error(c, c->clients, &in->peer, CR_E_LIMIT, batch,
                "queue limit is %lld jobs per client: this submit would bring yours to %llu; "
                "nothing was queued", (long long)c->cfg.queue_limit, (unsigned long long)queued);
        return rc;
    }
    if (rc != 0) {
        cr_error("batch %s from %s not stored: %s (%zu of its %zu jobs stored before)", batch, who,
                 cr_strerror(rc), in->cur.next, sub->n_jobs);
        s_error(c, c->clients, &in->peer, rc, batch, "Submit not stored: %s (%zu of its %zu jobs "
                "were; send the Submit again: it is idempotent)", cr_strerror(rc), in->cur.next,
                sub->n_jobs);
        return rc;
    }
    if (in->cur.next < sub->n_jobs)
        return 0;

    /* every job is stored: the SubmitAck goes out with the turn's commit */
    in->cur.finished = 1;
    uint32_t queued_new = in->cur.n_new - in->cur.rejected;
    cr_store_counts_t counts;
    cr_store_counts(c->store, &counts);
    Crucible__SubmitAck ack = CRUCIBLE__SUBMIT_ACK__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    ack.batch_id = (char *)batch;
    ack.accepted = queued_new;
    ack.duplicate = in->cur.n_dup;
    ack.rejected = in->cur.rejected;
    ack.queue_depth = (uint32_t)counts.queued;
    ack.n_errors = in->nerrors;
    ack.errors = (char **)in->errors;
    ack.n_warnings = in->nwarnings;
    ack.warnings = (char **)in->warnings;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK;
    env.submit_ack = &ack;
    s_send(c, c->clients, &in->peer, &env);
    cr_info("batch %s from %s: %u queued, %u duplicate, %u invalid task", batch, who, queued_new,
            in->cur.n_dup, in->cur.rejected);
    return 0;
}

/* The batch of a finished intake may be complete now (every job a
 * duplicate or INVALID_TASK, or the workers were quicker than the steps):
 * its BatchDone, which s_on_record held back while the Submit was stored. */
static void s_intake_done(cr_coordinator_t *c, s_intake_t *in)
{
    const char *batch = in->sub->batch_id;
    cr_store_batch_t b;
    if (!s_intake_has(c, batch) && cr_store_batch_get(c->store, batch, &b) == 0 &&
        b.total > 0 && b.done == b.total && b.last_seq > in->last_seq0) {
        cr_info("batch %s done: %u records", batch, b.total);
        s_batch_done(c, batch, &b, NULL);
    }
    /* this client gets the batch through a replay from the start */
    if (in->sub->subscribe)
        s_subscribe(c, &in->peer, batch, 0, 1, in->sub->record_batches);
}

/* The intake phase: steps of the oldest Submits for up to
 * CR_COORD_INTAKE_MS and CR_COORD_INTAKE_TURN_BYTES. An intake that ended (stored, or refused) leaves the
 * queue; one stored in full is freed once the turn is committed. */
static void s_phase_intake(cr_coordinator_t *c)
{
    int64_t until = cr_time_mono_ms() + CR_COORD_INTAKE_MS;
    size_t stored = 0; /* bytes of specs this turn */
    s_intake_t **pp = &c->intake;
    while (*pp && cr_time_mono_ms() < until && stored < CR_COORD_INTAKE_TURN_BYTES) {
        s_intake_t *in = *pp;
        if (in->cur.finished) {
            pp = &in->next;
            continue;
        }
        if (s_intake_step(c, in, &stored) != 0) {
            *pp = in->next;
            s_intake_release(c, in);
            s_intake_free(in);
            pp = &c->intake; /* the queue may have changed under the released messages */
            continue;
        }
        if (in->cur.finished) {
            s_intake_t *next = in->next;
            *pp = next; /* out of the queue, so that s_intake_done sees the batch's others */
            s_intake_done(c, in);
            in->next = c->intake_done;
            c->intake_done = in;
            s_intake_release(c, in);
            pp = &c->intake;
        }
    }
}

/* The intake phase of the turn that began at t0 (mono ms), run when
 * Submits are being stored: not in a turn already half over its bound
 * (decoding a large Submit is such a turn), unless the last turn skipped
 * it too. */
static void s_intake_phase(cr_coordinator_t *c, int64_t t0)
{
    if (!c->intake)
        return;
    if (cr_time_mono_ms() - t0 < CR_COORD_TURN_BOUND_MS / 2 || c->intake_skipped) {
        s_phase_intake(c);
        c->intake_skipped = 0;
    } else {
        c->intake_skipped = 1;
    }
}

/* After the turn's commit: what the steps stored is kept (ok) or, when the
 * commit failed, done again from the last committed step. */
static void s_intake_settle(cr_coordinator_t *c, int ok)
{
    while (c->intake_done) {
        s_intake_t *in = c->intake_done;
        c->intake_done = in->next;
        if (ok) {
            s_intake_free(in);
            continue;
        }
        /* back to the head of the queue, from its last committed step */
        in->cur = in->at;
        in->next = c->intake;
        c->intake = in;
    }
    for (s_intake_t *in = c->intake; in; in = in->next) {
        if (ok)
            in->at = in->cur;
        else
            in->cur = in->at;
    }
}

typedef struct {
    Crucible__StatusReply__HackFlagsEntry *e; /* owned entries */
    Crucible__StatusReply__HackFlagsEntry **p; /* owned pointer array */
    size_t n;                                 /* used */
    size_t cap;                               /* allocated */
} s_flags_t;

static void s_flag_collect(const char *flag, uint32_t count, void *arg)
{
    s_flags_t *f = arg;
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        Crucible__StatusReply__HackFlagsEntry *e = malloc(cap * sizeof *e);
        void *p = realloc(f->p, cap * sizeof *f->p);
        if (p)
            f->p = p;
        if (!e || !p) {
            free(e);
            return;
        }
        if (f->n)
            memcpy(e, f->e, f->n * sizeof *e);
        free(f->e);
        f->e = e;
        f->cap = cap;
    }
    char *key = strdup(flag);
    if (!key)
        return;
    crucible__status_reply__hack_flags_entry__init(&f->e[f->n]);
    f->e[f->n].key = key;
    f->e[f->n].value = count;
    f->n++;
}

static void s_status_reply(cr_coordinator_t *c, const cr_peer_t *peer, const char *batch_id)
{
    Crucible__StatusReply r = CRUCIBLE__STATUS_REPLY__INIT;
    cr_store_counts_t counts;
    if (cr_store_counts(c->store, &counts) != 0) {
        s_error(c, c->clients, peer, CR_E_STORE, batch_id, "status: database error");
        return;
    }
    r.queue_depth = (uint32_t)counts.queued;
    r.running = (uint32_t)counts.assigned;
    r.done = counts.done;
    r.jobs_per_minute = s_jobs_per_minute(c);

    size_t nw = cr_sched_count(c->sched);
    Crucible__WorkerInfo *wi = calloc(nw ? nw : 1, sizeof *wi);
    Crucible__WorkerInfo **wp = calloc(nw ? nw : 1, sizeof *wp);
    char *(*backs)[CR_SCHED_MAX_BACKENDS] = calloc(nw ? nw : 1, sizeof *backs);
    s_flags_t flags = {0};
    Crucible__StatusReply__ByStatusEntry bse[CR_STORE_NSTATUS], *bsp[CR_STORE_NSTATUS];
    if (!wi || !wp || !backs) {
        s_error(c, c->clients, peer, -ENOMEM, batch_id, "status: out of memory");
        goto out;
    }
    for (size_t i = 0; i < nw; i++) {
        cr_sched_worker_t *w = cr_sched_at(c->sched, i);
        crucible__worker_info__init(&wi[i]);
        wi[i].worker_id = w->id;
        wi[i].host = w->host;
        wi[i].device = w->device;
        for (int k = 0; k < w->nbackends; k++)
            backs[i][k] = w->backends[k];
        wi[i].n_backends = (size_t)w->nbackends;
        wi[i].backends = backs[i];
        wi[i].credit = w->credit;
        wi[i].in_flight = w->in_flight;
        wi[i].done = w->done;
        wi[i].draining = w->draining || w->drained;
        wi[i].gpus = w->gpus ? w->gpus : 1;
        wi[i].nccl = w->nccl;
        wi[i].nvlink = w->nvlink;
        wp[i] = &wi[i];
    }
    r.n_workers = nw;
    r.workers = wp;
    if (batch_id && batch_id[0]) {
        cr_store_batch_t b;
        int rc = cr_store_batch_get(c->store, batch_id, &b);
        if (rc == 0 && !s_may_see(peer, &b))
            rc = CR_E_NOT_FOUND;
        if (rc != 0) {
            s_error(c, c->clients, peer, rc == CR_E_NOT_FOUND ? CR_E_NOT_FOUND : CR_E_STORE,
                    batch_id, "batch '%s': %s", batch_id, cr_strerror(rc));
            goto out;
        }
        uint32_t by[CR_STORE_NSTATUS] = {0};
        cr_store_batch_counts(c->store, batch_id, by, s_flag_collect, &flags);
        r.batch_id = (char *)batch_id;
        r.batch_total = b.total;
        r.batch_done = b.done;
        for (int i = 0; i < CR_STORE_NSTATUS; i++) {
            if (!by[i])
                continue;
            crucible__status_reply__by_status_entry__init(&bse[r.n_by_status]);
            bse[r.n_by_status].key = (char *)cr_status_name(i);
            bse[r.n_by_status].value = by[i];
            bsp[r.n_by_status] = &bse[r.n_by_status];
            r.n_by_status++;
        }
        r.by_status = bsp;
        for (size_t i = 0; i < flags.n; i++)
            flags.p[i] = &flags.e[i];
        r.n_hack_flags = flags.n;
        r.hack_flags = flags.p;
    }
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY;
    env.status_reply = &r;
    s_send(c, c->clients, peer, &env);
out:
    for (size_t i = 0; i < flags.n; i++)
        free(flags.e[i].key);
    free(flags.e);
    free(flags.p);
    free(backs);
    free(wp);
    free(wi);
}

static void s_on_cancelled(const Crucible__RewardRecord *rec, const char *prev_worker, void *arg)
{
    cr_coordinator_t *c = arg;
    if (prev_worker[0]) {
        cr_sched_worker_t *w = cr_sched_find(c->sched, prev_worker);
        if (w) {
            s_send_cancel(c, w, rec->batch_id, rec->job_id);
            cr_sched_finished(w);
            c->dispatch_due = 1;
        }
    }
    s_on_record(c, rec);
}

static void s_client_cancel(cr_coordinator_t *c, const cr_peer_t *peer, const Crucible__Cancel *m)
{
    char who[80];
    uint32_t n = 0;
    cr_store_batch_t b;
    int rc = cr_store_batch_get(c->store, m->batch_id, &b);
    if (rc == 0 && !s_may_see(peer, &b))
        rc = CR_E_NOT_FOUND;
    if (rc == 0)
        rc = cr_store_cancel(c->store, m->batch_id, m->job_id, s_on_cancelled, c, &n);
    if (rc != 0) {
        s_error(c, c->clients, peer, rc == CR_E_NOT_FOUND ? CR_E_NOT_FOUND : rc, m->batch_id,
                "cancel %s%s%s: %s", m->batch_id, m->job_id[0] ? "/" : "", m->job_id,
                cr_strerror(rc));
        return;
    }
    cr_info("cancel from %s: %u jobs of batch %s%s%s cancelled",
            s_peer_name(peer, who, sizeof who), n, m->batch_id, m->job_id[0] ? " job " : "",
            m->job_id);
    Crucible__CancelAck ack = CRUCIBLE__CANCEL_ACK__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    ack.batch_id = m->batch_id;
    ack.cancelled = n;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_CANCEL_ACK;
    env.cancel_ack = &ack;
    s_send(c, c->clients, peer, &env);
    /* A draining worker whose last job was just cancelled can go. */
    for (size_t i = cr_sched_count(c->sched); i-- > 0;) {
        cr_sched_worker_t *w = cr_sched_at(c->sched, i);
        if (w->draining && w->in_flight == 0)
            cr_sched_remove(c->sched, w);
    }
}

static void s_on_client_msg(cr_coordinator_t *c, const cr_peer_t *peer, Crucible__Envelope *env)
{
    char who[80];
    s_subs_check_key(c, peer);
    if (env->body_case != CRUCIBLE__ENVELOPE__BODY_SUBMIT && s_intake_defer(c, peer, env))
        return; /* handled once the Submit before it is stored */
    switch (env->body_case) {
    case CRUCIBLE__ENVELOPE__BODY_SUBMIT:
        if (env->submit)
            s_client_submit(c, peer, env);
        break;
    case CRUCIBLE__ENVELOPE__BODY_SUBSCRIBE:
        if (env->subscribe)
            s_subscribe(c, peer, env->subscribe->batch_id, env->subscribe->after_seq,
                        env->subscribe->follow, env->subscribe->record_batches);
        break;
    case CRUCIBLE__ENVELOPE__BODY_STATUS_REQUEST:
        s_status_reply(c, peer, env->status_request ? env->status_request->batch_id : "");
        break;
    case CRUCIBLE__ENVELOPE__BODY_CANCEL:
        if (env->cancel)
            s_client_cancel(c, peer, env->cancel);
        break;
    default:
        cr_warn("client %s: unexpected %s on the clients endpoint",
                s_peer_name(peer, who, sizeof who), cr_wire_body_name(env));
        s_error(c, c->clients, peer, CR_E_USAGE, "", "unexpected %s on the clients endpoint",
                cr_wire_body_name(env));
        break;
    }
}

/* ---- phases ---- */

typedef void (*s_handler_fn)(cr_coordinator_t *c, const cr_peer_t *peer, Crucible__Envelope *env);

/* Reads up to CR_COORD_BURST messages from a ROUTER, and none after until
 * (mono ms) once it has read min_read. A message that does not decode is
 * answered with Error and logged with its peer. */
static void s_phase_socket(cr_coordinator_t *c, void *sock, const char *side, s_handler_fn fn,
                           int64_t until, int min_read)
{
    for (int i = 0; i < CR_COORD_BURST && (i < min_read || cr_time_mono_ms() < until); i++) {
        cr_peer_t peer;
        memset(&peer, 0, sizeof peer);
        Crucible__Envelope *env = NULL;
        char field[128] = "";
        /* clients' text must be NUL-free UTF-8 (trust note 4's hygiene);
         * workers' records may quote compiler output that is not */
        int rc = sock == c->clients
                     ? cr_wire_recv_submit_specs(sock, &peer, (size_t)c->cfg.max_msg,
                                                 (size_t)c->cfg.max_submit_jobs, &env, field,
                                                 sizeof field, &c->specs)
                     : cr_wire_recv_records(sock, &peer, (size_t)c->cfg.max_msg, &env,
                                            &c->records);
        if (rc == -EAGAIN)
            return;
        if (rc == CR_E_LIMIT) {
            char who[80];
            cr_warn("%s %s: Submit of more than %lld jobs refused undecoded", side,
                    s_peer_name(&peer, who, sizeof who), (long long)c->cfg.max_submit_jobs);
            s_error(c, sock, &peer, CR_E_LIMIT, "", "Submit: more than %lld jobs in one message "
                    "(--max-submit-jobs); nothing was queued: send the batch in several Submits "
                    "under the same batch id", (long long)c->cfg.max_submit_jobs);
            continue;
        }
        if (rc != 0 && field[0]) {
            char who[80];
            cr_warn("%s %s: message refused: field %s holds a NUL byte or invalid UTF-8", side,
                    s_peer_name(&peer, who, sizeof who), field);
            s_error(c, sock, &peer, rc, "", "field %s: a NUL byte or invalid UTF-8: text fields "
                    "must be UTF-8 without NUL bytes", field);
            continue;
        }
        if (rc == CR_E_ZMQ) {
            cr_error("%s socket: receive failed: %s", side, zmq_strerror(zmq_errno()));
            return;
        }
        if (rc != 0) {
            char who[80];
            cr_warn("%s %s: bad message (%s): answered %s", side,
                    s_peer_name(&peer, who, sizeof who), cr_strerror(rc), cr_errname(rc));
            if (peer.len)
                s_error(c, sock, &peer, rc, "", "%s", cr_strerror(rc));
            continue;
        }
        c->env_taken = 0;
        fn(c, &peer, env);
        if (!c->env_taken)
            cr_wire_free(&env);
        cr_wire_specs_free(&c->specs); /* unless the handler took them */
        cr_wire_specs_free(&c->records);
    }
}

/* A job on its way out (s_dispatch_worker): the parts of its Job that it
 * owns, beside its cr_wire_job_t, which points at them. */
typedef struct {
    const char *job_id;        /* the store key's (the caller's array) */
    uint8_t *spec;             /* owned packed JobSpec, as stored (the store hands it over) */
    uint8_t *task;             /* packed TaskBundle, named as the job names it; for a
                                  task_cache worker only that name and the hash; owned
                                  by the first job of a run that names it alike */
    size_t task_len;           /* its bytes */
    int task_owned;            /* 1: task is this job's to free */
    Crucible__TaskBundle *tb;  /* the cached bundle (s_task_bundle) */
    const char *task_name;     /* the name the job gives it (the store's) */
} s_out_job_t;

/* Sends one Assign of jobs[0..n) (out[0..n) their owned parts) and the
 * bundles tasks[0..ntasks) they name that w was not sent before; on failure
 * the jobs go back to the queue uncounted and the worker is skipped until it
 * speaks again. The Assign is written around the jobs' packed parts
 * (cr_wire_pack_assign) and goes at once, as s_send sends an Assign. */
static int s_flush_assign(cr_coordinator_t *c, cr_sched_worker_t *w, const cr_wire_job_t *jobs,
                          const s_out_job_t *out, size_t n, Crucible__TaskBundle **tasks,
                          size_t ntasks, s_ack_t *const *acks, size_t nacks)
{
    if (n == 0)
        return 0;
    Crucible__Assign a = CRUCIBLE__ASSIGN__INIT;
    Crucible__Ack *ackv = nacks ? calloc(nacks, sizeof *ackv) : NULL;
    Crucible__Ack **ackp = nacks ? calloc(nacks, sizeof *ackp) : NULL;
    if (!ackv || !ackp)
        nacks = 0; /* they go alone (s_acks_flush) */
    for (size_t i = 0; i < nacks; i++) {
        crucible__ack__init(&ackv[i]);
        ackv[i].batch_id = acks[i]->batch_id;
        ackv[i].job_id = acks[i]->job_id;
        ackv[i].attempt = acks[i]->attempt;
        ackp[i] = &ackv[i];
    }
    a.n_tasks = ntasks;
    a.tasks = tasks;
    a.n_acks = nacks;
    a.acks = ackp;
    a.result_batches = 1;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = cr_wire_pack_assign(jobs, n, &a, &buf, &len);
    if (rc == 0 && (rc = cr_wire_send_taken(c->workers, &w->peer, buf, len)) != 0)
        cr_debug("send assign to %s failed: %s", w->id, zmq_strerror(zmq_errno()));
    free(ackv);
    free(ackp);
    if (rc == 0) {
        for (size_t i = 0; i < nacks; i++)
            acks[i]->sent = 1;
        for (size_t i = 0; i < ntasks; i++)
            cr_sched_task_note(w, tasks[i]->hash, cr_wire_task_bytes(tasks[i]));
        cr_sched_assigned(w, (uint32_t)n);
        cr_debug("assigned %zu jobs to %s (%u in flight)", n, w->id, w->in_flight);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        cr_store_unassign(c->store, jobs[i].batch_id, out[i].job_id);
    w->unreachable = 1;
    cr_warn("worker %s unreachable: %zu jobs back in the queue", w->id, n);
    return CR_E_ZMQ;
}

/* 1 when tasks[0..n) holds tb. */
static int s_has_task(Crucible__TaskBundle *const *tasks, size_t n, const Crucible__TaskBundle *tb)
{
    for (size_t i = 0; i < n; i++)
        if (tasks[i] == tb)
            return 1;
    return 0;
}

/* The Job.task of a job of bundle tb that names it `name` ("" = the
 * bundle's own), packed into *buf (caller frees): the bundle is stored by
 * content, the job names it as submitted; a task_cache worker is sent each
 * bundle once (in Assign.tasks) and its jobs name it by hash. 0 or -ENOMEM. */
static int s_job_task(const cr_sched_worker_t *w, const Crucible__TaskBundle *tb, const char *name,
                      uint8_t **buf, size_t *len)
{
    Crucible__TaskBundle t = CRUCIBLE__TASK_BUNDLE__INIT;
    if (w->task_cache) {
        t.hash = tb->hash;
        t.name = tb->name;
    } else {
        t = *tb;
    }
    if (name && name[0])
        t.name = (char *)name;
    *len = crucible__task_bundle__get_packed_size(&t);
    if (!(*buf = malloc(*len ? *len : 1)))
        return -ENOMEM;
    crucible__task_bundle__pack(&t, *buf);
    return 0;
}

/* A job whose stored spec, bundle or options cannot be read back: it cannot
 * run anywhere, so it is done with an INFRA_ERROR record. */
static void s_job_unreadable(cr_coordinator_t *c, const cr_store_key_t *key)
{
    cr_error("job %s/%s: stored job does not decode", key->batch_id, key->job_id);
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    r.batch_id = (char *)key->batch_id;
    r.job_id = (char *)key->job_id;
    r.status = CRUCIBLE__STATUS__STATUS_INFRA_ERROR;
    r.message = "coordinator: the stored job does not decode";
    Crucible__RewardRecord *rec = cr_wire_record_dup(&r);
    if (rec && cr_store_complete(c->store, rec, NULL) == 0)
        s_on_record(c, rec);
    if (rec)
        crucible__reward_record__free_unpacked(rec, NULL);
}

/* Assigns to w the queued jobs keys[0..n) (the oldest in its languages,
 * fetched by s_phase_dispatch) that the scheduler's policy takes. Each Job
 * is sent around its spec as stored: the spec is not decoded and packed
 * again, only checked to read as protobuf fields (it was decoded whole at
 * its Submit). */
static void s_dispatch_worker(cr_coordinator_t *c, cr_sched_worker_t *w, cr_store_key_t *keys,
                              size_t n)
{
    s_out_job_t *out = calloc(n ? n : 1, sizeof *out);
    cr_wire_job_t *wj = calloc(n ? n : 1, sizeof *wj);
    const char **klangs = calloc(n ? n : 1, sizeof *klangs);
    int *take = calloc(n ? n : 1, sizeof *take);
    size_t nout = 0;
    if (!out || !wj || !klangs || !take)
        n = 0;
    /* The store offers the oldest jobs in the worker's languages; the
     * scheduler's policy has the last word on which it takes. */
    for (size_t i = 0; i < n; i++)
        klangs[i] = keys[i].language;
    if (n)
        cr_sched_pick(w, klangs, n, take);
    int64_t now = cr_time_now_ms();
    s_opts_t *opts = NULL;      /* the options of opts_batch */
    const char *opts_batch = "";
    for (size_t i = 0; i < n; i++) {
        if (!take[i])
            continue;
        cr_store_assigned_t a;
        if (cr_store_assign_spec(c->store, keys[i].batch_id, keys[i].job_id, w->id, now, &a) != 0)
            continue;
        s_out_job_t *o = &out[nout];
        /* jobs in a row mostly share a batch and a task: the previous
         * one's bundle, options and packed Job.task serve again */
        s_out_job_t *prev = nout ? &out[nout - 1] : NULL;
        Crucible__TaskBundle *tb = prev && strcmp(prev->tb->hash, a.task_hash) == 0
                                       ? prev->tb
                                       : s_task_bundle(c, a.task_hash);
        if (!opts || strcmp(keys[i].batch_id, opts_batch) != 0) {
            opts = s_batch_opts(c, keys[i].batch_id);
            opts_batch = keys[i].batch_id;
        }
        if (prev && tb == prev->tb && a.task_name == prev->task_name) {
            o->task = prev->task; /* the store's names are interned: one pointer each */
            o->task_len = prev->task_len;
        }
        int kept = 0;
        if (!cr_wire_fields_ok(a.spec, a.spec_len) || !tb || !opts) {
            s_job_unreadable(c, &keys[i]);
        } else if (!o->task && s_job_task(w, tb, a.task_name, &o->task, &o->task_len) != 0) {
            cr_store_unassign(c->store, keys[i].batch_id, keys[i].job_id);
        } else {
            o->task_owned = !prev || o->task != prev->task;
            o->task_name = a.task_name;
            o->job_id = keys[i].job_id;
            o->spec = a.spec;
            o->tb = tb;
            wj[nout].batch_id = keys[i].batch_id;
            /* an empty spec is still a spec: the Job says which job it is */
            wj[nout].spec = o->spec ? o->spec : (const uint8_t *)"";
            wj[nout].spec_len = a.spec_len;
            wj[nout].task = o->task;
            wj[nout].task_len = o->task_len;
            wj[nout].options = opts->packed;
            wj[nout].options_len = opts->len;
            wj[nout].attempt = a.attempt;
            a.spec = NULL; /* o's now */
            nout++;
            kept = 1;
        }
        if (!kept) /* the slot is the next job's: nothing of this one in it */
            memset(o, 0, sizeof *o);
        cr_store_assigned_free(&a);
    }
    /* Split into messages under the size cap; one job and its bundle always
     * fit, as they arrived inside a Submit under the same cap. After a failed
     * send the rest go back to the queue too. A message carries the bundles
     * its jobs name that the worker was not sent (task_cache workers). */
    Crucible__TaskBundle **tasks = calloc(nout ? nout : 1, sizeof *tasks);
    size_t start = 0, bytes = 0, ntasks = 0;
    size_t cap = (size_t)c->cfg.max_msg > 8192 ? (size_t)c->cfg.max_msg - 4096 : 4096;
    int failed = !tasks;
    /* the Acks due to w ride in its first Assign (assign_acks workers) */
    size_t ack0 = 0, nack = 0;
    if (w->assign_acks)
        s_acks_for(c, w, &ack0, &nack);
    for (size_t k = 0; k < nack; k++)
        bytes += strlen(c->ack_order[ack0 + k]->batch_id) +
                 strlen(c->ack_order[ack0 + k]->job_id) + 16;
    for (size_t i = 0; i <= nout; i++) {
        size_t sz = i < nout ? cr_wire_job_bytes(&wj[i]) : 0;
        Crucible__TaskBundle *need = NULL;
        if (i < nout && w->task_cache && !cr_sched_task_sent(w, out[i].tb->hash) &&
            !(tasks && s_has_task(tasks, ntasks, out[i].tb))) {
            need = out[i].tb;
            sz += crucible__task_bundle__get_packed_size(need) + 16;
        }
        if (i == 0 && nack && bytes + sz > cap) /* no room beside the first job */
            nack = 0, bytes = 0;                /* they go alone (s_acks_flush) */
        if (i == nout || (i > start && bytes + sz > cap)) {
            if (!failed)
                failed = s_flush_assign(c, w, wj + start, out + start, i - start, tasks, ntasks,
                                        c->ack_order + ack0, nack) != 0;
            else
                for (size_t k = start; k < i; k++)
                    cr_store_unassign(c->store, wj[k].batch_id, out[k].job_id);
            nack = 0;
            start = i;
            bytes = 0;
            ntasks = 0;
        }
        if (need && tasks && i < nout)
            tasks[ntasks++] = need;
        bytes += sz;
    }
    free(tasks);
    for (size_t i = 0; i < nout; i++) {
        free(out[i].spec);
        if (out[i].task_owned)
            free(out[i].task);
    }
    free(take);
    free(klangs);
    free(wj);
    free(out);
}

/* A worker's languages as one word, so that workers serving the same ones
 * share one fetch of the queue. */
static void s_lang_sig(const cr_sched_worker_t *w, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    const char *cls[CR_SCHED_MAX_CLASSES];
    int n = cr_sched_classes(w, cls);
    for (int i = 0; i < n && off + 2 < cap; i++) {
        off += cr_text_copy(buf + off, cap - off - 1, cls[i]);
        buf[off++] = ',';
        buf[off] = '\0';
    }
}

_Static_assert(CR_SCHED_MAX_CLASSES <= CR_STORE_MAX_LANGS,
               "one cr_store_next_queued call merges every class a worker serves");

static void s_phase_dispatch(cr_coordinator_t *c)
{
    /* Nothing queued and no credit freed since last time: nothing to do.
     * This keeps an idle farm's heartbeats from costing queue queries. */
    if (!c->dispatch_due)
        return;
    c->dispatch_due = 0;
    /* One read of the queue serves every worker of the same languages (a
     * farm is mostly one kind): its oldest jobs, as many as those workers
     * have room for, handed out in round-robin order. */
    size_t n = cr_sched_count(c->sched);
    char sig[CR_SCHED_MAX_CLASSES * (CR_SCHED_BACKEND_MAX + 1) + 1] = "", wsig[sizeof sig];
    cr_store_key_t *pool = NULL;
    size_t npool = 0, used = 0;
    /* a read of the queue is for at most what it holds, whatever the free
     * credit: the keys' room is kept from turn to turn, not zeroed (the
     * store writes each key it gives), as it is what a busy farm's credit
     * holds */
    cr_store_counts_t counts;
    cr_store_counts(c->store, &counts);
    if (counts.queued == 0)
        return; /* credit freed, nothing to give: no sweep over the workers */
    int fetched = 0;
    for (size_t k = 0; k < n; k++) {
        cr_sched_worker_t *w = cr_sched_at(c->sched, (c->rr + k) % n);
        uint32_t room = cr_sched_free_credit(w);
        if (!room || !w->nbackends)
            continue;
        s_lang_sig(w, wsig, sizeof wsig);
        if (!fetched || strcmp(wsig, sig) != 0) {
            fetched = 1;
            size_t want = 0;
            for (size_t j = k; j < n; j++) {
                cr_sched_worker_t *x = cr_sched_at(c->sched, (c->rr + j) % n);
                char xsig[sizeof sig];
                s_lang_sig(x, xsig, sizeof xsig);
                if (x->nbackends && strcmp(xsig, wsig) == 0)
                    want += cr_sched_free_credit(x);
            }
            if (want > counts.queued)
                want = (size_t)counts.queued;
            if (want > c->cap_pool) {
                void *g = realloc(c->pool, want * sizeof *c->pool);
                if (g) {
                    c->pool = g;
                    c->cap_pool = want;
                }
            }
            pool = c->pool;
            /* its backends, and the multi-GPU classes it can take (docs/multigpu.md) */
            const char *langs[CR_SCHED_MAX_CLASSES];
            int nl = cr_sched_classes(w, langs);
            npool = used = 0;
            if (!want || want > c->cap_pool ||
                cr_store_next_queued(c->store, langs, (size_t)nl, want, pool, &npool) != 0)
                npool = 0;
            cr_text_copy(sig, sizeof sig, wsig);
        }
        size_t take = npool - used < room ? npool - used : room;
        if (take)
            s_dispatch_worker(c, w, pool + used, take);
        used += take;
    }
    c->rr++;
}

/* The lease of one assigned job, in ms: --lease-s, or derived from the
 * batch's timeouts and the holder's credit (trust note 3). */
static int64_t s_lease_ms(cr_coordinator_t *c, const char *batch_id, uint32_t credit)
{
    if (c->cfg.lease_s > 0)
        return (int64_t)(c->cfg.lease_s * 1000.0);
    Crucible__JobOptions *o = s_batch_options(c, batch_id);
    double each = o ? o->compile_timeout_s + o->run_timeout_s
                    : c->cfg.compile_timeout_s + c->cfg.run_timeout_s;
    if (!isfinite(each) || each < 0)
        each = 0;
    return (int64_t)(each * 1000.0) * (credit ? credit : 1) + CR_COORD_LEASE_MARGIN_MS;
}

/* One assigned job in the lease scan (s_phase_leases). */
static int s_lease_check(const cr_store_lease_t *l, void *arg)
{
    cr_coordinator_t *c = arg;
    int64_t now = cr_time_now_ms();
    cr_sched_worker_t *w = cr_sched_find(c->sched, l->worker_id);
    int64_t lease = s_lease_ms(c, l->key.batch_id, w ? w->credit : 1);
    if (w && now - l->t_assigned <= lease)
        return 0;
    char why[320];
    if (w)
        snprintf(why, sizeof why, "lease of %lld s ran out on worker %s",
                 (long long)(lease / 1000), w->id);
    else
        snprintf(why, sizeof why, "held by worker %s, which is gone", l->worker_id);
    Crucible__RewardRecord *rec = NULL;
    int rc = cr_store_requeue(c->store, l->key.batch_id, l->key.job_id,
                              s_max_attempts(c, l->key.batch_id), why, &rec);
    if (rc != 0)
        return 0;
    cr_warn("job %s/%s attempt %u: %s: %s", l->key.batch_id, l->key.job_id, l->attempt, why,
            rec ? "attempts spent, recorded INFRA_ERROR" : "requeued");
    if (w) {
        cr_sched_finished(w);
        s_send_cancel(c, w, l->key.batch_id, l->key.job_id);
    }
    c->dispatch_due = 1;
    if (rec) {
        s_on_record(c, rec);
        crucible__reward_record__free_unpacked(rec, NULL);
    }
    return 0;
}

/* Requeues (the try counted) every assigned job whose lease ran out or
 * whose holder is not registered any more, and tells a registered holder
 * to cancel it: a worker that keeps beating but never answers does not
 * keep its jobs. Records made on the way (attempts spent) are announced.
 * The leases are the store's memory: no SQL is read. */
static void s_phase_leases(cr_coordinator_t *c)
{
    cr_store_leases_each(c->store, s_lease_check, c);
}

/* Heartbeats to the workers of the current sweep, CR_COORD_BEAT_SLICE a
 * turn from where the last turn stopped: a beat to thousands of workers is
 * spread over turns instead of holding one. A worker removed meanwhile
 * shifts the order, so one may be skipped or beaten twice in a sweep: its
 * liveness counts several beats, and it beats us itself. */
static void s_phase_beats(cr_coordinator_t *c)
{
    size_t n = cr_sched_count(c->sched), end = c->beat_next + CR_COORD_BEAT_SLICE;
    for (; c->beat_next < n && c->beat_next < end; c->beat_next++) {
        cr_sched_worker_t *w = cr_sched_at(c->sched, c->beat_next);
        Crucible__Heartbeat hb = CRUCIBLE__HEARTBEAT__INIT;
        Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
        hb.sent_ms = (uint64_t)cr_time_now_ms();
        hb.in_flight = w->in_flight;
        env.body_case = CRUCIBLE__ENVELOPE__BODY_HEARTBEAT;
        env.heartbeat = &hb;
        s_worker_send(c, w, &env);
    }
    if (c->beat_next >= n)
        c->beating = 0;
}

static void s_phase_cron(cr_coordinator_t *c)
{
    int64_t now = cr_time_mono_ms();
    c->next_cron_ms = now + c->cfg.heartbeat_ms;
    c->dispatch_due = 1; /* a safety net: whatever was missed is retried each beat */
    c->beating = 1; /* a new sweep of heartbeats: s_phase_beats, a slice a turn */
    c->beat_next = 0;
    s_phase_beats(c);
    /* Subscribers hear a beat too: a client that hears nothing for liveness
     * beats reconnects and resubscribes after its last seq (a restart forgets
     * subscriptions). A failed send ends the subscription, as in s_publish. */
    for (size_t i = 0; i < c->nsubs; i++) {
        Crucible__Heartbeat hb = CRUCIBLE__HEARTBEAT__INIT;
        Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
        hb.sent_ms = (uint64_t)cr_time_now_ms();
        env.body_case = CRUCIBLE__ENVELOPE__BODY_HEARTBEAT;
        env.heartbeat = &hb;
        c->tag_sub = c->subs[i].id;
        if (!c->subs[i].dead && s_send(c, c->clients, &c->subs[i].peer, &env) != 0)
            c->subs[i].dead = 1;
        c->tag_sub = 0;
    }
    s_subs_reap(c);
    /* queue timeout: jobs that waited too long for a worker end INFRA_ERROR */
    uint32_t expired = 0;
    if (cr_store_expire_queued(c->store, cr_time_now_ms(), s_on_cancelled, c, &expired) == 0 &&
        expired)
        cr_warn("%u jobs recorded INFRA_ERROR: queued longer than their queue timeout", expired);
    s_phase_leases(c);
    cr_sched_worker_t *lost[64];
    size_t n;
    while ((n = cr_sched_expire(c->sched, s_clock_ms(c), c->cfg.heartbeat_ms, c->cfg.liveness, lost,
                                sizeof lost / sizeof lost[0])) > 0) {
        for (size_t i = 0; i < n; i++) {
            char why[64];
            snprintf(why, sizeof why, "%lld heartbeats missed", (long long)c->cfg.liveness);
            s_worker_lost(c, lost[i], why);
        }
    }
#ifndef NDEBUG
    if (now >= c->next_check_ms) {
        char err[512];
        c->next_check_ms = now + CR_COORD_CHECK_MS;
        if (cr_store_check(c->store, err, sizeof err) != 0) {
            cr_error("store check: %s", err);
            assert(!"store invariant broken");
        }
    }
#endif
}

/* ---- the turn's transaction ---- */

/* Opens the transaction that every store change of the phases that follow
 * joins: the results and records of one turn cost one commit (one fsync
 * under durability full) instead of one each. Dispatch runs after its
 * commit in a transaction of its own, which only reads (an assignment
 * writes nothing: store.c, "Memory and log"), so it costs no sync. */
static void s_turn_begin(cr_coordinator_t *c)
{
    /* between turns nothing of the caches is held: the place to bound them */
    if (c->options.n > CR_COORD_CACHE_MAX)
        s_cache_clear(&c->options);
    if (c->bundles.n > CR_COORD_CACHE_MAX)
        s_cache_clear(&c->bundles);
    if (c->totals.n > CR_COORD_CACHE_MAX)
        s_cache_clear(&c->totals);
    c->turn_records = 0;
    if (cr_store_begin(c->store) == 0)
        c->turn_open = 1;
}

static void s_outbox_drop(cr_coordinator_t *c)
{
    for (size_t i = 0; i < c->nout; i++)
        free(c->out[i].buf);
    c->nout = 0;
    c->nopen = 0;
    for (size_t i = 0; i < c->nsubs; i++)
        c->subs[i].open = 0; /* the outbox it pointed into is gone */
}

static s_sub_t *s_sub_by_id(cr_coordinator_t *c, uint64_t id)
{
    for (size_t k = 0; id && k < c->nsubs; k++)
        if (c->subs[k].id == id)
            return &c->subs[k];
    return NULL;
}

/* Sends one kept message. 0, or the zmq errno (EAGAIN: the peer's queue is
 * full; EHOSTUNREACH: it is gone). */
static int s_outmsg_send(const s_outmsg_t *m)
{
    if (zmq_send(m->sock, m->peer.bytes, m->peer.len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
        zmq_send(m->sock, m->buf + m->off, m->len, ZMQ_DONTWAIT) >= 0)
        return 0;
    return zmq_errno();
}

/* Keeps a reply a full client queue refused for the next flush; takes m's
 * buffer (freed when the carry is full). */
static void s_carry(cr_coordinator_t *c, s_outmsg_t *m)
{
    if (!c->carry && !(c->carry = calloc(CR_COORD_CARRY_MAX, sizeof *c->carry)))
        c->ncarry = CR_COORD_CARRY_MAX;
    if (c->ncarry >= CR_COORD_CARRY_MAX) {
        cr_debug("a reply to a client whose queue is full dropped (%d kept already)",
                 CR_COORD_CARRY_MAX);
        free(m->buf);
    } else {
        c->carry[c->ncarry++] = *m;
    }
    m->buf = NULL;
}

/* Sends what the turn kept, now that it is durable; first the replies kept
 * from earlier turns. A subscriber whose queue is full (a reader slower
 * than the batch) is not dropped: the rest of its messages are, and it
 * catches up from the store after the last record its connection took
 * (s_replay_step, one bounded step at a time), so what waits for it is
 * bounded by its queue's high-water mark, whatever the batch's size. A
 * subscriber that is gone ends. */
static void s_outbox_flush(cr_coordinator_t *c)
{
    size_t nc = c->ncarry;
    c->ncarry = 0;
    for (size_t i = 0; i < nc; i++) {
        s_outmsg_t m = c->carry[i];
        int e = s_outmsg_send(&m);
        if (e == EAGAIN)
            s_carry(c, &m);
        else
            free(m.buf);
    }
    int64_t now = cr_time_mono_ms();
    for (size_t i = 0; i < c->nout; i++) {
        s_outmsg_t *m = &c->out[i];
        s_sub_t *sub = m->sub ? s_sub_by_id(c, m->sub) : NULL;
        if (sub && sub->replaying && sub->retry_ms > now)
            continue; /* behind: it catches up from the store */
        s_batch_seal(m);
        int e = s_outmsg_send(m);
        if (e == 0) {
            if (sub && m->seq > sub->sent_seq)
                sub->sent_seq = m->seq;
            if (sub)
                sub->backoff_ms = 0;
            continue;
        }
        if (m->sock != c->clients)
            continue; /* an Ack: the worker resends the result, which is acknowledged again */
        if (sub && e == EAGAIN) {
            char who[80];
            if (!sub->replaying)
                cr_debug("subscriber %s of batch %s: its queue is full at seq %llu: it catches "
                         "up from the store", s_peer_name(&sub->peer, who, sizeof who),
                         sub->batch_id, (unsigned long long)sub->sent_seq);
            sub->replaying = 1;
            sub->after = sub->sent_seq;
            int64_t wait = sub->backoff_ms ? sub->backoff_ms : CR_COORD_SLOW_RETRY_MIN_MS;
            sub->retry_ms = now + wait;
            sub->backoff_ms = 2 * wait < CR_COORD_SLOW_RETRY_MS ? 2 * wait : CR_COORD_SLOW_RETRY_MS;
            continue;
        }
        if (!sub && e == EAGAIN) {
            s_carry(c, m);
            continue;
        }
        for (size_t k = 0; k < c->nsubs; k++) {
            s_sub_t *x = &c->subs[k];
            if (!x->dead && cr_wire_peer_cmp(&x->peer, &m->peer) == 0) {
                char who[80];
                cr_info("subscriber %s of batch %s unreachable: subscription ended",
                        s_peer_name(&x->peer, who, sizeof who), x->batch_id);
                x->dead = 1;
            }
        }
    }
    s_outbox_drop(c);
    s_subs_reap(c);
}

/* Commits the turn, then sends what it kept. When the commit fails nothing
 * of the turn happened: its acknowledgements and records are dropped
 * (workers resend their results, clients resubscribe after the last seq
 * they have), and what the registry believes is set back to the store's. */
static void s_turn_end(cr_coordinator_t *c)
{
    if (!c->turn_open)
        return;
    c->turn_open = 0;
    int rc = cr_store_commit(c->store);
    s_intake_settle(c, rc == 0);
    if (rc == 0) {
        s_outbox_flush(c);
        s_acks_sort(c);
        return;
    }
    c->nacks = c->nacks_due; /* the turn's Acks name results that were not stored */
    cr_store_rollback(c->store);
    s_cache_clear(&c->totals); /* the job counts the turn's Submits had changed */
    cr_error("turn not stored (%s): %zu acknowledgements and records dropped; workers resend, "
             "subscribers resume", cr_strerror(rc), c->nout);
    s_outbox_drop(c);
    for (size_t i = 0; i < c->nsubs; i++)
        c->subs[i].dead = 1;
    s_subs_reap(c);
    for (size_t i = 0; i < cr_sched_count(c->sched); i++) {
        cr_sched_worker_t *w = cr_sched_at(c->sched, i);
        cr_store_key_t *keys = NULL;
        size_t n = 0;
        if (cr_store_worker_jobs(c->store, w->id, &keys, &n) == 0)
            w->in_flight = (uint32_t)n;
        free(keys);
    }
    c->dispatch_due = 1;
}

/* ---- lifecycle ---- */

/* Makes the file of an ipc:// path endpoint the coordinator's alone: a local
 * user who can connect can submit, and on the workers side judge. umask 077
 * (cr_coordinator_main) makes it so at bind; this covers an embedding
 * process's umask. 0, or -errno. */
static int s_ipc_private(const char *endpoint)
{
    if (strncmp(endpoint, "ipc://", 6) != 0)
        return 0;
    return chmod(endpoint + 6, 0600) == 0 ? 0 : -errno;
}

static void *s_router(cr_coordinator_t *c, const char *endpoint, const char *side, int handover)
{
    void *sock = zmq_socket(c->zctx, ZMQ_ROUTER);
    int one = 1;
    if (!sock) {
        cr_error("%s socket: %s", side, zmq_strerror(zmq_errno()));
        return NULL;
    }
    /* Mandatory: a send to a vanished peer fails instead of vanishing, so a
     * dead subscriber or worker is noticed. Handover (workers only): a
     * restarted worker reusing its id takes the route over from its dead
     * connection. Never on the clients side: there it would hand a client's
     * result stream to whoever connects with its routing id. */
    /* side is also the ZAP domain: each side has its own allow-list */
    /* clients: a bounded queue per client (CR_COORD_CLIENT_HWM), set before
     * the bind so that every connection's pipe gets it */
    int hwm = CR_COORD_CLIENT_HWM;
    if (cr_wire_socket_caps(sock, (size_t)c->cfg.max_msg) != 0 ||
        (!handover && zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0) ||
        cr_curve_apply(sock, &c->curve) != 0 ||
        (c->curve.on && zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, side, strlen(side)) != 0) ||
        zmq_setsockopt(sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one) != 0 ||
        zmq_setsockopt(sock, ZMQ_ROUTER_HANDOVER, &handover, sizeof handover) != 0 ||
        zmq_bind(sock, endpoint) != 0 || s_ipc_private(endpoint) != 0) {
        cr_error("%s endpoint %s: %s", side, endpoint, zmq_strerror(zmq_errno()));
        zmq_close(sock);
        return NULL;
    }
    return sock;
}

cr_coordinator_t *cr_coordinator_new(const cr_config_t *cfg)
{
    cr_coordinator_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = *cfg;
    /* Defaults for values a hand-filled config may leave at 0. */
    if (c->cfg.heartbeat_ms <= 0)
        c->cfg.heartbeat_ms = 1000;
    if (c->cfg.liveness <= 0)
        c->cfg.liveness = 3;
    if (c->cfg.max_attempts <= 0)
        c->cfg.max_attempts = 3;
    if (c->cfg.max_msg <= 0 || c->cfg.max_msg > (int64_t)CR_WIRE_MAX_MSG)
        c->cfg.max_msg = CR_WIRE_MAX_MSG;
    if (c->cfg.max_submit_jobs <= 0)
        c->cfg.max_submit_jobs = CR_COORD_MAX_SUBMIT_JOBS;
    if (c->cfg.max_credit <= 0 || c->cfg.max_credit > CR_SCHED_MAX_CREDIT)
        c->cfg.max_credit = CR_SCHED_MAX_CREDIT;
    atomic_init(&c->stop, 0);
    c->options.free_fn = s_free_options;
    c->bundles.free_fn = s_free_bundle;
    c->totals.free_fn = free;
    c->dispatch_due = 1; /* the store may hold jobs from before a restart */
    if (cr_hash_global_init() != 0) {
        cr_error("coordinator: libsodium failed to initialise");
        goto fail;
    }
    cr_random_bytes(s_tag_key, sizeof s_tag_key);
    if (!c->cfg.db[0] || cr_store_open(c->cfg.db, &c->store) != 0) {
        cr_error("coordinator: cannot open the database '%s'", c->cfg.db);
        goto fail;
    }
    c->durability = c->cfg.durability[0] ? c->cfg.durability : "full";
    if (cr_store_set_durability(c->store, c->durability) != 0) {
        cr_error("coordinator: --durability '%s': expected full, normal or off",
                 c->cfg.durability);
        goto fail;
    }
    /* the WAL copied back off the loop (its failure is logged; they then
     * run in the commit, as before) */
    cr_store_checkpoint_apart(c->store);
    c->sched = cr_sched_new();
    c->zctx = zmq_ctx_new();
    if (!c->sched || !c->zctx)
        goto fail;
    cr_sched_set_drain_after(c->sched, (uint32_t)c->cfg.drain_after);
    const char *eps[2] = {c->cfg.clients_endpoint, c->cfg.workers_endpoint};
    char err[512];
    if (cr_curve_setup(&c->cfg, 1, eps, 2, &c->curve, err, sizeof err) != 0) {
        cr_error("coordinator: %s", err);
        goto fail;
    }
    /* the ZAP handler must listen before a CURVE socket accepts anyone */
    if (c->curve.on && !(c->zap = cr_zap_new(c->zctx, c->cfg.allow_clients,
                                             c->cfg.allow_workers, (size_t)c->cfg.max_msg, err,
                                             sizeof err))) {
        cr_error("coordinator: %s", err);
        goto fail;
    }
    if (!c->curve.on && (!cr_curve_is_loopback(eps[0]) || !cr_curve_is_loopback(eps[1])))
        cr_warn("coordinator: plaintext on a non-loopback endpoint (--insecure-force)");
    c->clients = s_router(c, c->cfg.clients_endpoint, CR_ZAP_CLIENTS, 0);
    if (!c->clients)
        goto fail;
    c->workers = s_router(c, c->cfg.workers_endpoint, CR_ZAP_WORKERS, 1);
    if (!c->workers || s_metrics_open(c) != 0)
        goto fail;
    return c;
fail:
    cr_coordinator_destroy(&c);
    return NULL;
}

void cr_coordinator_stop(cr_coordinator_t *c)
{
    atomic_store(&c->stop, 1);
}

int cr_coordinator_run(cr_coordinator_t *c)
{
    cr_store_counts_t counts = {0};
    cr_store_counts(c->store, &counts);
    cr_info("coordinator up: clients %s, workers %s (%s), db %s (%llu queued, %llu done)",
            c->cfg.clients_endpoint, c->cfg.workers_endpoint,
            c->curve.on ? "CURVE" : "plaintext", c->cfg.db,
            (unsigned long long)counts.queued, (unsigned long long)counts.done);
    c->next_cron_ms = cr_time_mono_ms();
    while (!atomic_load(&c->stop) && !s_signalled) {
        /* poll */
        int64_t wait = c->next_cron_ms - cr_time_mono_ms();
        int64_t replay = s_replay_wait(c);
        if (wait < 0 || c->beating || c->intake || replay <= 0)
            wait = 0;
        else if (replay < wait)
            wait = replay;
        zmq_pollitem_t items[2 + 1 + CR_METRICS_HTTP_CONNS] = {{c->workers, 0, ZMQ_POLLIN, 0},
                                                               {c->clients, 0, ZMQ_POLLIN, 0}};
        int nm = c->metrics_http ? cr_metrics_http_pollitems(c->metrics_http, items + 2,
                                                             1 + CR_METRICS_HTTP_CONNS)
                                 : 0;
        if (zmq_poll(items, 2 + nm, (long)wait) < 0) {
            if (zmq_errno() == EINTR)
                continue;
            cr_error("poll: %s", zmq_strerror(zmq_errno()));
            return CR_E_ZMQ;
        }
        int64_t t0 = cr_time_mono_ms();
        c->turns++;
        s_turn_begin(c);
        /* handle clients, then workers: a client's message can be a large
         * Submit, whose decoding is the one step of it that cannot be cut
         * (s_phase_intake stores it in steps), so the workers' phase comes
         * after it and fits in what is left of the turn's bound */
        if (items[1].revents & ZMQ_POLLIN)
            s_phase_socket(c, c->clients, "client", s_on_client_msg,
                           cr_time_mono_ms() + CR_COORD_PHASE_MS, 0);
        /* intake before the workers' results: a client waits for each
         * SubmitAck before it sends the next Submit, so a Submit stored in
         * full is committed and answered now, and its client's next
         * Submit travels while this turn reads the results */
        s_intake_phase(c, t0);
        if (c->intake_done) {
            s_turn_end(c);
            s_turn_begin(c);
        }
        if (items[0].revents & ZMQ_POLLIN) {
            int64_t now = cr_time_mono_ms(), until = t0 + 2 * CR_COORD_PHASE_MS;
            s_phase_socket(c, c->workers, "worker", s_on_worker_msg,
                           now + CR_COORD_PHASE_MS < until ? now + CR_COORD_PHASE_MS : until,
                           CR_COORD_MIN_READ);
        }
        /* metrics scrapes */
        for (int k = 2; k < 2 + nm; k++)
            if (items[k].revents) {
                s_metrics_refresh(c);
                cr_metrics_http_handle(c->metrics_http);
                break;
            }
        /* replay: subscribers catching up from the store, a step each */
        s_phase_replay(c);
        s_turn_mark(c, &t0, "handling messages");
        /* cron */
        if (cr_time_mono_ms() >= c->next_cron_ms)
            s_phase_cron(c);
        else if (c->beating)
            s_phase_beats(c);
        /* commit, then acknowledge and stream */
        s_turn_end(c);
        s_turn_mark(c, &t0, "cron and commit");
        /* dispatch: after the commit, so that a worker hears its result is
         * safe before (or in the same message as) the job that takes the
         * freed credit */
        if (c->dispatch_due) {
            /* its own transaction, a read one: an assignment writes nothing
             * (store.c, "Memory and log") but reads its job's spec, and one
             * read transaction for the phase costs one WAL lock instead of
             * one per job; the rare record made here commits with it */
            s_turn_begin(c);
            s_phase_dispatch(c);
            s_turn_end(c);
            s_turn_mark(c, &t0, "dispatch");
        }
        /* the Acks no Assign took: one message a worker (s_acks_flush) */
        s_acks_flush(c);
    }
    cr_info("coordinator stopping%s; longest turn %lld ms (bound %d ms), %llu turns",
            s_signalled ? " on a signal" : "", (long long)c->longest_turn_ms,
            CR_COORD_TURN_BOUND_MS, (unsigned long long)c->turns);
    return 0;
}

void cr_coordinator_destroy(cr_coordinator_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_coordinator_t *c = *self_p;
    if (c->workers)
        zmq_close(c->workers);
    if (c->clients)
        zmq_close(c->clients);
    cr_zap_destroy(&c->zap);
    cr_metrics_http_destroy(&c->metrics_http);
    cr_metrics_destroy(&c->metrics);
    explicit_bzero(&c->curve, sizeof c->curve);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    cr_sched_destroy(&c->sched);
    s_outbox_drop(c);
    free(c->out);
    for (size_t i = 0; i < c->ncarry; i++)
        free(c->carry[i].buf);
    free(c->carry);
    free(c->acks);
    free(c->ack_order);
    if (c->options.free_fn)
        s_cache_clear(&c->options);
    if (c->bundles.free_fn)
        s_cache_clear(&c->bundles);
    if (c->totals.free_fn)
        s_cache_clear(&c->totals);
    for (int k = 0; k < 2; k++)
        while (k ? c->intake_done : c->intake) {
            s_intake_t **pp = k ? &c->intake_done : &c->intake, *in = *pp;
            *pp = in->next;
            s_intake_free(in);
        }
    cr_wire_specs_free(&c->specs);
    cr_wire_specs_free(&c->records);
    free(c->pool);
    cr_wire_arena_trim(); /* the workers' decode memory (this thread's) */
    cr_store_close(&c->store);
    free(c->subs);
    free(c);
    *self_p = NULL;
}

int cr_coordinator_main(const cr_config_t *cfg)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    cr_log_set_role("coordinator");
    /* what this process makes (the database and its -wal and -shm, ipc
     * socket files) is its user's alone, from the moment it exists */
    umask(077);
    cr_coordinator_t *c = cr_coordinator_new(cfg);
    if (!c)
        return 1;
    int rc = cr_coordinator_run(c);
    cr_coordinator_destroy(&c);
    return rc == 0 ? 0 : 1;
}
