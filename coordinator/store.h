/* store.h — the coordinator's durable state: batches, task bundles, jobs and
 * their records, in one SQLite file (WAL).
 *
 * The job state machine and its invariants are written down at the top of
 * store.c. Every function returns 0 or a negative code; CR_E_STORE means
 * SQLite failed (the message is logged) and nothing was changed. Functions
 * that change several rows do it in one transaction; cr_store_begin /
 * cr_store_commit / cr_store_rollback let a caller put several calls into
 * one (they nest: only the outermost commit makes them durable).
 *
 * Records handed to callbacks are owned by the store and valid only during
 * the call. A callback called while rows are being read (cr_store_records,
 * cr_store_group_records, cr_store_groups_done) must not write to the store;
 * cr_store_cancel calls its callback after its transaction, so that one may.
 * A store is used by one thread at a time (it is opened without SQLite's
 * mutexes). */
#ifndef CR_STORE_H
#define CR_STORE_H

#include "crucible.pb-c.h"

#include <stddef.h>
#include <stdint.h>

#define CR_STORE_ID_MAX 128   /* bytes of a batch, job, group or worker id */
#define CR_STORE_OWNER_MAX 511 /* hex of a 255-byte ZeroMQ routing id, + 1 */
#define CR_STORE_LANG_MAX 31  /* "c", "cuda", "torch" */
#define CR_STORE_NSTATUS 14   /* values of crucible.Status, 0..13 */
#define CR_STORE_KEY_MAX 40   /* z85 CURVE public key */
#define CR_STORE_MAX_LANGS 16 /* languages one cr_store_next_queued call merges */

typedef struct cr_store cr_store_t;

typedef enum {
    CR_JOB_QUEUED = 0,   /* waiting for a worker */
    CR_JOB_ASSIGNED = 1, /* sent to worker_id */
    CR_JOB_DONE = 2,     /* has its one record (terminal) */
} cr_job_state_t;

typedef struct {
    char batch_id[CR_STORE_ID_MAX + 1];   /* client-chosen batch id */
    char job_id[CR_STORE_ID_MAX + 1];     /* client-chosen job id, unique in the batch */
    char language[CR_STORE_LANG_MAX + 1]; /* its task's language */
} cr_store_key_t;

typedef struct {
    cr_job_state_t state;                 /* as stored */
    uint32_t attempt;                     /* try number, >= 1 */
    char worker_id[CR_STORE_ID_MAX + 1];  /* holder when ASSIGNED; "" when QUEUED */
    char group_id[CR_STORE_ID_MAX + 1];   /* GRPO group; "" = none */
    char language[CR_STORE_LANG_MAX + 1]; /* task language; "" for an invalid task */
    int64_t t_submitted;                  /* ms since the epoch */
    int64_t t_assigned;                   /* ms since the epoch; 0 = never */
    uint64_t seq;                         /* position in the batch stream; 0 unless DONE */
} cr_store_job_info_t;

typedef struct {
    uint32_t total;                       /* jobs in the batch */
    uint32_t done;                        /* jobs with a record */
    uint64_t last_seq;                    /* highest seq given; == done */
    int64_t created_ms;                   /* ms since the epoch */
    char owner[CR_STORE_OWNER_MAX + 1];   /* submitting client, as given to add_batch */
} cr_store_batch_t;

/* One job of a Submit, for cr_store_add_jobs. */
typedef struct {
    const char *job_id;    /* unique within the batch */
    const char *task_hash; /* a hash given to cr_store_add_task, or "" (invalid task) */
    const char *language;  /* task language ("" for an invalid task) */
    const char *group_id;  /* "" = none */
    const uint8_t *spec;   /* packed JobSpec; borrowed */
    size_t spec_len;       /* bytes */
    int has_keys;          /* 1: task, sample_index and turn below are the spec's (else
                              the store decodes the spec for them) */
    const char *task;      /* JobSpec.task */
    uint32_t sample_index; /* JobSpec.sample_index */
    uint32_t turn;         /* JobSpec.turn */
    int is_new;            /* out: 1 inserted, 0 already known (duplicate) */
} cr_store_job_in_t;

/* What a worker needs for one assigned job. Free with cr_store_assigned_free. */
typedef struct {
    uint8_t *spec;      /* packed JobSpec; owned */
    size_t spec_len;    /* bytes */
    uint8_t *task;      /* packed TaskBundle; owned */
    size_t task_len;    /* bytes */
    uint8_t *options;   /* packed JobOptions of the batch; owned */
    size_t options_len; /* bytes */
    uint32_t attempt;   /* try number sent in the Job */
    char task_hash[CR_STORE_ID_MAX + 1]; /* the bundle's key (cr_store_task) */
    const char *task_name; /* JobSpec.task, the name the job gives its bundle ("" =
                             the bundle's own); the store's, valid until it closes */
} cr_store_assigned_t;

typedef struct {
    uint64_t queued;   /* jobs QUEUED, all batches */
    uint64_t assigned; /* jobs ASSIGNED */
    uint64_t done;     /* jobs DONE */
} cr_store_counts_t;

/* Return nonzero to stop the iteration. rec is the store's; do not keep it. */
typedef int (*cr_store_record_fn)(const Crucible__RewardRecord *rec, void *arg);
/* A job that just became DONE: its record (seq set) and the worker that held
 * it ("" when it was QUEUED). */
typedef void (*cr_store_done_fn)(const Crucible__RewardRecord *rec, const char *prev_worker,
                                 void *arg);
typedef void (*cr_store_flag_fn)(const char *flag, uint32_t count, void *arg);
typedef void (*cr_store_group_fn)(const char *group_id, uint64_t last_seq, void *arg);

/* Opens (creating if needed) the database at path, makes it and its -wal and
 * -shm files mode 0600 (they hold every source and verdict), sets WAL, synchronous=FULL
 * and a busy timeout, creates the schema and runs cr_store_recover. Returns 0
 * and *out (close with cr_store_close), or CR_E_STORE (*out NULL). */
int cr_store_open(const char *path, cr_store_t **out);

/* What a committed transaction survives: "full" (a power cut: the WAL is
 * synced at every commit; the default of cr_store_open), "normal" (a crash
 * of the process) or "off". Returns 0, CR_E_USAGE (another word), CR_E_STORE. */
int cr_store_set_durability(cr_store_t *s, const char *level);

/* Closes and nulls *self_p. Safe on NULL. */
void cr_store_close(cr_store_t **self_p);

/* Checkpoints (the WAL copied back into the database once it holds about
 * 4 MiB) run inside the commit that fills the log, SQLite's default; after
 * this call they run on a thread of the store's own, with a connection of
 * its own (passive: never in the writer's way), and the commit returns at
 * once; cr_store_close ends the thread. Durability is the same either way:
 * a commit syncs the log, the checkpoint the database file (at the
 * store's synchronous level as it is now). 0, or CR_E_STORE / -errno when
 * the thread could not start (checkpoints then stay in the commit). The
 * store itself is still used by one thread at a time. */
int cr_store_checkpoint_apart(cr_store_t *s);

/* ASSIGNED → QUEUED for every job (the coordinator restarted; workers will
 * send Ready again). Attempts are unchanged: the coordinator, not the job,
 * interrupted the try. *n (may be NULL) gets the number of jobs requeued. */
int cr_store_recover(cr_store_t *s, uint32_t *n);

/* Nesting transactions (SQLite savepoints). rollback undoes everything since
 * the matching begin. */
int cr_store_begin(cr_store_t *s);
int cr_store_commit(cr_store_t *s);
void cr_store_rollback(cr_store_t *s);

/* Adds a batch; a known batch_id is left unchanged (*is_new = 0). options is
 * a packed JobOptions with every default resolved. */
int cr_store_add_batch(cr_store_t *s, const char *batch_id, const char *owner,
                       const uint8_t *options, size_t options_len, int64_t now_ms, int *is_new);

/* Adds a task bundle (packed TaskBundle) under its hash; a known hash is kept. */
int cr_store_add_task(cr_store_t *s, const char *hash, const char *name, const uint8_t *bundle,
                      size_t bundle_len);

/* Adds jobs to a known batch as QUEUED, attempt 1, in one transaction. A
 * (batch, job) already stored is left unchanged and counted duplicate;
 * jobs[i].is_new says which. Returns 0, CR_E_NOT_FOUND (no such batch),
 * CR_E_USAGE (a job without an id or with a task_hash not stored, other than
 * ""); nothing is added on failure. */
int cr_store_add_jobs(cr_store_t *s, const char *batch_id, cr_store_job_in_t *jobs, size_t n,
                      int64_t now_ms, uint32_t *n_new, uint32_t *n_dup);

/* How many of jobs[0..n) with a task hash the store knows neither live nor
 * DONE: what cr_store_add_jobs would queue (a job id given twice counts
 * twice). *n_new is 0 on failure. */
int cr_store_count_new(cr_store_t *s, const char *batch_id, const cr_store_job_in_t *jobs,
                       size_t n, uint32_t *n_new);

/* The oldest QUEUED jobs whose language is one of langs, at most limit, in
 * submission order. *n gets how many were written to out. */
int cr_store_next_queued(cr_store_t *s, const char *const *langs, size_t nlangs, size_t limit,
                         cr_store_key_t *out, size_t *n);

/* QUEUED → ASSIGNED to worker_id at now_ms. out (may be NULL) gets what the
 * Job message needs; on failure it is zeroed. Returns 0, CR_E_NOT_FOUND, or
 * CR_E_STATE when the job is not QUEUED (nothing changed). */
int cr_store_assign(cr_store_t *s, const char *batch_id, const char *job_id,
                    const char *worker_id, int64_t now_ms, cr_store_assigned_t *out);
void cr_store_assigned_free(cr_store_assigned_t *a);

/* cr_store_assign that fills only spec, attempt and task_hash of out (task
 * and options NULL): for a caller that keeps bundles and options by key. */
int cr_store_assign_spec(cr_store_t *s, const char *batch_id, const char *job_id,
                         const char *worker_id, int64_t now_ms, cr_store_assigned_t *out);

/* The packed TaskBundle stored under hash (heap copy; caller frees).
 * 0 or CR_E_NOT_FOUND. */
int cr_store_task(cr_store_t *s, const char *hash, uint8_t **blob, size_t *len);

/* QUEUED|ASSIGNED → DONE with rec as its record. First record wins. rec must
 * own its strings (it came from an unpack): the store sets rec->seq to the
 * batch's next seq, t_submitted / t_assigned from the job, the keys task,
 * group_id, sample_index, turn from the submitted spec, and attempt when it
 * is 0; then stores it. prev (may be NULL) gets the job as it was before.
 * Returns 0; CR_E_DUPLICATE when the job is already DONE (nothing changed,
 * prev filled); CR_E_NOT_FOUND. */
int cr_store_complete(cr_store_t *s, Crucible__RewardRecord *rec, cr_store_job_info_t *prev);

/* cr_store_complete of a worker's record whose bytes as it came are sent
 * (len bytes; rec is their decode, with the fields the coordinator sets
 * changed, cr_wire_record_amend): the record stored is those bytes with the
 * coordinator's fields written after them, instead of rec packed again;
 * decoded, the same record. sent NULL: rec is packed, as cr_store_complete
 * does. */
int cr_store_complete_sent(cr_store_t *s, Crucible__RewardRecord *rec, const uint8_t *sent,
                           size_t len, cr_store_job_info_t *prev);

/* The packed bytes of the record the last cr_store_complete made, as they
 * will be stored (so that they are packed once, for the log and for the
 * stream). Borrowed: valid until the next call into the store. 0, or
 * CR_E_NOT_FOUND when that record was written already. */
int cr_store_last_record(cr_store_t *s, const uint8_t **blob, size_t *len);

/* ASSIGNED → QUEUED after its worker was lost: the lost try counts, so the
 * attempt goes up by one. When the lost try was attempt max_attempts (or
 * later), the job goes DONE instead with an INFRA_ERROR record naming why;
 * *done (may be NULL) then gets that record (caller frees with
 * crucible__reward_record__free_unpacked), else NULL. Returns 0,
 * CR_E_NOT_FOUND, CR_E_STATE (not ASSIGNED). */
int cr_store_requeue(cr_store_t *s, const char *batch_id, const char *job_id,
                     uint32_t max_attempts, const char *why, Crucible__RewardRecord **done);

/* ASSIGNED → QUEUED without counting the try: the Assign never left (the
 * worker was unreachable). Returns 0, CR_E_NOT_FOUND, CR_E_STATE. */
int cr_store_unassign(cr_store_t *s, const char *batch_id, const char *job_id);

/* QUEUED|ASSIGNED → DONE(CANCELLED) for one job (job_id non-empty) or every
 * unfinished job of the batch, in one transaction; then fn (may be NULL) is
 * called once per cancelled job, in seq order. *n (may be NULL) gets the
 * count. Returns 0 (also when nothing was left to cancel) or CR_E_NOT_FOUND
 * (no such batch, or no such job in it). */
int cr_store_cancel(cr_store_t *s, const char *batch_id, const char *job_id, cr_store_done_fn fn,
                    void *arg, uint32_t *n);

/* QUEUED → DONE(INFRA_ERROR, "queued for N s without a worker (queue timeout
 * T s)") for every job of an unfinished batch whose JobOptions.queue_timeout_s
 * is > 0 and which has waited longer than that at now_ms (ms since the epoch)
 * since it was submitted or, when requeued, last assigned. One transaction;
 * then fn (may be NULL; prev_worker "") once per job. *n (may be NULL) gets
 * the count. Returns 0 or CR_E_STORE / -ENOMEM (nothing changed). */
int cr_store_expire_queued(cr_store_t *s, int64_t now_ms, cr_store_done_fn fn, void *arg,
                           uint32_t *n);

/* Calls fn for each record of the batch with seq > after_seq, in seq order.
 * Returns 0 (also when fn stopped it), CR_E_DECODE when a stored record is
 * corrupt (iteration stops). */
int cr_store_records(cr_store_t *s, const char *batch_id, uint64_t after_seq,
                     cr_store_record_fn fn, void *arg);

/* Return nonzero to stop the iteration. rec (len bytes) is the stored packed
 * record of seq, the store's: do not keep it. */
typedef int (*cr_store_packed_fn)(uint64_t seq, const uint8_t *rec, size_t len, void *arg);

/* cr_store_records without decoding: fn gets each record as stored, for a
 * caller that sends it on (cr_wire_pack_result). Returns 0 (also when fn
 * stopped it) or CR_E_STORE. */
int cr_store_records_packed(cr_store_t *s, const char *batch_id, uint64_t after_seq,
                            cr_store_packed_fn fn, void *arg);

/* One job. Returns 0 or CR_E_NOT_FOUND. */
int cr_store_job_get(cr_store_t *s, const char *batch_id, const char *job_id,
                     cr_store_job_info_t *out);

/* The ASSIGNED jobs of worker_id: *keys is a heap array (caller frees with
 * free(); NULL when *n is 0). */
int cr_store_worker_jobs(cr_store_t *s, const char *worker_id, cr_store_key_t **keys, size_t *n);

/* CURVE: binds worker_id to key for good (persisted, so a restart does not
 * forget it) when the id is new. Returns 0 when the id is (now) bound to
 * key; CR_E_STATE when it is bound to another key, which bound then holds
 * (bound is "" on other failures); CR_E_USAGE for an empty id or key. */
int cr_store_worker_key(cr_store_t *s, const char *worker_id, const char *key, int64_t now_ms,
                        char bound[CR_STORE_KEY_MAX + 1]);

/* One ASSIGNED job: its lease, as cr_store_assigned_list reports it. */
typedef struct {
    cr_store_key_t key;                   /* batch, job, language */
    char worker_id[CR_STORE_ID_MAX + 1];  /* holder */
    int64_t t_assigned;                   /* ms since the epoch the lease began */
    uint32_t attempt;                     /* the try it holds */
} cr_store_lease_t;

/* Every ASSIGNED job, oldest lease first: *out is a heap array (caller
 * frees with free(); NULL when *n is 0). From memory. */
int cr_store_assigned_list(cr_store_t *s, cr_store_lease_t **out, size_t *n);

/* Calls fn for each ASSIGNED job, from memory, without a copy of the list;
 * fn may requeue the job it is given (not another). Nonzero from fn stops. */
typedef int (*cr_store_lease_fn)(const cr_store_lease_t *lease, void *arg);
int cr_store_leases_each(cr_store_t *s, cr_store_lease_fn fn, void *arg);

/* Cluster-wide counts by state. */
int cr_store_counts(cr_store_t *s, cr_store_counts_t *out);

/* Batch totals. Returns 0 or CR_E_NOT_FOUND. */
int cr_store_batch_get(cr_store_t *s, const char *batch_id, cr_store_batch_t *out);

/* The batch's packed JobOptions (heap copy; caller frees). 0 or CR_E_NOT_FOUND. */
int cr_store_batch_options(cr_store_t *s, const char *batch_id, uint8_t **blob, size_t *len);

/* Records of the batch by status (by_status[status] += count) and, through
 * fn (may be NULL), how many records raised each hack flag. */
int cr_store_batch_counts(cr_store_t *s, const char *batch_id,
                          uint32_t by_status[CR_STORE_NSTATUS], cr_store_flag_fn fn, void *arg);

/* Jobs of the owner's batches that are QUEUED (for the per-client queue limit). */
int cr_store_queued_by_owner(cr_store_t *s, const char *owner, uint64_t *n);

/* A group's size, how many of its jobs are DONE and the highest seq among them. */
int cr_store_group_state(cr_store_t *s, const char *batch_id, const char *group_id,
                         uint32_t *members, uint32_t *done, uint64_t *last_seq);

/* Records of a group's DONE members, in seq order. */
int cr_store_group_records(cr_store_t *s, const char *batch_id, const char *group_id,
                           cr_store_record_fn fn, void *arg);

/* Calls fn for every complete group of the batch with its last seq. */
int cr_store_groups_done(cr_store_t *s, const char *batch_id, cr_store_group_fn fn, void *arg);

/* Stores the group-relative advantage in a DONE job's record. Returns 0,
 * CR_E_NOT_FOUND, CR_E_STATE (not DONE). */
int cr_store_set_advantage(cr_store_t *s, const char *batch_id, const char *job_id, double adv);

/* Checks every invariant of store.c's design notes over the whole database.
 * Returns 0, or CR_E_STATE with err naming the first violation. For tests and
 * debug builds: it reads every row. */
int cr_store_check(cr_store_t *s, char *err, size_t errlen);

#endif
