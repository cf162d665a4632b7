/* store.c — the coordinator's durable queue and result store (SQLite, WAL).
 *
 * DESIGN NOTES
 *
 * One SQLite file holds five tables:
 *   batches(batch_id PK, owner, options, created, total, done, last_seq)
 *   tasks(hash PK, name, bundle)             -- packed TaskBundle, keyed by content
 *   jobs(batch_id, job_id, task_hash, language, spec, group_id, state, attempt,
 *        worker_id, t_submitted, t_assigned, seq, status, flags, record;
 *        PRIMARY KEY(batch_id, job_id))      -- as submitted; seq..record are
 *                                               only an older version's (below)
 *   records(job PK = jobs.rowid, batch_id, seq, status, flags, worker_id,
 *           t_assigned, record; UNIQUE(batch_id, seq); the flagged ones
 *           indexed by batch, records_flagged)
 *   worker_keys(worker_id PK, key, first_seen) -- CURVE: a worker id's key, for good
 * status and flags copy the record's status and hack flags so that counts
 * never decode blobs.
 *
 * Records. A job is DONE in the log when records holds its row: a record is
 * appended (an INSERT at the right edge of both b-trees, in a batch's seq
 * order), never written into the job's row, whose UPDATE (the row growing
 * by its record, the partial indexes moving) cost twice as much
 * (bench/RESULTS.md, issue 20 session 4). So the jobs row of a DONE job
 * keeps state 0, and "not DONE" is "state < 2 and no records row", a rowid
 * lookup. A database of the older version (user_version 0), which kept
 * the record in the job's row with state 2, has its records moved to the
 * table once at open (s_migrate); those rows keep their state 2. No index
 * lists the live rows (it would hold every job, as rows are not written
 * when done): the load at open walks jobs in rowid order, skipping those
 * with a record.
 *
 * The queue is in memory (one list per language, in rowid order, so
 * "oldest first" is the head).
 *
 * Job states and the function performing each transition:
 *
 *        cr_store_add_jobs
 *               |
 *               v      cr_store_assign
 *           +--------+ ------------------> +----------+
 *           | QUEUED |                     | ASSIGNED |
 *           +--------+ <------------------ +----------+
 *               |      cr_store_requeue (worker lost; attempt + 1)
 *               |      cr_store_unassign (the Assign never left)
 *               |      cr_store_recover / cr_store_open (the coordinator
 *               |        restarted; workers will send Ready again)
 *               |                                |
 *               | cr_store_complete (INVALID_    | cr_store_complete (first record wins)
 *               |   TASK at submit, late result) | cr_store_cancel (CANCELLED record)
 *               | cr_store_cancel (CANCELLED)    | cr_store_requeue when the lost try was
 *               |                                |   attempt max_attempts (INFRA_ERROR)
 *               v                                v
 *           +----------------------------------------+
 *           | DONE: terminal; one record; seq        |
 *           +----------------------------------------+
 *
 * Memory and log. The live part of the state machine, QUEUED and ASSIGNED
 * jobs with their attempts and leases, the queue per language and every
 * batch's counters, is held in memory; the database is the log it is
 * recovered from. A job's row is written when it is added (QUEUED) and when a
 * lost try is counted (cr_store_requeue: attempt and t_assigned); when it
 * becomes DONE its record is appended to records; an assignment is never
 * written: the log keeps an ASSIGNED job QUEUED, which is exactly what a
 * restart makes of it anyway (cr_store_open loads every job that is not
 * DONE as QUEUED; its worker sends Ready again and its result, if one comes,
 * is refused as not the worker's). A batch's total, done and last_seq are
 * kept in memory and written once per batch at the outermost commit
 * (s_flush), and before any read through SQL of records or batch rows.
 * Nothing on the result path reads SQLite: the job, its keys (task, group,
 * sample index, turn, times) and the next seq come from memory. An
 * assignment reads the job's spec from its row, unless the job kept the
 * packed spec it was added with (up to CR_STORE_SPEC_CACHE bytes for all
 * live jobs together, a constant, so memory does not grow with a batch).
 * The records of a turn are appended at the flush in rowid order, 64 rows
 * to a statement; a Submit's jobs likewise, with the rowids given by the
 * store (from max(rowid) + 1, as SQLite itself would choose) so that
 * memory knows which row each job got. The group index is partial: a job
 * has an entry there only if it has a group. Savepoints nest as before; a
 * rollback undoes memory too (the undo log, s_undo_to), so memory never
 * holds what the log does not.
 *
 * Invariants (cr_store_check verifies each, tests call it after every step):
 *
 * "DONE" below is a job with a records row; "its row" a job's row in jobs.
 *
 *   (1) state is QUEUED, ASSIGNED or DONE (2: a row of the older version).
 *   (2) attempt >= 1 in every state: it is the number of the try that is,
 *       was or will be running, and it is what the Job and the record carry.
 *   (3) A QUEUED job has no worker_id, no seq and no record.
 *   (4) No row is ASSIGNED: assignments live in memory only, where an
 *       ASSIGNED job has a worker and t_assigned > 0 (checked with (9)).
 *   (5) A DONE job has exactly one record and a seq >= 1 (a row with state 2
 *       has a records row; a records row belongs to a job of its batch); the
 *       record decodes, names the same batch and job, and carries that same
 *       seq and status.
 *       DONE is terminal: completing a DONE job returns CR_E_DUPLICATE and
 *       changes nothing (first record wins).
 *   (6) Every job belongs to a stored batch; batches.total counts its jobs and
 *       batches.done its DONE jobs.
 *   (7) The seqs of a batch are exactly 1..done, without gap or repeat, and
 *       batches.last_seq == done. A record gets seq = last_seq + 1 in the same
 *       transaction that makes the job DONE, so a crash never leaves a gap and
 *       a replay "after seq n" never misses or repeats a record.
 *   (8) A job that is not DONE names a stored task bundle (a job whose task
 *       was invalid is DONE at submit with task_hash "").
 *   (9) The rows not DONE are exactly the live jobs in memory, with the same
 *       attempts and rowids; each live job is in its language's queue
 *       (QUEUED, no worker) or in the lease list (ASSIGNED, a worker,
 *       t_assigned > 0).
 *  (10) Once flushed, every batch's counters in memory equal its row, and
 *       its records by status, where memory counts them, equal its rows'.
 *
 * Durability: WAL with synchronous=FULL (the default; cr_store_set_durability)
 * syncs the log at every commit, so a committed transaction survives a power
 * cut; NORMAL survives a process crash at any point (a power cut may lose the
 * last transactions, never corrupt). The coordinator puts a whole loop turn
 * in one transaction and acknowledges results to workers and streams records
 * to clients only after that commit, so whatever was acknowledged is durable
 * to the level chosen, and a result lost before it is resent by its worker.
 * Checkpoints (the log copied back into the database) change nothing of
 * that; the coordinator has them run on a thread of their own
 * (cr_store_checkpoint_apart), with its own connection, instead of inside
 * the commit that fills the log, which the turn's messages wait on.
 */
#include "store.h"

#include "error.h"
#include "log.h"
#include "text.h"
#include "timeutil.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 5 s: only this process writes, so a wait means a checkpoint or a reader
 * like the sqlite3 shell; longer would stall the event loop. */
#define CR_STORE_BUSY_MS 5000
/* Bytes of packed specs kept in memory beside the live jobs they belong to,
 * so that an assignment of one reads nothing from SQLite; past it specs are
 * read from their rows at assign. A constant, so memory does not grow with
 * a batch: 64 MiB holds the queue of a farm fed as fast as it drains. */
#define CR_STORE_SPEC_CACHE ((size_t)64 << 20)
/* Bytes of WAL frames past which the log is copied back into the database:
 * SQLite's own default (SQLITE_DEFAULT_WAL_AUTOCHECKPOINT, 1000 pages) at
 * its default page of 4 KiB; a database of larger pages checkpoints after
 * as many bytes, fewer frames. */
#define CR_STORE_CKPT_BYTES ((size_t)4 << 20)
/* The page of a new database (an existing one keeps its own: SQLite fixes
 * it at creation, and in WAL mode for good). A commit writes every page
 * it changed as a WAL frame (a write of the frame's header, one of the
 * page); a small job adds about 190 bytes to the jobs table and 190 to
 * records, so a Submit's 2,000 jobs and their records are some 200 frames
 * of 4 KiB: at 8 KiB half as many writes for the same bytes. 64 KiB pages
 * measured slower (bench/RESULTS.md, issue 20 session 10). */
#define CR_STORE_PAGE_BYTES 8192
/* PRAGMA user_version of this layout: 1 = records in their own table
 * (s_migrate moves those of version 0, which kept them in the job's row). */
#define S_SCHEMA_VERSION 1

static const char s_schema[] =
    "CREATE TABLE IF NOT EXISTS batches("
    " batch_id TEXT PRIMARY KEY, owner TEXT NOT NULL, options BLOB NOT NULL,"
    " created INTEGER NOT NULL, total INTEGER NOT NULL DEFAULT 0,"
    " done INTEGER NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS tasks("
    " hash TEXT PRIMARY KEY, name TEXT NOT NULL, bundle BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs("
    " batch_id TEXT NOT NULL, job_id TEXT NOT NULL, task_hash TEXT NOT NULL,"
    " language TEXT NOT NULL, spec BLOB NOT NULL, group_id TEXT NOT NULL,"
    " state INTEGER NOT NULL, attempt INTEGER NOT NULL, worker_id TEXT NOT NULL DEFAULT '',"
    " t_submitted INTEGER NOT NULL, t_assigned INTEGER NOT NULL DEFAULT 0, seq INTEGER,"
    " status INTEGER NOT NULL DEFAULT 0, flags TEXT NOT NULL DEFAULT '', record BLOB,"
    " PRIMARY KEY(batch_id, job_id));"
    /* no index of the live rows: a job's row is not written when it is done
     * (records, below), so such an index would hold every job; the load at
     * open walks the rows in rowid order instead */
    "DROP INDEX IF EXISTS jobs_queue;"
    "DROP INDEX IF EXISTS jobs_live;"
    /* partial too: a job is added with no seq and, mostly, no group, and an
     * index entry it does not need is two b-tree writes per job (the insert,
     * then the move when its seq is set); the queries name the condition
     * (seq > ?, group_id > '') so that the planner may use them */
    "DROP INDEX IF EXISTS jobs_seq;"
    "DROP INDEX IF EXISTS jobs_group;"
    "CREATE INDEX IF NOT EXISTS jobs_group_set ON jobs(batch_id, group_id) WHERE group_id > '';"
    /* the records, appended (design notes, "Records"): keyed by their job's
     * rowid, so that "is it DONE" is a rowid lookup; records_seq is the
     * batch's stream in seq order, and its uniqueness keeps invariant (7) */
    "CREATE TABLE IF NOT EXISTS records("
    " job INTEGER PRIMARY KEY, batch_id TEXT NOT NULL, seq INTEGER NOT NULL,"
    " status INTEGER NOT NULL, flags TEXT NOT NULL, worker_id TEXT NOT NULL,"
    " t_assigned INTEGER NOT NULL, record BLOB NOT NULL);"
    "CREATE UNIQUE INDEX IF NOT EXISTS records_seq ON records(batch_id, seq);"
    /* the records that raised a hack flag, few of a batch: the batch's flag
     * counts (cr_store_batch_counts, at every BatchDone and status) read
     * these, not every record of the batch; partial, so a record without a
     * flag costs no entry */
    "CREATE INDEX IF NOT EXISTS records_flagged ON records(batch_id) WHERE flags <> '';"
    "CREATE INDEX IF NOT EXISTS jobs_worker ON jobs(worker_id) WHERE state = 1;"
    "CREATE INDEX IF NOT EXISTS batches_owner ON batches(owner);"
    /* CURVE: the key a worker id was first seen with (cr_store_worker_key) */
    "CREATE TABLE IF NOT EXISTS worker_keys("
    " worker_id TEXT PRIMARY KEY, key TEXT NOT NULL, first_seen INTEGER NOT NULL);";

/* Every statement, prepared once at open. */
#define CR_STORE_SQL(X)                                                                   \
    X(BEGIN, "SAVEPOINT cr")                                                              \
    X(RELEASE, "RELEASE cr")                                                              \
    X(ROLLBACK, "ROLLBACK TO cr")                                                         \
    X(RECOVER, "UPDATE jobs INDEXED BY jobs_worker SET state = 0, worker_id = ''"         \
               " WHERE state = 1")                                                        \
    X(BATCH_ADD, "INSERT OR IGNORE INTO batches(batch_id, owner, options, created)"       \
                 " VALUES(?1, ?2, ?3, ?4)")                                               \
    X(BATCH_OPTS, "SELECT options FROM batches WHERE batch_id = ?1")                      \
    X(BATCH_SET, "UPDATE batches SET total = ?2, done = ?3, last_seq = ?4"                \
                 " WHERE batch_id = ?1")                                                  \
    X(LOAD_BATCHES, "SELECT batch_id, owner, options, created, total, done, last_seq"     \
                    " FROM batches")                                                      \
    X(LOAD_JOBS, "SELECT j.rowid, j.batch_id, j.job_id, j.language, j.task_hash, j.spec,"  \
                 " j.group_id, j.attempt, j.t_submitted, j.t_assigned FROM jobs j"       \
                 " WHERE j.state < 2 AND NOT EXISTS"                                     \
                 " (SELECT 1 FROM records r WHERE r.job = j.rowid) ORDER BY j.rowid")    \
    X(SPEC_GET, "SELECT spec FROM jobs WHERE rowid = ?1")                                 \
    X(JOB_REQUEUE, "UPDATE jobs SET attempt = ?2, t_assigned = ?3 WHERE rowid = ?1")      \
    X(TASK_ADD, "INSERT OR IGNORE INTO tasks(hash, name, bundle) VALUES(?1, ?2, ?3)")     \
    X(TASK_HAS, "SELECT 1 FROM tasks WHERE hash = ?1")                                    \
    X(TASK_GET, "SELECT bundle FROM tasks WHERE hash = ?1")                               \
    X(JOB_ADD, "INSERT OR IGNORE INTO jobs(batch_id, t_submitted, rowid, job_id, task_hash,"  \
               " language, spec, group_id, state, attempt) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7,"   \
               " ?8, 0, 1)")                                                              \
    X(JOB_ROWID_HAS, "SELECT 1 FROM jobs WHERE rowid = ?1")                               \
    X(JOB_ROWID_MAX, "SELECT coalesce(max(rowid), 0) FROM jobs")                          \
    X(JOB_HAS, "SELECT 1 FROM jobs WHERE batch_id = ?1 AND job_id = ?2")               \
    X(JOB_GET, "SELECT CASE WHEN r.job IS NULL THEN j.state ELSE 2 END, j.attempt,"      \
               " coalesce(r.worker_id, j.worker_id), j.group_id, j.language, j.t_submitted," \
               " coalesce(r.t_assigned, j.t_assigned), coalesce(r.seq, 0), j.spec,"      \
               " j.task_hash FROM jobs j LEFT JOIN records r ON r.job = j.rowid"         \
               " WHERE j.batch_id = ?1 AND j.job_id = ?2")                                \
    X(JOB_FINISH, "INSERT INTO records(job, seq, status, flags, record, worker_id,"       \
                  " t_assigned, batch_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")        \
    X(JOB_RECORD, "SELECT r.record FROM jobs j JOIN records r ON r.job = j.rowid"         \
                  " WHERE j.batch_id = ?1 AND j.job_id = ?2")                             \
    X(JOB_SET_RECORD, "UPDATE records SET record = ?3 WHERE job ="                        \
                      " (SELECT rowid FROM jobs WHERE batch_id = ?1 AND job_id = ?2)")    \
    X(RECORDS, "SELECT record, seq FROM records WHERE batch_id = ?1 AND seq > ?2"         \
               " ORDER BY seq")                                                           \
    X(WORKER_KEY_ADD, "INSERT OR IGNORE INTO worker_keys(worker_id, key, first_seen)"       \
                      " VALUES(?1, ?2, ?3)")                                              \
    X(WORKER_KEY_GET, "SELECT key FROM worker_keys WHERE worker_id = ?1")                 \
    X(BY_STATUS, "SELECT status, count(*) FROM records WHERE batch_id = ?1"               \
                 " GROUP BY status")                                                      \
    X(FLAGS, "SELECT flags FROM records INDEXED BY records_flagged"                      \
             " WHERE batch_id = ?1 AND flags <> ''")                                      \
    X(GROUP_STATE, "SELECT count(*), count(r.seq), coalesce(max(r.seq), 0) FROM jobs j"   \
                   " LEFT JOIN records r ON r.job = j.rowid"                              \
                   " WHERE j.batch_id = ?1 AND j.group_id = ?2 AND j.group_id > ''")      \
    X(GROUP_RECORDS, "SELECT r.record FROM jobs j JOIN records r ON r.job = j.rowid"      \
                     " WHERE j.batch_id = ?1 AND j.group_id = ?2 AND j.group_id > ''"     \
                     " ORDER BY r.seq")                                                   \
    X(GROUPS_DONE, "SELECT j.group_id, max(r.seq) FROM jobs j"                            \
                   " LEFT JOIN records r ON r.job = j.rowid WHERE j.batch_id = ?1"        \
                   " AND j.group_id > '' GROUP BY j.group_id"                             \
                   " HAVING count(*) = count(r.seq) ORDER BY 2")

enum {
#define CR__STORE_ENUM(name, sql) Q_##name,
    CR_STORE_SQL(CR__STORE_ENUM)
#undef CR__STORE_ENUM
    Q__COUNT
};

static const char *const s_sql[] = {
#define CR__STORE_TEXT(name, sql) sql,
    CR_STORE_SQL(CR__STORE_TEXT)
#undef CR__STORE_TEXT
};

/* ---- live state in memory (design notes, "Memory and log") ---- */

typedef struct s_batch s_batch_t;

/* A job that is not DONE. Strings marked interned live in s->interned until
 * the store closes (worker ids, task names and hashes: a farm has few). */
typedef struct s_job {
    struct s_job *hnext;          /* hash chain (s->jobs) */
    struct s_job *qprev, *qnext;  /* QUEUED: its language's queue; ASSIGNED: s->assigned */
    struct s_job *bprev, *bnext;  /* its batch's live jobs, in rowid order */
    s_batch_t *batch;             /* the batch; never freed before its jobs */
    uint64_t hash;                /* s_job_hash of (batch, job id) */
    int64_t rowid;                /* the jobs row */
    int64_t t_submitted;          /* ms since the epoch */
    int64_t t_assigned;           /* ms since the epoch of the last assignment; 0 = never */
    const char *worker;           /* ASSIGNED: holder (interned); NULL otherwise */
    const char *task;             /* JobSpec.task (interned) */
    const char *task_hash;        /* bundle key (interned); "" for none */
    char *group_id;               /* owned; NULL = none */
    uint8_t *spec;                /* owned copy of the packed JobSpec, or NULL: read from
                                     the row at assign (s_assign; CR_STORE_SPEC_CACHE) */
    size_t spec_len;              /* its bytes */
    uint32_t attempt;             /* as stored */
    uint32_t sample_index;        /* JobSpec.sample_index */
    uint32_t turn;                /* JobSpec.turn */
    uint8_t state;                /* CR_JOB_QUEUED or CR_JOB_ASSIGNED */
    uint8_t lang;                 /* index into s->langs */
    uint8_t dead;                 /* 1 once DONE (in the graveyard until the commit) */
    char job_id[];                /* the job id */
} s_job_t;

struct s_batch {
    s_batch_t *hnext;             /* hash chain (s->batches) */
    s_job_t *head, *tail;         /* live jobs, in rowid order */
    uint32_t total;               /* jobs in the batch */
    uint32_t done;                /* jobs with a record */
    uint64_t last_seq;            /* highest seq given */
    uint32_t queued;              /* jobs QUEUED (for the per-owner queue limit) */
    int64_t created_ms;           /* ms since the epoch */
    double queue_timeout_s;       /* JobOptions.queue_timeout_s; 0 = none */
    int dirty;                    /* 1: counters differ from the batches row (s_flush) */
    int counted;                  /* 1: by_status holds its records' statuses */
    uint32_t by_status[CR_STORE_NSTATUS]; /* records by status, when counted */
    char *owner;                  /* owned */
    char id[];                    /* batch id */
};

/* One language's queue: QUEUED jobs in rowid (= submission) order. */
typedef struct {
    char name[CR_STORE_LANG_MAX + 1]; /* language */
    s_job_t *head, *tail;             /* first and last job */
    size_t n;                         /* jobs in it */
} s_lang_t;

/* What a job was before a change, for cr_store_rollback. */
typedef struct {
    int op;                   /* S_UNDO_* */
    s_job_t *job;             /* the job changed (S_UNDO_JOB, S_UNDO_NEW) */
    s_batch_t *batch;         /* the batch changed (S_UNDO_BATCH, S_UNDO_BATCH_NEW) */
    uint8_t state;            /* job fields as they were */
    uint32_t attempt;
    int64_t t_assigned;
    const char *worker;
    uint32_t total, done, queued; /* batch counters as they were */
    uint64_t last_seq;
} s_undo_t;

enum { S_UNDO_JOB, S_UNDO_NEW, S_UNDO_BATCH, S_UNDO_BATCH_NEW };

/* A record written at the next flush (s_flush_records), with its row's
 * other new fields. */
typedef struct {
    int64_t rowid;            /* the job's row */
    uint64_t seq;             /* its seq */
    int status;               /* record status */
    char *flags;              /* owned: hack flags joined by commas */
    uint8_t *blob;            /* owned packed record */
    size_t len;               /* bytes */
    const char *worker;       /* who ran it (interned); "" */
    int64_t t_assigned;       /* ms since the epoch */
    const char *batch;        /* its batch's id (the batch outlives its pending records) */
} s_pending_t;

/* Rows per multi-row INSERT (records, and a Submit's jobs): 64 x 8
 * parameters stays far under SQLite's 32766-parameter limit, and one
 * statement a turn covers a busy turn's results in a few steps. */
#define S_MULTI_ROWS 64
/* Parameters of one record's row in JOB_FINISH and finish_many. */
#define S_PENDING_COLS 8
/* Parameters of one job's row in JOB_ADD and add_many past the two every
 * row shares (batch_id ?1, t_submitted ?2): rowid, job_id, task_hash,
 * language, spec, group_id. */
#define S_JOB_COLS 6

typedef struct s_intern {
    struct s_intern *next;    /* chain */
    char s[];                 /* the string */
} s_intern_t;

#define S_INTERN_BUCKETS 1024 /* worker ids, task names and hashes: a farm's few thousand */
#define S_BATCH_BUCKETS 1024  /* batches open at once: a few; history grows slowly */
#define S_MAX_DEPTH 64        /* savepoints nested: the coordinator uses three */
/* Buckets of the retired table moved per job added: it is empty after
 * capold / 16 additions, long before the new table (2 x capold) fills. */
#define S_REHASH_STEP 16

struct cr_store {
    sqlite3 *db;                 /* owned connection */
    sqlite3_stmt *q[Q__COUNT];   /* owned prepared statements, by Q_* */
    sqlite3_stmt *finish_many;   /* owned: S_MULTI_ROWS records in one INSERT */
    sqlite3_stmt *add_many;      /* owned: S_MULTI_ROWS jobs in one INSERT (s_add_rows) */
    s_pending_t *pend;           /* owned: records made, not yet written */
    size_t npend, cappend;
    char *path;                  /* owned copy of the file name, for logs */
    /* --- live state (memory; the database is the log it recovers from) --- */
    s_job_t **jobs;              /* owned hash of live jobs by (batch, job id) */
    size_t njobs;                /* live jobs */
    size_t capjobs;              /* buckets, a power of two */
    s_job_t *hot;                /* the job s_job_find found last (one of the hash), or NULL:
                                    a result's check and its completion look the same job up */
    s_job_t **old;               /* owned: the table being retired while it grows, or NULL */
    size_t capold;               /* its buckets */
    size_t old_pos;              /* its next bucket to move */
    s_batch_t *batches[S_BATCH_BUCKETS]; /* owned hash of every batch */
    s_lang_t *langs;             /* owned queues, one per language */
    size_t nlangs;               /* used */
    s_job_t *assigned_head;      /* ASSIGNED jobs, in assignment order */
    s_job_t *assigned_tail;
    size_t nassigned;            /* jobs in it */
    s_intern_t *interned[S_INTERN_BUCKETS]; /* owned strings */
    /* --- transactions --- */
    int depth;                   /* savepoints open */
    size_t marks[S_MAX_DEPTH];   /* undo length at each savepoint's begin */
    s_undo_t *undo;              /* owned log of changes since the outermost begin */
    size_t nundo, capundo;
    s_job_t **grave;             /* owned: jobs made DONE in the open transaction */
    size_t ngrave, capgrave;
    int any_dirty;               /* 1: some batch is dirty */
    size_t spec_bytes;           /* bytes of the specs kept in live jobs (s_job_t.spec) */
    size_t last_pend;            /* pend index + 1 of the last record made; 0 = none
                                    (cr_store_last_record) */
    /* --- checkpoints (s_wal_hook; cr_store_checkpoint_apart) --- */
    sqlite3 *ckpt_db;            /* owned: the checkpoint thread's own connection; NULL =
                                    checkpoints run inside the commit */
    pthread_t ckpt_thread;       /* runs s_ckpt_main while ckpt_db is set */
    pthread_mutex_t ckpt_mu;     /* guards the two flags below */
    pthread_cond_t ckpt_cv;      /* signalled when one of them is set */
    int ckpt_frames;             /* frames of CR_STORE_CKPT_BYTES at this database's page */
    int ckpt_due;                /* 1: a commit left the log past ckpt_frames */
    int ckpt_stop;               /* 1: the thread ends (cr_store_close) */
};

/* ---- helpers ---- */

static int s_fail(cr_store_t *s, const char *what)
{
    cr_error("store %s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
    return CR_E_STORE;
}

/* Returns the statement reset and unbound, ready for binding. */
static sqlite3_stmt *s_q(cr_store_t *s, int which)
{
    sqlite3_stmt *st = s->q[which];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

static void s_text(sqlite3_stmt *st, int i, const char *v)
{
    sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_STATIC);
}

static void s_blob(sqlite3_stmt *st, int i, const void *v, size_t len)
{
    sqlite3_bind_blob64(st, i, v ? v : "", (sqlite3_uint64)len, SQLITE_STATIC);
}

/* Steps a statement that returns no row. */
static int s_run(cr_store_t *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : s_fail(s, what);
}

static void s_copy(char *dst, size_t cap, const unsigned char *src)
{
    snprintf(dst, cap, "%s", src ? (const char *)src : "");
}

/* Heap copy of a blob column (NULL and 0 for an empty one). */
static int s_dup_blob(sqlite3_stmt *st, int col, uint8_t **out, size_t *len)
{
    const void *b = sqlite3_column_blob(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    *out = malloc(n ? n : 1);
    if (!*out)
        return -ENOMEM;
    if (n)
        memcpy(*out, b, n);
    *len = n;
    return 0;
}

/* Replaces a string field of an unpacked message (protobuf-c frees every
 * string that is not its shared empty string). */
static int s_set_str(char **field, const char *v)
{
    return cr_wire_set_str(field, v ? v : ""); /* a worker's record lies in the arena */
}

/* ---- open / close / recover ---- */

/* Makes path (created, when create, empty) mode 0600: the database holds
 * every candidate's source and every verdict, and no other local user may
 * read or change it. 0, or CR_E_STORE (logged). */
static int s_private(const char *path, int create)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
    if (fd < 0 && !create && errno == ENOENT)
        return 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || ((st.st_mode & 077) && fchmod(fd, 0600) != 0)) {
        cr_error("store %s: cannot make it private (0600): %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return CR_E_STORE;
    }
    close(fd);
    return 0;
}

int cr_store_set_durability(cr_store_t *s, const char *level)
{
    const char *sql = strcmp(level, "full") == 0     ? "PRAGMA synchronous=FULL"
                      : strcmp(level, "normal") == 0 ? "PRAGMA synchronous=NORMAL"
                      : strcmp(level, "off") == 0    ? "PRAGMA synchronous=OFF"
                                                     : NULL;
    if (!sql)
        return CR_E_USAGE;
    return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : s_fail(s, sql);
}


/* ---- memory: interned strings, hashes, lists ---- */

static uint64_t s_fnv(const char *k, uint64_t h)
{
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ull; /* FNV-1a 64-bit prime */
    return h;
}
#define S_FNV_BASIS 14695981039346656037ull /* FNV-1a 64-bit offset basis */

/* The store's copy of str (kept until the store closes), or NULL on ENOMEM. */
static const char *s_intern(cr_store_t *s, const char *str)
{
    if (!str)
        str = "";
    size_t b = s_fnv(str, S_FNV_BASIS) % S_INTERN_BUCKETS;
    for (s_intern_t *e = s->interned[b]; e; e = e->next)
        if (strcmp(e->s, str) == 0)
            return e->s;
    size_t len = strlen(str);
    s_intern_t *e = malloc(sizeof *e + len + 1);
    if (!e)
        return NULL;
    memcpy(e->s, str, len + 1);
    e->next = s->interned[b];
    s->interned[b] = e;
    return e->s;
}

static s_batch_t *s_batch_find(cr_store_t *s, const char *id)
{
    for (s_batch_t *b = s->batches[s_fnv(id, S_FNV_BASIS) % S_BATCH_BUCKETS]; b; b = b->hnext)
        if (strcmp(b->id, id) == 0)
            return b;
    return NULL;
}

static uint64_t s_job_hash(const s_batch_t *b, const char *job_id)
{
    return s_fnv(job_id, s_fnv(b->id, S_FNV_BASIS));
}

/* Moves up to `buckets` buckets of the table being retired into the new
 * one (incremental rehash, as Redis's dict does): growing the table costs a
 * few buckets per added job, never one pass over a million. */
static void s_rehash_step(cr_store_t *s, size_t buckets)
{
    while (s->old && buckets--) {
        for (s_job_t *j = s->old[s->old_pos], *next; j; j = next) {
            next = j->hnext;
            size_t k = (size_t)(j->hash & (s->capjobs - 1));
            j->hnext = s->jobs[k];
            s->jobs[k] = j;
        }
        s->old[s->old_pos++] = NULL;
        if (s->old_pos == s->capold) {
            free(s->old);
            s->old = NULL;
            s->capold = s->old_pos = 0;
        }
    }
}

static s_job_t *s_job_find(cr_store_t *s, const char *batch_id, const char *job_id)
{
    s_job_t *hot = s->hot;
    if (hot && batch_id && job_id && strcmp(hot->job_id, job_id) == 0 &&
        strcmp(hot->batch->id, batch_id) == 0)
        return hot;
    s_batch_t *b = batch_id ? s_batch_find(s, batch_id) : NULL;
    if (!b || !job_id || !s->capjobs)
        return NULL;
    uint64_t h = s_job_hash(b, job_id);
    for (s_job_t *j = s->jobs[h & (s->capjobs - 1)]; j; j = j->hnext)
        if (j->hash == h && j->batch == b && strcmp(j->job_id, job_id) == 0)
            return s->hot = j;
    for (s_job_t *j = s->old ? s->old[h & (s->capold - 1)] : NULL; j; j = j->hnext)
        if (j->hash == h && j->batch == b && strcmp(j->job_id, job_id) == 0)
            return s->hot = j;
    return NULL;
}

/* Doubles the job hash when it is full; the old table's entries move over
 * in steps (s_rehash_step). 0 or -ENOMEM (the tables stay as they were). */
static int s_jobs_grow(cr_store_t *s)
{
    if (s->njobs < s->capjobs)
        return 0;
    size_t cap = s->capjobs ? 2 * s->capjobs : 4096;
    s_job_t **h = calloc(cap, sizeof *h);
    if (!h)
        return -ENOMEM;
    s_rehash_step(s, SIZE_MAX); /* a previous growth not done yet: never, in practice */
    s->old = s->jobs;
    s->capold = s->capjobs;
    s->old_pos = 0;
    s->jobs = h;
    s->capjobs = cap;
    return 0;
}

static void s_hash_del(cr_store_t *s, s_job_t *j)
{
    if (s->hot == j)
        s->hot = NULL;
    s_job_t **heads[2] = {&s->jobs[j->hash & (s->capjobs - 1)],
                          s->old ? &s->old[j->hash & (s->capold - 1)] : NULL};
    for (int t = 0; t < 2; t++)
        for (s_job_t **pp = heads[t]; pp && *pp; pp = &(*pp)->hnext)
            if (*pp == j) {
                *pp = j->hnext;
                s->njobs--;
                return;
            }
}

static void s_hash_add(cr_store_t *s, s_job_t *j)
{
    s_rehash_step(s, S_REHASH_STEP);
    size_t k = (size_t)(j->hash & (s->capjobs - 1));
    j->hnext = s->jobs[k];
    s->jobs[k] = j;
    s->njobs++;
}

/* The queue of language (made when new); -1 on ENOMEM or more than 255. */
static int s_lang(cr_store_t *s, const char *language)
{
    for (size_t i = 0; i < s->nlangs; i++)
        if (strcmp(s->langs[i].name, language) == 0)
            return (int)i;
    if (s->nlangs >= 255)
        return -1;
    void *g = realloc(s->langs, (s->nlangs + 1) * sizeof *s->langs);
    if (!g)
        return -1;
    s->langs = g;
    s_lang_t *l = &s->langs[s->nlangs];
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", language);
    return (int)s->nlangs++;
}

/* Into its language's queue at its rowid's place: at the tail for a new
 * job, near the head for a requeued one (older than most of the queue). */
static void s_queue_link(cr_store_t *s, s_job_t *j)
{
    s_lang_t *l = &s->langs[j->lang];
    s_job_t *after = l->tail;
    while (after && after->rowid > j->rowid)
        after = after->qprev;
    j->qprev = after;
    j->qnext = after ? after->qnext : l->head;
    if (j->qnext)
        j->qnext->qprev = j;
    else
        l->tail = j;
    if (after)
        after->qnext = j;
    else
        l->head = j;
    l->n++;
    j->batch->queued++;
}

static void s_queue_unlink(cr_store_t *s, s_job_t *j)
{
    s_lang_t *l = &s->langs[j->lang];
    if (j->qprev)
        j->qprev->qnext = j->qnext;
    else
        l->head = j->qnext;
    if (j->qnext)
        j->qnext->qprev = j->qprev;
    else
        l->tail = j->qprev;
    j->qprev = j->qnext = NULL;
    l->n--;
    j->batch->queued--;
}

static void s_assigned_link(cr_store_t *s, s_job_t *j)
{
    j->qnext = NULL;
    j->qprev = s->assigned_tail;
    if (s->assigned_tail)
        s->assigned_tail->qnext = j;
    else
        s->assigned_head = j;
    s->assigned_tail = j;
    s->nassigned++;
}

static void s_assigned_unlink(cr_store_t *s, s_job_t *j)
{
    if (j->qprev)
        j->qprev->qnext = j->qnext;
    else
        s->assigned_head = j->qnext;
    if (j->qnext)
        j->qnext->qprev = j->qprev;
    else
        s->assigned_tail = j->qprev;
    j->qprev = j->qnext = NULL;
    s->nassigned--;
}

/* Links j (state set) where its state puts it. */
static void s_state_link(cr_store_t *s, s_job_t *j)
{
    if (j->state == CR_JOB_QUEUED)
        s_queue_link(s, j);
    else
        s_assigned_link(s, j);
}

static void s_state_unlink(cr_store_t *s, s_job_t *j)
{
    if (j->state == CR_JOB_QUEUED)
        s_queue_unlink(s, j);
    else
        s_assigned_unlink(s, j);
}

static void s_batch_link(s_job_t *j)
{
    s_batch_t *b = j->batch;
    j->bnext = NULL;
    j->bprev = b->tail;
    if (b->tail)
        b->tail->bnext = j;
    else
        b->head = j;
    b->tail = j;
}

/* Into its batch's list at its rowid's place (a job brought back by a
 * rollback: the list stays in submission order, which expiry relies on). */
static void s_batch_link_sorted(s_job_t *j)
{
    s_batch_t *b = j->batch;
    s_job_t *after = b->tail;
    while (after && after->rowid > j->rowid)
        after = after->bprev;
    j->bprev = after;
    j->bnext = after ? after->bnext : b->head;
    if (j->bnext)
        j->bnext->bprev = j;
    else
        b->tail = j;
    if (after)
        after->bnext = j;
    else
        b->head = j;
}

static void s_batch_unlink(s_job_t *j)
{
    s_batch_t *b = j->batch;
    if (j->bprev)
        j->bprev->bnext = j->bnext;
    else
        b->head = j->bnext;
    if (j->bnext)
        j->bnext->bprev = j->bprev;
    else
        b->tail = j->bprev;
    j->bprev = j->bnext = NULL;
}

static void s_job_free(s_job_t *j)
{
    if (!j)
        return;
    free(j->group_id);
    free(j->spec);
    free(j);
}

/* s_job_free, keeping the count of cached spec bytes. */
static void s_job_release(cr_store_t *s, s_job_t *j)
{
    if (s->hot == j)
        s->hot = NULL;
    if (j && j->spec)
        s->spec_bytes -= j->spec_len;
    s_job_free(j);
}

/* ---- memory: the undo log (cr_store_rollback) ---- */

/* Remembers what j or b was before the change about to be made; outside a
 * transaction there is nothing to roll back to. 0 or -ENOMEM. */
static int s_undo_push(cr_store_t *s, int op, s_job_t *j, s_batch_t *b)
{
    if (s->depth == 0)
        return 0;
    if (s->nundo == s->capundo) {
        size_t cap = s->capundo ? 2 * s->capundo : 1024;
        void *g = realloc(s->undo, cap * sizeof *s->undo);
        if (!g)
            return -ENOMEM;
        s->undo = g;
        s->capundo = cap;
    }
    s_undo_t *u = &s->undo[s->nundo++];
    memset(u, 0, sizeof *u);
    u->op = op;
    u->job = j;
    u->batch = b;
    if (j) {
        u->state = j->state;
        u->attempt = j->attempt;
        u->t_assigned = j->t_assigned;
        u->worker = j->worker;
    }
    if (b) {
        u->total = b->total;
        u->done = b->done;
        u->queued = b->queued;
        u->last_seq = b->last_seq;
    }
    return 0;
}

/* Room for k more undo entries and one more graveyard slot, so that the
 * changes after a row is written cannot fail. 0 or -ENOMEM. */
static int s_reserve(cr_store_t *s, size_t k)
{
    if (s->depth == 0)
        return 0;
    if (s->nundo + k > s->capundo) {
        size_t cap = s->capundo ? 2 * s->capundo : 1024;
        while (cap < s->nundo + k)
            cap *= 2;
        void *g = realloc(s->undo, cap * sizeof *s->undo);
        if (!g)
            return -ENOMEM;
        s->undo = g;
        s->capundo = cap;
    }
    if (s->ngrave == s->capgrave) {
        size_t cap = s->capgrave ? 2 * s->capgrave : 1024;
        void *g = realloc(s->grave, cap * sizeof *s->grave);
        if (!g)
            return -ENOMEM;
        s->grave = g;
        s->capgrave = cap;
    }
    return 0;
}

static void s_batch_free(s_batch_t *b)
{
    if (!b)
        return;
    free(b->owner);
    free(b);
}

static void s_batch_unhash(cr_store_t *s, s_batch_t *b)
{
    for (s_batch_t **pp = &s->batches[s_fnv(b->id, S_FNV_BASIS) % S_BATCH_BUCKETS]; *pp;
         pp = &(*pp)->hnext)
        if (*pp == b) {
            *pp = b->hnext;
            return;
        }
}

/* Undoes the log back to length mark, newest first. */
static void s_undo_to(cr_store_t *s, size_t mark)
{
    while (s->nundo > mark) {
        s_undo_t *u = &s->undo[--s->nundo];
        s_job_t *j = u->job;
        switch (u->op) {
        case S_UNDO_NEW: /* the job was added: it goes */
            s_state_unlink(s, j);
            s_batch_unlink(j);
            s_hash_del(s, j);
            s_job_release(s, j);
            break;
        case S_UNDO_JOB:
            if (j->dead) { /* it went DONE: back to life */
                j->dead = 0;
                s_hash_add(s, j);
                s_batch_link_sorted(j);
                for (size_t i = 0; i < s->ngrave; i++)
                    if (s->grave[i] == j)
                        s->grave[i] = NULL;
            } else {
                s_state_unlink(s, j);
            }
            j->state = u->state;
            j->attempt = u->attempt;
            j->t_assigned = u->t_assigned;
            j->worker = u->worker;
            s_state_link(s, j);
            break;
        case S_UNDO_BATCH:
            u->batch->total = u->total;
            u->batch->done = u->done;
            u->batch->queued = u->queued;
            u->batch->last_seq = u->last_seq;
            break;
        case S_UNDO_BATCH_NEW:
            s_batch_unhash(s, u->batch);
            s_batch_free(u->batch);
            break;
        }
    }
}

/* Writes the counters of dirty batches to their rows (one UPDATE a batch).
 * Called before anything reads batches or records through SQL and at the
 * outermost commit, so the log always agrees with memory once committed. */
static void s_pending_bind(sqlite3_stmt *st, int base, const s_pending_t *p)
{
    sqlite3_bind_int64(st, base + 1, p->rowid);
    sqlite3_bind_int64(st, base + 2, (sqlite3_int64)p->seq);
    sqlite3_bind_int(st, base + 3, p->status);
    sqlite3_bind_text(st, base + 4, p->flags ? p->flags : "", -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, base + 5, p->blob ? (const void *)p->blob : "",
                        (sqlite3_uint64)p->len, SQLITE_STATIC);
    sqlite3_bind_text(st, base + 6, p->worker ? p->worker : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, base + 7, p->t_assigned);
    sqlite3_bind_text(st, base + 8, p->batch, -1, SQLITE_STATIC);
}

static void s_pending_drop(cr_store_t *s, size_t keep)
{
    s->last_pend = 0;
    while (s->npend > keep) {
        s_pending_t *p = &s->pend[--s->npend];
        free(p->flags);
        free(p->blob);
    }
}

static int s_cmp_pending(const void *a, const void *b)
{
    int64_t x = ((const s_pending_t *)a)->rowid, y = ((const s_pending_t *)b)->rowid;
    return x < y ? -1 : x > y;
}

/* Writes the records made since the last flush: S_MULTI_ROWS to a
 * statement, the rest one by one, all prepared once; in rowid order, so
 * that neighbouring rows are written while their pages are at hand. */
static int s_flush_records(cr_store_t *s)
{
    qsort(s->pend, s->npend, sizeof *s->pend, s_cmp_pending);
    size_t i = 0;
    for (; i + S_MULTI_ROWS <= s->npend; i += S_MULTI_ROWS) {
        sqlite3_stmt *st = s->finish_many;
        sqlite3_reset(st);
        for (int k = 0; k < S_MULTI_ROWS; k++)
            s_pending_bind(st, S_PENDING_COLS * k, &s->pend[i + (size_t)k]);
        if (s_run(s, st, "finish jobs") != 0)
            return CR_E_STORE;
    }
    for (; i < s->npend; i++) {
        sqlite3_stmt *st = s_q(s, Q_JOB_FINISH);
        s_pending_bind(st, 0, &s->pend[i]);
        if (s_run(s, st, "finish job") != 0)
            return CR_E_STORE;
    }
    s_pending_drop(s, 0);
    return 0;
}

static int s_flush(cr_store_t *s)
{
    if (s->npend && s_flush_records(s) != 0)
        return CR_E_STORE;
    if (!s->any_dirty)
        return 0;
    for (size_t i = 0; i < S_BATCH_BUCKETS; i++)
        for (s_batch_t *b = s->batches[i]; b; b = b->hnext) {
            if (!b->dirty)
                continue;
            sqlite3_stmt *st = s_q(s, Q_BATCH_SET);
            s_text(st, 1, b->id);
            sqlite3_bind_int64(st, 2, b->total);
            sqlite3_bind_int64(st, 3, b->done);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)b->last_seq);
            if (s_run(s, st, "batch counters") != 0)
                return CR_E_STORE;
            b->dirty = 0;
        }
    s->any_dirty = 0;
    return 0;
}

static void s_dirty(cr_store_t *s, s_batch_t *b)
{
    b->dirty = 1;
    s->any_dirty = 1;
}

/* The transaction is over (committed, or none was open): what it made
 * DONE is freed and its undo log forgotten. */
static void s_settle(cr_store_t *s)
{
    if (s->depth > 0)
        return;
    for (size_t i = 0; i < s->ngrave; i++)
        s_job_release(s, s->grave[i]);
    s->ngrave = 0;
    s->nundo = 0;
}

int cr_store_begin(cr_store_t *s)
{
    if (s->depth >= S_MAX_DEPTH)
        return CR_E_STATE;
    /* records made before this savepoint are written before it opens: a
     * rollback to it then drops exactly the records made inside it */
    if (s->npend && s_flush_records(s) != 0)
        return CR_E_STORE;
    int rc = s_run(s, s_q(s, Q_BEGIN), "begin");
    if (rc == 0)
        s->marks[s->depth++] = s->nundo;
    return rc;
}

int cr_store_commit(cr_store_t *s)
{
    if (s->depth == 0)
        return CR_E_STATE;
    /* the outermost commit writes the counters inside its transaction */
    if (s->depth == 1 && s_flush(s) != 0)
        return CR_E_STORE;
    int rc = s_run(s, s_q(s, Q_RELEASE), "commit");
    if (rc != 0)
        return rc; /* still open: the caller rolls back */
    s->depth--;
    s_settle(s);
    return 0;
}

void cr_store_rollback(cr_store_t *s)
{
    if (s->depth == 0)
        return;
    /* ROLLBACK TO keeps the savepoint open; RELEASE then pops it. */
    s_run(s, s_q(s, Q_ROLLBACK), "rollback");
    s_run(s, s_q(s, Q_RELEASE), "rollback release");
    s_pending_drop(s, 0); /* all made since the begin (which flushed) */
    s_undo_to(s, s->marks[--s->depth]);
    /* the rows went back to what they held at the begin, which may be
     * older than memory's counters then: write them all again */
    for (size_t i = 0; i < S_BATCH_BUCKETS; i++)
        for (s_batch_t *b = s->batches[i]; b; b = b->hnext) {
            s_dirty(s, b);
            b->counted = 0; /* counted again from the rows when next asked */
        }
    s_settle(s);
    if (s->depth == 0)
        s_flush(s);
}

/* Finishes a transaction begun with cr_store_begin: commit when rc is 0. */
static int s_end(cr_store_t *s, int rc)
{
    if (rc == 0) {
        rc = cr_store_commit(s);
        if (rc == 0)
            return 0;
    }
    cr_store_rollback(s);
    return rc;
}

/* ---- memory: loading from the log ---- */

/* A batch in memory from its row's fields. NULL on ENOMEM. */
static s_batch_t *s_batch_new(cr_store_t *s, const char *id, const char *owner,
                              const uint8_t *options, size_t options_len, int64_t created)
{
    size_t len = strlen(id);
    s_batch_t *b = calloc(1, sizeof *b + len + 1);
    if (!b || !(b->owner = strdup(owner ? owner : ""))) {
        free(b);
        return NULL;
    }
    memcpy(b->id, id, len + 1);
    b->created_ms = created;
    Crucible__JobOptions *o = crucible__job_options__unpack(NULL, options_len, options);
    if (o && isfinite(o->queue_timeout_s) && o->queue_timeout_s > 0)
        b->queue_timeout_s = o->queue_timeout_s;
    if (o)
        crucible__job_options__free_unpacked(o, NULL);
    size_t k = s_fnv(id, S_FNV_BASIS) % S_BATCH_BUCKETS;
    b->hnext = s->batches[k];
    s->batches[k] = b;
    return b;
}

/* A live job in memory, QUEUED (linked into its queue and batch). */
static s_job_t *s_job_new(cr_store_t *s, s_batch_t *b, int64_t rowid, const char *job_id,
                          const char *language, const char *task_hash, const char *task,
                          const char *group_id, uint32_t sample_index, uint32_t turn,
                          uint32_t attempt, int64_t t_submitted, int64_t t_assigned)
{
    size_t len = strlen(job_id);
    int lang = s_lang(s, language ? language : "");
    if (lang < 0 || s_jobs_grow(s) != 0)
        return NULL;
    s_job_t *j = calloc(1, sizeof *j + len + 1);
    if (!j)
        return NULL;
    memcpy(j->job_id, job_id, len + 1);
    j->batch = b;
    j->hash = s_job_hash(b, job_id);
    j->rowid = rowid;
    j->lang = (uint8_t)lang;
    j->task_hash = s_intern(s, task_hash);
    j->task = s_intern(s, task);
    if (group_id && group_id[0] && !(j->group_id = strdup(group_id))) {
        free(j);
        return NULL;
    }
    if (!j->task_hash || !j->task) {
        s_job_release(s, j);
        return NULL;
    }
    j->sample_index = sample_index;
    j->turn = turn;
    j->attempt = attempt;
    j->t_submitted = t_submitted;
    j->t_assigned = t_assigned;
    j->state = CR_JOB_QUEUED;
    s_hash_add(s, j);
    s_batch_link(j);
    s_queue_link(s, j);
    return j;
}

/* Reads every batch and every job that is not DONE into memory (after
 * ASSIGNED rows of an older version were made QUEUED). */
static int s_load(cr_store_t *s)
{
    int step;
    sqlite3_stmt *st = s_q(s, Q_LOAD_BATCHES);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        s_batch_t *b = s_batch_new(s, (const char *)sqlite3_column_text(st, 0),
                                   (const char *)sqlite3_column_text(st, 1),
                                   sqlite3_column_blob(st, 2),
                                   (size_t)sqlite3_column_bytes(st, 2),
                                   sqlite3_column_int64(st, 3));
        if (!b) {
            sqlite3_reset(st);
            return -ENOMEM;
        }
        b->total = (uint32_t)sqlite3_column_int64(st, 4);
        b->done = (uint32_t)sqlite3_column_int64(st, 5);
        b->last_seq = (uint64_t)sqlite3_column_int64(st, 6);
    }
    sqlite3_reset(st);
    if (step != SQLITE_DONE)
        return s_fail(s, "load batches");
    st = s_q(s, Q_LOAD_JOBS);
    int rc = 0;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        s_batch_t *b = s_batch_find(s, (const char *)sqlite3_column_text(st, 1));
        if (!b)
            continue; /* invariant (6) broken: cr_store_check names it */
        Crucible__JobSpec *js = crucible__job_spec__unpack(
            NULL, (size_t)sqlite3_column_bytes(st, 5), sqlite3_column_blob(st, 5));
        if (!s_job_new(s, b, sqlite3_column_int64(st, 0),
                       (const char *)sqlite3_column_text(st, 2),
                       (const char *)sqlite3_column_text(st, 3),
                       (const char *)sqlite3_column_text(st, 4), js ? js->task : "",
                       (const char *)sqlite3_column_text(st, 6), js ? js->sample_index : 0,
                       js ? js->turn : 0, (uint32_t)sqlite3_column_int64(st, 7),
                       sqlite3_column_int64(st, 8), sqlite3_column_int64(st, 9)))
            rc = -ENOMEM;
        if (js)
            crucible__job_spec__free_unpacked(js, NULL);
    }
    sqlite3_reset(st);
    if (rc == 0 && step != SQLITE_DONE && step != SQLITE_ROW)
        rc = s_fail(s, "load jobs");
    return rc;
}

static void s_unload(cr_store_t *s)
{
    s_rehash_step(s, SIZE_MAX);
    for (size_t i = 0; i < s->capjobs; i++)
        while (s->jobs[i]) {
            s_job_t *j = s->jobs[i];
            s->jobs[i] = j->hnext;
            s_job_release(s, j);
        }
    free(s->jobs);
    s->jobs = NULL;
    s->capjobs = s->njobs = 0;
    for (size_t i = 0; i < S_BATCH_BUCKETS; i++)
        while (s->batches[i]) {
            s_batch_t *b = s->batches[i];
            s->batches[i] = b->hnext;
            s_batch_free(b);
        }
    for (size_t i = 0; i < S_INTERN_BUCKETS; i++)
        while (s->interned[i]) {
            s_intern_t *e = s->interned[i];
            s->interned[i] = e->next;
            free(e);
        }
    free(s->langs);
    s->langs = NULL;
    s->nlangs = 0;
    for (size_t i = 0; i < s->ngrave; i++)
        s_job_release(s, s->grave[i]);
    free(s->grave);
    free(s->undo);
    s->grave = NULL;
    s->undo = NULL;
}

/* ---- open / close / recover ---- */

/* A database of an older version kept each record in its job's row
 * (state 2, seq, record): those move to the records table once, in one
 * transaction, and user_version says it was done. 0, or CR_E_STORE. */
static int s_migrate(cr_store_t *s)
{
    _Static_assert(S_SCHEMA_VERSION == 1, "s_migrate writes user_version 1");
    sqlite3_stmt *st = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (version < 0)
        return s_fail(s, "user_version");
    if (version >= S_SCHEMA_VERSION)
        return 0;
    char *msg = NULL;
    if (sqlite3_exec(s->db,
                     "BEGIN;"
                     "INSERT OR IGNORE INTO records(job, batch_id, seq, status, flags, worker_id,"
                     " t_assigned, record) SELECT rowid, batch_id, seq, status, flags, worker_id,"
                     " t_assigned, record FROM jobs WHERE state = 2 AND record IS NOT NULL;"
                     "DROP INDEX IF EXISTS jobs_seq_set;"
                     "PRAGMA user_version = 1;"
                     "COMMIT;",
                     NULL, NULL, &msg) != SQLITE_OK) {
        cr_error("store %s: moving records to their table: %s", s->path, msg ? msg : "?");
        sqlite3_free(msg);
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return CR_E_STORE;
    }
    return 0;
}

/* Prepares head followed by row S_MULTI_ROWS times, comma separated: a
 * multi-row INSERT. 0, or CR_E_STORE (logged). */
static int s_prepare_many(cr_store_t *s, const char *head, const char *row, sqlite3_stmt **st)
{
    char sql[S_MULTI_ROWS * 32 + 512];
    size_t off = (size_t)snprintf(sql, sizeof sql, "%s", head);
    for (int k = 0; k < S_MULTI_ROWS && off < sizeof sql; k++)
        off += (size_t)snprintf(sql + off, sizeof sql - off, "%s%s", k ? "," : "", row);
    if (off >= sizeof sql ||
        sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return s_fail(s, head);
    return 0;
}

/* SQLite's memory statistics take a global mutex around every one of its
 * allocations, several per statement; nothing here reads them. Process-wide
 * and before SQLite initializes, so once, before the first store opens (a
 * no-op, SQLITE_MISUSE, ignored, if something initialized it first); only
 * the store uses SQLite. */
static pthread_once_t s_sqlite_once = PTHREAD_ONCE_INIT;
static void s_sqlite_config(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static int s_wal_hook(void *arg, sqlite3 *db, const char *name, int frames);

int cr_store_open(const char *path, cr_store_t **out)
{
    *out = NULL;
    cr_store_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->ckpt_frames = (int)(CR_STORE_CKPT_BYTES / 4096); /* until the page is read, below */
    s->path = strdup(path);
    if (!s->path)
        goto fail;
    if (s_private(path, 1) != 0)
        goto fail;
    pthread_once(&s_sqlite_once, s_sqlite_config);
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                      SQLITE_OPEN_NOMUTEX /* one thread uses it */, NULL) !=
        SQLITE_OK) {
        s_fail(s, "open");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, CR_STORE_BUSY_MS);
    sqlite3_wal_hook(s->db, s_wal_hook, s); /* in place of SQLite's autocheckpoint */
    char *msg = NULL;
    char pragmas[128];
    snprintf(pragmas, sizeof pragmas, "PRAGMA page_size=%d; PRAGMA journal_mode=WAL;"
             " PRAGMA synchronous=FULL;", CR_STORE_PAGE_BYTES);
    if (sqlite3_exec(s->db, pragmas, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(s->db, s_schema, NULL, NULL, &msg) != SQLITE_OK) {
        cr_error("store %s: schema: %s", path, msg ? msg : "?");
        sqlite3_free(msg);
        goto fail;
    }
    /* the database's page, fixed by now: the migration's commits check it */
    sqlite3_stmt *ps = NULL;
    int page = 0;
    if (sqlite3_prepare_v2(s->db, "PRAGMA page_size", -1, &ps, NULL) == SQLITE_OK &&
        sqlite3_step(ps) == SQLITE_ROW)
        page = sqlite3_column_int(ps, 0);
    sqlite3_finalize(ps);
    s->ckpt_frames = (int)(CR_STORE_CKPT_BYTES / (size_t)(page > 0 ? page : 4096));
    if (s_migrate(s) != 0)
        goto fail;
    for (int i = 0; i < Q__COUNT; i++) {
        if (sqlite3_prepare_v3(s->db, s_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->q[i], NULL) !=
            SQLITE_OK) {
            s_fail(s, s_sql[i]);
            goto fail;
        }
    }
    /* the turn's records; a Submit's jobs, ?1 and ?2 shared by the rows */
    if (s_prepare_many(s, "INSERT INTO records(job, seq, status, flags, record, worker_id,"
                          " t_assigned, batch_id) VALUES ",
                       "(?,?,?,?,?,?,?,?)", &s->finish_many) != 0 ||
        s_prepare_many(s, "INSERT OR IGNORE INTO jobs(batch_id, t_submitted, rowid, job_id,"
                          " task_hash, language, spec, group_id, state, attempt) VALUES ",
                       "(?1,?2,?,?,?,?,?,?,0,1)", &s->add_many) != 0)
        goto fail;
    /* SQLite makes -wal and -shm with the database's mode; ones left from
     * before this version may be wider */
    char side[4096];
    for (int i = 0; i < 2; i++)
        if (snprintf(side, sizeof side, "%s%s", path, i ? "-shm" : "-wal") < (int)sizeof side &&
            s_private(side, 0) != 0)
            goto fail;
    /* rows an older version left ASSIGNED go back to the queue first */
    if (s_run(s, s_q(s, Q_RECOVER), "recover") != 0)
        goto fail;
    if (s_load(s) != 0) {
        cr_error("store %s: cannot load the live jobs into memory", path);
        goto fail;
    }
    if (s->njobs)
        cr_info("store %s: %zu jobs not done, all queued (assignments do not survive a restart)",
                path, s->njobs);
    *out = s;
    return 0;
fail:
    cr_store_close(&s);
    return CR_E_STORE;
}

/* After every commit (SQLite's wal hook, which its autocheckpoint also
 * is): once the log is past s->ckpt_frames it is copied back into the
 * database, by the checkpoint thread when there is one (the commit goes on
 * at once), else here, as SQLite's autocheckpoint would. A checkpoint
 * changes nothing a commit made durable: the log is synced at the commit,
 * the database file at the checkpoint. */
static int s_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    cr_store_t *s = arg;
    if (frames < s->ckpt_frames)
        return SQLITE_OK;
    if (!s->ckpt_db) {
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        return SQLITE_OK;
    }
    pthread_mutex_lock(&s->ckpt_mu);
    s->ckpt_due = 1;
    pthread_cond_signal(&s->ckpt_cv);
    pthread_mutex_unlock(&s->ckpt_mu);
    return SQLITE_OK;
}

/* The checkpoint thread: a passive checkpoint (it copies what no reader
 * holds and never waits on the writer) each time a commit says one is due.
 * It touches nothing of the store but its own connection and the flags. */
static void *s_ckpt_main(void *arg)
{
    cr_store_t *s = arg;
    pthread_mutex_lock(&s->ckpt_mu);
    for (;;) {
        while (!s->ckpt_due && !s->ckpt_stop)
            pthread_cond_wait(&s->ckpt_cv, &s->ckpt_mu);
        if (s->ckpt_stop)
            break;
        s->ckpt_due = 0;
        pthread_mutex_unlock(&s->ckpt_mu);
        int rc = sqlite3_wal_checkpoint_v2(s->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY)
            cr_warn("store %s: checkpoint: %s (tried again after the next commit)", s->path,
                    sqlite3_errmsg(s->ckpt_db));
        pthread_mutex_lock(&s->ckpt_mu);
    }
    pthread_mutex_unlock(&s->ckpt_mu);
    return NULL;
}

int cr_store_checkpoint_apart(cr_store_t *s)
{
    if (s->ckpt_db)
        return 0;
    sqlite3 *db = NULL;
    char *msg = NULL;
    int sync = 2; /* FULL unless the store's own connection says otherwise */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "PRAGMA synchronous", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        sync = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA synchronous=%d;", sync);
    if (sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(db, pragma, NULL, NULL, &msg) != SQLITE_OK) {
        cr_warn("store %s: no checkpoint thread (%s): checkpoints stay in the commit", s->path,
                msg ? msg : db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_free(msg);
        sqlite3_close(db);
        return CR_E_STORE;
    }
    sqlite3_wal_autocheckpoint(db, 0); /* it never writes; this only says so */
    pthread_mutex_init(&s->ckpt_mu, NULL);
    pthread_cond_init(&s->ckpt_cv, NULL);
    s->ckpt_due = s->ckpt_stop = 0;
    s->ckpt_db = db;
    int e = pthread_create(&s->ckpt_thread, NULL, s_ckpt_main, s);
    if (e != 0) {
        s->ckpt_db = NULL;
        sqlite3_close(db);
        pthread_cond_destroy(&s->ckpt_cv);
        pthread_mutex_destroy(&s->ckpt_mu);
        cr_warn("store %s: no checkpoint thread (%s): checkpoints stay in the commit", s->path,
                strerror(e));
        return -e;
    }
    return 0;
}

/* Ends the checkpoint thread, if any, and closes its connection. */
static void s_ckpt_stop(cr_store_t *s)
{
    if (!s->ckpt_db)
        return;
    pthread_mutex_lock(&s->ckpt_mu);
    s->ckpt_stop = 1;
    pthread_cond_signal(&s->ckpt_cv);
    pthread_mutex_unlock(&s->ckpt_mu);
    pthread_join(s->ckpt_thread, NULL);
    sqlite3_close(s->ckpt_db);
    s->ckpt_db = NULL;
    pthread_cond_destroy(&s->ckpt_cv);
    pthread_mutex_destroy(&s->ckpt_mu);
}

void cr_store_close(cr_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_store_t *s = *self_p;
    s_ckpt_stop(s); /* before the last connection closes (it checkpoints) */
    while (s->depth > 0)
        cr_store_rollback(s);
    if (s->db)
        s_flush(s);
    s_unload(s);
    s_pending_drop(s, 0);
    free(s->pend);
    for (int i = 0; i < Q__COUNT; i++)
        sqlite3_finalize(s->q[i]);
    sqlite3_finalize(s->finish_many);
    sqlite3_finalize(s->add_many);
    if (s->db)
        sqlite3_close(s->db);
    free(s->path);
    free(s);
    *self_p = NULL;
}

int cr_store_recover(cr_store_t *s, uint32_t *n)
{
    uint32_t k = 0;
    int rc = s_run(s, s_q(s, Q_RECOVER), "recover");
    while (rc == 0 && s->assigned_head) {
        s_job_t *j = s->assigned_head;
        if ((rc = s_undo_push(s, S_UNDO_JOB, j, NULL)) != 0)
            break;
        s_assigned_unlink(s, j);
        j->state = CR_JOB_QUEUED;
        j->worker = NULL;
        s_queue_link(s, j);
        k++;
    }
    if (n)
        *n = rc == 0 ? k : 0;
    return rc;
}

/* ---- adding ---- */

int cr_store_add_batch(cr_store_t *s, const char *batch_id, const char *owner,
                       const uint8_t *options, size_t options_len, int64_t now_ms, int *is_new)
{
    sqlite3_stmt *st = s_q(s, Q_BATCH_ADD);
    s_text(st, 1, batch_id);
    s_text(st, 2, owner);
    s_blob(st, 3, options, options_len);
    sqlite3_bind_int64(st, 4, now_ms);
    int rc = s_run(s, st, "add batch");
    int fresh = rc == 0 && sqlite3_changes(s->db) > 0;
    if (fresh) {
        s_batch_t *b = s_batch_new(s, batch_id, owner, options, options_len, now_ms);
        rc = b ? s_undo_push(s, S_UNDO_BATCH_NEW, NULL, b) : -ENOMEM;
        if (b)
            b->counted = 1; /* no records yet: counted from here on */
    }
    if (is_new)
        *is_new = rc == 0 && fresh;
    s_settle(s);
    return rc;
}

int cr_store_add_task(cr_store_t *s, const char *hash, const char *name, const uint8_t *bundle,
                      size_t bundle_len)
{
    sqlite3_stmt *st = s_q(s, Q_TASK_ADD);
    s_text(st, 1, hash);
    s_text(st, 2, name);
    s_blob(st, 3, bundle, bundle_len);
    return s_run(s, st, "add task");
}

static int s_exists(cr_store_t *s, int which, const char *a, const char *b)
{
    sqlite3_stmt *st = s_q(s, which);
    s_text(st, 1, a);
    if (b)
        s_text(st, 2, b);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : s_fail(s, "lookup");
}


int cr_store_count_new(cr_store_t *s, const char *batch_id, const cr_store_job_in_t *jobs,
                       size_t n, uint32_t *n_new)
{
    uint32_t fresh = 0;
    *n_new = 0;
    for (size_t i = 0; i < n; i++) {
        if (!jobs[i].task_hash || !jobs[i].task_hash[0] || !jobs[i].job_id)
            continue; /* recorded INVALID_TASK, never queued */
        if (s_job_find(s, batch_id, jobs[i].job_id))
            continue; /* live */
        int has = s_exists(s, Q_JOB_HAS, batch_id, jobs[i].job_id);
        if (has < 0)
            return has;
        fresh += has == 0;
    }
    *n_new = fresh;
    return 0;
}

/* Binds job j's row at parameter base + 1.. of JOB_ADD or add_many. */
static void s_job_bind(sqlite3_stmt *st, int base, const cr_store_job_in_t *j, int64_t rowid)
{
    sqlite3_bind_int64(st, base + 1, rowid);
    s_text(st, base + 2, j->job_id);
    s_text(st, base + 3, j->task_hash);
    s_text(st, base + 4, j->language);
    s_blob(st, base + 5, j->spec, j->spec_len);
    s_text(st, base + 6, j->group_id);
}

/* Writes the rows of jobs[idx[0..k)] at rowids rowid0.., one multi-row
 * INSERT when k is S_MULTI_ROWS, else one INSERT each. The rowids are
 * given, not left to SQLite, so that a multi-row INSERT says which row each
 * job got; they lie above every row (the caller took max(rowid) + 1), so
 * only a job already stored (DONE before, or twice in these rows) is
 * ignored. inserted[i] is 1 for a row written, 0 for one ignored. 0, or
 * CR_E_STORE (logged; the caller rolls back). */
static int s_add_rows(cr_store_t *s, const char *batch_id, int64_t now_ms,
                      const cr_store_job_in_t *jobs, const size_t *idx, size_t k, int64_t rowid0,
                      uint8_t *inserted)
{
    if (k == S_MULTI_ROWS) {
        sqlite3_stmt *st = s->add_many;
        sqlite3_reset(st);
        s_text(st, 1, batch_id);
        sqlite3_bind_int64(st, 2, now_ms);
        for (size_t i = 0; i < k; i++)
            s_job_bind(st, 2 + S_JOB_COLS * (int)i, &jobs[idx[i]], rowid0 + (int64_t)i);
        if (s_run(s, st, "add jobs") != 0)
            return CR_E_STORE;
        int all = (size_t)sqlite3_changes(s->db) == k;
        for (size_t i = 0; i < k; i++) {
            int has = 1;
            if (!all) { /* some were known: which rowids were written */
                sqlite3_stmt *q = s_q(s, Q_JOB_ROWID_HAS);
                sqlite3_bind_int64(q, 1, rowid0 + (int64_t)i);
                int step = sqlite3_step(q);
                sqlite3_reset(q);
                if (step != SQLITE_ROW && step != SQLITE_DONE)
                    return s_fail(s, "added job");
                has = step == SQLITE_ROW;
            }
            inserted[i] = (uint8_t)has;
        }
        return 0;
    }
    for (size_t i = 0; i < k; i++) {
        sqlite3_stmt *st = s_q(s, Q_JOB_ADD);
        s_text(st, 1, batch_id);
        sqlite3_bind_int64(st, 2, now_ms);
        s_job_bind(st, 2, &jobs[idx[i]], rowid0 + (int64_t)i);
        if (s_run(s, st, "add job") != 0)
            return CR_E_STORE;
        inserted[i] = sqlite3_changes(s->db) != 0;
    }
    return 0;
}

/* Puts the job j, just written at rowid, in memory (QUEUED), with its spec
 * kept when CR_STORE_SPEC_CACHE has room. 0 or -ENOMEM (memory unchanged). */
static int s_add_live(cr_store_t *s, s_batch_t *b, const cr_store_job_in_t *j, int64_t rowid,
                      int64_t now_ms)
{
    const char *task = j->task;
    uint32_t sample = j->sample_index, turn = j->turn;
    Crucible__JobSpec *js = NULL;
    if (!j->has_keys && (js = crucible__job_spec__unpack(NULL, j->spec_len, j->spec))) {
        task = js->task;
        sample = js->sample_index;
        turn = js->turn;
    }
    s_job_t *m = s_job_new(s, b, rowid, j->job_id, j->language, j->task_hash, task, j->group_id,
                           sample, turn, 1, now_ms, 0);
    if (js)
        crucible__job_spec__free_unpacked(js, NULL);
    if (m && j->spec_len && s->spec_bytes + j->spec_len <= CR_STORE_SPEC_CACHE &&
        (m->spec = malloc(j->spec_len))) {
        memcpy(m->spec, j->spec, j->spec_len);
        m->spec_len = j->spec_len;
        s->spec_bytes += j->spec_len;
    }
    int rc = m ? s_undo_push(s, S_UNDO_NEW, m, NULL) : -ENOMEM;
    if (rc != 0 && m) { /* not in the undo log: taken out by hand */
        s_queue_unlink(s, m);
        s_batch_unlink(m);
        s_hash_del(s, m);
        s_job_release(s, m);
    }
    return rc;
}

/* Writes the gathered jobs jobs[idx[0..k)] from rowid *next and puts those
 * written in memory; *next moves past the rowids given. */
static int s_add_chunk(cr_store_t *s, s_batch_t *b, const char *batch_id, int64_t now_ms,
                       cr_store_job_in_t *jobs, const size_t *idx, size_t k, int64_t *next,
                       uint32_t *added, uint32_t *dup)
{
    uint8_t inserted[S_MULTI_ROWS];
    int rc = s_add_rows(s, batch_id, now_ms, jobs, idx, k, *next, inserted);
    for (size_t i = 0; rc == 0 && i < k; i++) {
        if (!inserted[i]) {
            (*dup)++; /* DONE before, or given twice */
            continue;
        }
        rc = s_add_live(s, b, &jobs[idx[i]], *next + (int64_t)i, now_ms);
        if (rc == 0) {
            jobs[idx[i]].is_new = 1;
            (*added)++;
        }
    }
    *next += (int64_t)k;
    return rc;
}

int cr_store_add_jobs(cr_store_t *s, const char *batch_id, cr_store_job_in_t *jobs, size_t n,
                      int64_t now_ms, uint32_t *n_new, uint32_t *n_dup)
{
    uint32_t added = 0, dup = 0;
    int rc = cr_store_begin(s);
    if (rc != 0)
        return rc;
    s_batch_t *b = s_batch_find(s, batch_id);
    rc = b ? s_undo_push(s, S_UNDO_BATCH, NULL, b) : CR_E_NOT_FOUND;
    /* the rowids given start above the table's last: SQLite's own choice */
    int64_t next = 0;
    if (rc == 0) {
        sqlite3_stmt *st = s_q(s, Q_JOB_ROWID_MAX);
        if (sqlite3_step(st) == SQLITE_ROW)
            next = sqlite3_column_int64(st, 0) + 1;
        else
            rc = s_fail(s, "last job");
        sqlite3_reset(st);
    }
    const char *known_hash = NULL; /* the last hash found in tasks: a Submit has few */
    size_t idx[S_MULTI_ROWS], k = 0; /* jobs gathered for the next rows */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        cr_store_job_in_t *j = &jobs[i];
        j->is_new = 0;
        if (!j->job_id || !j->job_id[0]) {
            rc = CR_E_USAGE;
            break;
        }
        if (j->task_hash && j->task_hash[0] &&
            !(known_hash && strcmp(known_hash, j->task_hash) == 0)) {
            int has = s_exists(s, Q_TASK_HAS, j->task_hash, NULL);
            if (has <= 0) {
                rc = has < 0 ? has : CR_E_USAGE;
                break;
            }
            known_hash = j->task_hash;
        }
        if (s_job_find(s, batch_id, j->job_id)) {
            dup++; /* live: known without asking SQLite */
            continue;
        }
        idx[k++] = i;
        if (k == S_MULTI_ROWS) {
            rc = s_add_chunk(s, b, batch_id, now_ms, jobs, idx, k, &next, &added, &dup);
            k = 0;
        }
    }
    if (rc == 0 && k)
        rc = s_add_chunk(s, b, batch_id, now_ms, jobs, idx, k, &next, &added, &dup);
    if (rc == 0 && added) {
        b->total += added;
        s_dirty(s, b);
    }
    rc = s_end(s, rc);
    if (rc != 0) {
        added = dup = 0;
        for (size_t i = 0; i < n; i++)
            jobs[i].is_new = 0;
    }
    if (n_new)
        *n_new = added;
    if (n_dup)
        *n_dup = dup;
    return rc;
}

/* ---- reading one job ---- */

static void s_info_of(const s_job_t *j, cr_store_job_info_t *out)
{
    memset(out, 0, sizeof *out);
    out->state = (cr_job_state_t)j->state;
    out->attempt = j->attempt;
    cr_text_copy(out->worker_id, sizeof out->worker_id, j->worker);
    cr_text_copy(out->group_id, sizeof out->group_id, j->group_id);
    out->t_submitted = j->t_submitted;
    out->t_assigned = j->t_assigned;
}

/* A job that is not live: DONE (from its row) or unknown. */
static int s_job_row(cr_store_t *s, const char *batch_id, const char *job_id,
                     cr_store_job_info_t *out)
{
    memset(out, 0, sizeof *out);
    if (s_flush(s) != 0)
        return CR_E_STORE;
    sqlite3_stmt *st = s_q(s, Q_JOB_GET);
    s_text(st, 1, batch_id);
    s_text(st, 2, job_id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? CR_E_NOT_FOUND : s_fail(s, "job");
    }
    out->state = (cr_job_state_t)sqlite3_column_int(st, 0);
    out->attempt = (uint32_t)sqlite3_column_int64(st, 1);
    s_copy(out->worker_id, sizeof out->worker_id, sqlite3_column_text(st, 2));
    s_copy(out->group_id, sizeof out->group_id, sqlite3_column_text(st, 3));
    s_copy(out->language, sizeof out->language, sqlite3_column_text(st, 4));
    out->t_submitted = sqlite3_column_int64(st, 5);
    out->t_assigned = sqlite3_column_int64(st, 6);
    out->seq = (uint64_t)sqlite3_column_int64(st, 7);
    sqlite3_reset(st);
    if (out->state != CR_JOB_DONE) {
        /* a row not DONE is live and in memory (invariant (9)) */
        cr_error("store %s: job %s/%s is not DONE in the log but not live in memory", s->path,
                 batch_id, job_id);
        return CR_E_STATE;
    }
    return 0;
}

int cr_store_job_get(cr_store_t *s, const char *batch_id, const char *job_id,
                     cr_store_job_info_t *out)
{
    s_job_t *j = s_job_find(s, batch_id, job_id);
    if (!j)
        return s_job_row(s, batch_id, job_id, out);
    s_info_of(j, out);
    cr_text_copy(out->language, sizeof out->language, s->langs[j->lang].name);
    return 0;
}

/* ---- queue ---- */

int cr_store_next_queued(cr_store_t *s, const char *const *langs, size_t nlangs, size_t limit,
                         cr_store_key_t *out, size_t *n)
{
    /* The heads of the worker's languages' queues, merged by rowid. */
    s_job_t *cur[CR_STORE_MAX_LANGS];
    size_t nq = 0, have = 0;
    for (size_t l = 0; l < nlangs && nq < CR_STORE_MAX_LANGS; l++)
        for (size_t i = 0; i < s->nlangs; i++)
            if (strcmp(s->langs[i].name, langs[l]) == 0 && s->langs[i].head)
                cur[nq++] = s->langs[i].head;
    while (have < limit) {
        size_t best = nq;
        for (size_t i = 0; i < nq; i++)
            if (cur[i] && (best == nq || cur[i]->rowid < cur[best]->rowid))
                best = i;
        if (best == nq)
            break;
        s_job_t *j = cur[best];
        cr_text_copy(out[have].batch_id, sizeof out[have].batch_id, j->batch->id);
        cr_text_copy(out[have].job_id, sizeof out[have].job_id, j->job_id);
        cr_text_copy(out[have].language, sizeof out[have].language, s->langs[j->lang].name);
        have++;
        cur[best] = j->qnext;
    }
    *n = have;
    return 0;
}

void cr_store_assigned_free(cr_store_assigned_t *a)
{
    if (!a)
        return;
    free(a->spec);
    free(a->task);
    free(a->options);
    memset(a, 0, sizeof *a);
}

static int s_blob_of(cr_store_t *s, int which, const char *a, uint8_t **out, size_t *len)
{
    sqlite3_stmt *st = s_q(s, which);
    s_text(st, 1, a);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        rc = s_dup_blob(st, 0, out, len);
    else
        rc = rc == SQLITE_DONE ? CR_E_NOT_FOUND : s_fail(s, "blob");
    sqlite3_reset(st);
    return rc;
}
int cr_store_task(cr_store_t *s, const char *hash, uint8_t **blob, size_t *len)
{
    return s_blob_of(s, Q_TASK_GET, hash, blob, len);
}

/* ---- finishing: the one way a job becomes DONE ---- */

static void s_join_flags(const Crucible__RewardRecord *rec, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < rec->n_hack_flags && off + 1 < cap; i++) {
        int w = snprintf(buf + off, cap - off, "%s%s", off ? "," : "", rec->hack_flags[i]);
        if (w < 0 || (size_t)w >= cap - off)
            break;
        /* a comma inside a flag name would split it when counting */
        for (size_t k = off + (off ? 1 : 0); k < off + (size_t)w; k++)
            if (buf[k] == ',')
                buf[k] = '_';
        off += (size_t)w;
    }
}

/* cr_store_assign, with the task bundle and options or (blobs 0) only the
 * spec and the task's hash. In memory; the one read is the spec, by rowid,
 * unless the job kept it (CR_STORE_SPEC_CACHE), which it then hands over. */
static int s_assign(cr_store_t *s, const char *batch_id, const char *job_id,
                    const char *worker_id, int64_t now_ms, cr_store_assigned_t *out, int blobs)
{
    cr_store_assigned_t a = {0};
    s_job_t *j = s_job_find(s, batch_id, job_id);
    int rc = 0;
    if (!j) {
        cr_store_job_info_t info;
        rc = s_job_row(s, batch_id, job_id, &info);
        rc = rc == 0 ? CR_E_STATE : rc; /* DONE */
    } else if (j->state != CR_JOB_QUEUED) {
        rc = CR_E_STATE;
    } else if (!worker_id || !worker_id[0]) {
        rc = CR_E_USAGE;
    }
    const char *worker = rc == 0 ? s_intern(s, worker_id) : NULL;
    if (rc == 0 && !worker)
        rc = -ENOMEM;
    if (rc == 0 && out) {
        cr_text_copy(a.task_hash, sizeof a.task_hash, j->task_hash);
        a.task_name = j->task;
        if (j->spec) {
            a.spec = j->spec;
            a.spec_len = j->spec_len;
            s->spec_bytes -= j->spec_len;
            j->spec = NULL;
            j->spec_len = 0;
        } else {
            sqlite3_stmt *st = s_q(s, Q_SPEC_GET);
            sqlite3_bind_int64(st, 1, j->rowid);
            int step = sqlite3_step(st);
            rc = step == SQLITE_ROW ? s_dup_blob(st, 0, &a.spec, &a.spec_len)
                                    : step == SQLITE_DONE ? CR_E_NOT_FOUND : s_fail(s, "spec");
            sqlite3_reset(st);
        }
    }
    if (rc == 0 && out && blobs)
        rc = s_blob_of(s, Q_TASK_GET, a.task_hash, &a.task, &a.task_len);
    if (rc == 0 && out && blobs)
        rc = s_blob_of(s, Q_BATCH_OPTS, batch_id, &a.options, &a.options_len);
    if (rc == 0)
        rc = s_undo_push(s, S_UNDO_JOB, j, NULL);
    if (rc == 0) {
        /* no write: the log keeps it QUEUED, which is what a restart makes it */
        s_queue_unlink(s, j);
        j->state = CR_JOB_ASSIGNED;
        j->worker = worker;
        j->t_assigned = now_ms > 0 ? now_ms : 1;
        s_assigned_link(s, j);
        a.attempt = j->attempt;
    }
    if (rc != 0)
        cr_store_assigned_free(&a);
    if (out)
        *out = a;
    s_settle(s);
    return rc;
}

int cr_store_assign(cr_store_t *s, const char *batch_id, const char *job_id,
                    const char *worker_id, int64_t now_ms, cr_store_assigned_t *out)
{
    return s_assign(s, batch_id, job_id, worker_id, now_ms, out, 1);
}

int cr_store_assign_spec(cr_store_t *s, const char *batch_id, const char *job_id,
                         const char *worker_id, int64_t now_ms, cr_store_assigned_t *out)
{
    return s_assign(s, batch_id, job_id, worker_id, now_ms, out, 0);
}


/* ---- finishing: the one way a job becomes DONE ---- */

/* Makes the live job j DONE with rec (inside the caller's transaction): the
 * keys from memory, the batch's next seq from memory, one UPDATE of its row
 * by rowid. j leaves memory (the graveyard keeps it until the commit). */
static int s_finish(cr_store_t *s, s_job_t *j, Crucible__RewardRecord *rec,
                    const uint8_t *sent, size_t sent_len)
{
    int rc = s_set_str(&rec->task, j->task);
    if (rc == 0)
        rc = s_set_str(&rec->group_id, j->group_id ? j->group_id : "");
    if (rc != 0)
        return rc;
    rec->sample_index = j->sample_index;
    rec->turn = j->turn;
    rec->t_submitted = j->t_submitted;
    rec->t_assigned = j->t_assigned;
    if (rec->attempt == 0)
        rec->attempt = j->attempt;
    s_batch_t *b = j->batch;
    rec->seq = b->last_seq + 1;

    uint8_t *blob = NULL;
    size_t len = 0;
    rc = sent ? cr_wire_record_amend(sent, sent_len, rec, &blob, &len) : CR_E_DECODE;
    if (rc != 0)
        rc = cr_wire_record_pack(rec, &blob, &len);
    if (rc != 0)
        return rc;
    char flags[1024];
    s_join_flags(rec, flags, sizeof flags);
    rc = s_reserve(s, 2);
    char *fl = rc == 0 ? strdup(flags) : NULL;
    if (rc == 0 && !fl)
        rc = -ENOMEM;
    if (rc == 0 && s->npend == s->cappend) {
        size_t cap = s->cappend ? 2 * s->cappend : 256;
        void *g = realloc(s->pend, cap * sizeof *s->pend);
        if (g) {
            s->pend = g;
            s->cappend = cap;
        } else {
            rc = -ENOMEM;
        }
    }
    if (rc != 0) {
        free(fl);
        free(blob);
        return rc;
    }
    /* the row is written at the next flush (a read through SQL, a nested
     * begin, the outermost commit), with the turn's other records */
    s->last_pend = s->npend + 1;
    s->pend[s->npend++] = (s_pending_t){.rowid = j->rowid, .seq = rec->seq,
                                        .status = rec->status, .flags = fl, .blob = blob,
                                        .len = len, .worker = j->worker ? j->worker : "",
                                        .t_assigned = j->t_assigned, .batch = b->id};
    /* room was reserved: nothing below fails, so memory follows the record */
    s_undo_push(s, S_UNDO_BATCH, NULL, b);
    s_undo_push(s, S_UNDO_JOB, j, NULL);
    b->last_seq = rec->seq;
    b->done++;
    if (b->counted && rec->status >= 0 && rec->status < CR_STORE_NSTATUS)
        b->by_status[rec->status]++;
    s_dirty(s, b);
    s_state_unlink(s, j);
    s_batch_unlink(j);
    s_hash_del(s, j);
    j->dead = 1;
    if (s->depth > 0)
        s->grave[s->ngrave++] = j;
    else
        s_job_release(s, j);
    return 0;
}

int cr_store_complete(cr_store_t *s, Crucible__RewardRecord *rec, cr_store_job_info_t *prev)
{
    return cr_store_complete_sent(s, rec, NULL, 0, prev);
}

int cr_store_complete_sent(cr_store_t *s, Crucible__RewardRecord *rec, const uint8_t *sent,
                           size_t len, cr_store_job_info_t *prev)
{
    cr_store_job_info_t info;
    if (!rec->batch_id || !rec->job_id)
        return CR_E_USAGE;
    s_job_t *j = s_job_find(s, rec->batch_id, rec->job_id);
    if (!j) {
        /* not live: DONE (first record wins) or unknown */
        int rc = s_job_row(s, rec->batch_id, rec->job_id, &info);
        if (prev) {
            if (rc == 0)
                *prev = info;
            else
                memset(prev, 0, sizeof *prev);
        }
        return rc == 0 ? CR_E_DUPLICATE : rc;
    }
    s_info_of(j, &info);
    cr_text_copy(info.language, sizeof info.language, s->langs[j->lang].name);
    /* Inside a caller's transaction the one UPDATE is atomic by itself and
     * s_finish changes memory only once it succeeded: no savepoint of its
     * own (two statements fewer per result). Outside one, a savepoint puts
     * the row and the batch's counters (s_flush) in one commit. */
    int rc = 0;
    if (s->depth > 0) {
        rc = s_finish(s, j, rec, sent, len);
    } else {
        rc = cr_store_begin(s);
        if (rc == 0)
            rc = s_end(s, s_finish(s, j, rec, sent, len));
    }
    if (prev) {
        if (rc == 0)
            *prev = info;
        else
            memset(prev, 0, sizeof *prev);
    }
    return rc;
}

int cr_store_last_record(cr_store_t *s, const uint8_t **blob, size_t *len)
{
    if (!s->last_pend || s->last_pend > s->npend)
        return CR_E_NOT_FOUND;
    *blob = s->pend[s->last_pend - 1].blob;
    *len = s->pend[s->last_pend - 1].len;
    return 0;
}

/* A record the store writes itself (INFRA_ERROR, CANCELLED): keys and the
 * verdict; s_finish adds the rest. Heap-owned (free_unpacked). */
static Crucible__RewardRecord *s_make_record(const s_job_t *j, int status, const char *message)
{
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    r.batch_id = (char *)j->batch->id;
    r.job_id = (char *)j->job_id;
    r.attempt = j->attempt;
    r.status = (Crucible__Status)status;
    r.message = (char *)message;
    r.worker_id = (char *)(j->worker ? j->worker : "");
    r.t_finished = cr_time_now_ms();
    return cr_wire_record_dup(&r);
}

/* ---- requeue / unassign ---- */

/* The live job, or the error for one that is not: CR_E_STATE when DONE. */
static s_job_t *s_live(cr_store_t *s, const char *batch_id, const char *job_id, int *rc)
{
    s_job_t *j = s_job_find(s, batch_id, job_id);
    if (j) {
        *rc = 0;
        return j;
    }
    cr_store_job_info_t info;
    *rc = s_job_row(s, batch_id, job_id, &info);
    if (*rc == 0)
        *rc = CR_E_STATE;
    return NULL;
}

int cr_store_requeue(cr_store_t *s, const char *batch_id, const char *job_id,
                     uint32_t max_attempts, const char *why, Crucible__RewardRecord **done)
{
    Crucible__RewardRecord *rec = NULL;
    if (done)
        *done = NULL;
    int rc;
    s_job_t *j = s_live(s, batch_id, job_id, &rc);
    if (rc == 0 && j->state != CR_JOB_ASSIGNED)
        rc = CR_E_STATE;
    if (rc != 0)
        return rc;
    rc = cr_store_begin(s);
    if (rc != 0)
        return rc;
    if (j->attempt >= max_attempts) {
        char msg[512];
        /* quarantined: a job whose every try took its worker down is poison;
         * it is not offered again, and the record says so */
        snprintf(msg, sizeof msg, "quarantined: worker lost on %u attempts (max-attempts %u; "
                 "last: %s)", j->attempt, max_attempts, why && why[0] ? why : "no reason given");
        rec = s_make_record(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, msg);
        rc = rec ? s_finish(s, j, rec, NULL, 0) : -ENOMEM;
    } else {
        /* the try counts: written, so that a restart keeps the count */
        sqlite3_stmt *st = s_q(s, Q_JOB_REQUEUE);
        sqlite3_bind_int64(st, 1, j->rowid);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)j->attempt + 1);
        sqlite3_bind_int64(st, 3, j->t_assigned);
        rc = s_run(s, st, "requeue");
        if (rc == 0)
            rc = s_undo_push(s, S_UNDO_JOB, j, NULL);
        if (rc == 0) {
            s_assigned_unlink(s, j);
            j->state = CR_JOB_QUEUED;
            j->worker = NULL;
            j->attempt++;
            s_queue_link(s, j);
        }
    }
    rc = s_end(s, rc);
    if (rc != 0 || !done) {
        if (rec)
            crucible__reward_record__free_unpacked(rec, NULL);
        rec = NULL;
    }
    if (done)
        *done = rec;
    return rc;
}

int cr_store_unassign(cr_store_t *s, const char *batch_id, const char *job_id)
{
    int rc;
    s_job_t *j = s_live(s, batch_id, job_id, &rc);
    if (rc == 0 && j->state != CR_JOB_ASSIGNED)
        rc = CR_E_STATE;
    if (rc == 0)
        rc = s_undo_push(s, S_UNDO_JOB, j, NULL);
    if (rc == 0) {
        /* nothing was written when it was assigned: nothing to write back */
        s_assigned_unlink(s, j);
        j->state = CR_JOB_QUEUED;
        j->worker = NULL;
        s_queue_link(s, j);
    }
    s_settle(s);
    return rc;
}

/* ---- cancel ---- */

typedef struct {
    Crucible__RewardRecord *rec;         /* owned */
    char worker[CR_STORE_ID_MAX + 1];    /* holder before, "" if queued */
} s_cancelled_t;

int cr_store_cancel(cr_store_t *s, const char *batch_id, const char *job_id, cr_store_done_fn fn,
                    void *arg, uint32_t *n)
{
    s_cancelled_t *done = NULL;
    size_t ndone = 0;
    if (n)
        *n = 0;
    s_batch_t *b = s_batch_find(s, batch_id);
    if (!b)
        return CR_E_NOT_FOUND;
    s_job_t *one = NULL;
    if (job_id && job_id[0]) {
        one = s_job_find(s, batch_id, job_id);
        if (!one) {
            cr_store_job_info_t info;
            int rc = s_job_row(s, batch_id, job_id, &info);
            return rc == 0 ? 0 : rc; /* DONE already: nothing to cancel */
        }
    }
    size_t want = 0;
    for (s_job_t *j = one ? one : b->head; j; j = one ? NULL : j->bnext)
        want++;
    if (want && !(done = calloc(want, sizeof *done)))
        return -ENOMEM;
    int rc = cr_store_begin(s);
    if (rc != 0) {
        free(done);
        return rc;
    }
    s_job_t *next = NULL;
    for (s_job_t *j = one ? one : b->head; rc == 0 && j; j = one ? NULL : next) {
        next = j->bnext; /* j leaves the batch's list */
        Crucible__RewardRecord *rec = s_make_record(
            j, CRUCIBLE__STATUS__STATUS_CANCELLED,
            j->state == CR_JOB_ASSIGNED ? "cancelled while running" : "cancelled while queued");
        if (rec)
            snprintf(done[ndone].worker, sizeof done[ndone].worker, "%s",
                     j->state == CR_JOB_ASSIGNED && j->worker ? j->worker : "");
        rc = rec ? s_finish(s, j, rec, NULL, 0) : -ENOMEM;
        if (rec)
            done[ndone++].rec = rec;
    }
    rc = s_end(s, rc);
    for (size_t i = 0; i < ndone; i++) {
        if (rc == 0 && fn)
            fn(done[i].rec, done[i].worker, arg);
        crucible__reward_record__free_unpacked(done[i].rec, NULL);
    }
    if (n && rc == 0)
        *n = (uint32_t)ndone;
    free(done);
    return rc;
}

/* ---- queue timeout ---- */

int cr_store_expire_queued(cr_store_t *s, int64_t now_ms, cr_store_done_fn fn, void *arg,
                           uint32_t *n)
{
    Crucible__RewardRecord **done = NULL;
    size_t ndone = 0, cap = 0;
    if (n)
        *n = 0;
    int rc = 0, open = 0;
    /* only batches with a queue timeout and jobs left are walked */
    for (size_t i = 0; rc == 0 && i < S_BATCH_BUCKETS; i++)
        for (s_batch_t *b = s->batches[i]; rc == 0 && b; b = b->hnext) {
            if (!(b->queue_timeout_s > 0) || !b->queued)
                continue;
            int64_t limit = (int64_t)(b->queue_timeout_s * 1000.0);
            s_job_t *next = NULL;
            for (s_job_t *j = b->head; rc == 0 && j; j = next) {
                next = j->bnext;
                /* waiting since submission, or since the last assignment of a requeued job */
                int64_t since = j->t_submitted > j->t_assigned ? j->t_submitted : j->t_assigned;
                /* the list is in submission order: from the first job submitted
                 * within the limit on, none has waited long enough (a requeued
                 * one waits from its later assignment), so the walk stops there
                 * and costs what expires, not the batch */
                if (j->t_submitted >= now_ms - limit)
                    break;
                if (j->state != CR_JOB_QUEUED || since >= now_ms - limit)
                    continue;
                if (!open && (rc = cr_store_begin(s)) != 0)
                    break;
                open = 1;
                if (ndone == cap) {
                    cap = cap ? 2 * cap : 64;
                    void *g = realloc(done, cap * sizeof *done);
                    if (!g) {
                        rc = -ENOMEM;
                        break;
                    }
                    done = g;
                }
                char msg[160];
                snprintf(msg, sizeof msg, "queued for %.0f s without a worker (queue timeout %g s)",
                         (double)(now_ms - since) / 1000.0, b->queue_timeout_s);
                done[ndone] = s_make_record(j, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, msg);
                rc = done[ndone] ? s_finish(s, j, done[ndone], NULL, 0) : -ENOMEM;
                if (done[ndone])
                    ndone++;
            }
        }
    if (open)
        rc = s_end(s, rc);
    for (size_t i = 0; i < ndone; i++) {
        if (rc == 0 && fn)
            fn(done[i], "", arg);
        crucible__reward_record__free_unpacked(done[i], NULL);
    }
    if (n && rc == 0)
        *n = (uint32_t)ndone;
    free(done);
    return rc;
}

/* ---- reading records ---- */

/* Steps st (bound by the caller) and hands each record in column 0 to fn. */
static int s_each_record(cr_store_t *s, sqlite3_stmt *st, cr_store_record_fn fn, void *arg)
{
    int rc = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        Crucible__RewardRecord *rec = NULL;
        if (cr_wire_record_unpack(sqlite3_column_blob(st, 0),
                                  (size_t)sqlite3_column_bytes(st, 0), &rec) != 0) {
            cr_error("store %s: a stored record does not decode", s->path);
            rc = CR_E_DECODE;
            break;
        }
        int stop = fn(rec, arg);
        crucible__reward_record__free_unpacked(rec, NULL);
        if (stop)
            break;
    }
    if (rc == 0 && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = s_fail(s, "records");
    sqlite3_reset(st);
    return rc;
}

/* The batch's records with seq > after_seq, in seq order (the record in
 * column 0, its seq in 1): the statement bound, once the counters are
 * flushed (they are read through SQL); NULL when the flush failed. */
static sqlite3_stmt *s_records_query(cr_store_t *s, const char *batch_id, uint64_t after_seq)
{
    if (s_flush(s) != 0)
        return NULL;
    sqlite3_stmt *st = s_q(s, Q_RECORDS);
    s_text(st, 1, batch_id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)after_seq);
    return st;
}

int cr_store_records_packed(cr_store_t *s, const char *batch_id, uint64_t after_seq,
                            cr_store_packed_fn fn, void *arg)
{
    sqlite3_stmt *st = s_records_query(s, batch_id, after_seq);
    if (!st)
        return CR_E_STORE;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if (fn((uint64_t)sqlite3_column_int64(st, 1), sqlite3_column_blob(st, 0),
               (size_t)sqlite3_column_bytes(st, 0), arg))
            break;
    int rc = step != SQLITE_ROW && step != SQLITE_DONE ? s_fail(s, "records") : 0;
    sqlite3_reset(st);
    return rc;
}

int cr_store_records(cr_store_t *s, const char *batch_id, uint64_t after_seq,
                     cr_store_record_fn fn, void *arg)
{
    sqlite3_stmt *st = s_records_query(s, batch_id, after_seq);
    return st ? s_each_record(s, st, fn, arg) : CR_E_STORE;
}

int cr_store_group_records(cr_store_t *s, const char *batch_id, const char *group_id,
                           cr_store_record_fn fn, void *arg)
{
    if (s_flush(s) != 0)
        return CR_E_STORE;
    sqlite3_stmt *st = s_q(s, Q_GROUP_RECORDS);
    s_text(st, 1, batch_id);
    s_text(st, 2, group_id);
    return s_each_record(s, st, fn, arg);
}

int cr_store_worker_key(cr_store_t *s, const char *worker_id, const char *key, int64_t now_ms,
                        char bound[CR_STORE_KEY_MAX + 1])
{
    bound[0] = '\0';
    if (!worker_id || !worker_id[0] || !key || !key[0])
        return CR_E_USAGE;
    sqlite3_stmt *st = s_q(s, Q_WORKER_KEY_ADD);
    s_text(st, 1, worker_id);
    s_text(st, 2, key);
    sqlite3_bind_int64(st, 3, now_ms);
    int rc = s_run(s, st, "worker key");
    if (rc != 0)
        return rc;
    st = s_q(s, Q_WORKER_KEY_GET);
    s_text(st, 1, worker_id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        s_copy(bound, CR_STORE_KEY_MAX + 1, sqlite3_column_text(st, 0));
    sqlite3_reset(st);
    if (step != SQLITE_ROW)
        return s_fail(s, "worker key read");
    return strcmp(bound, key) == 0 ? 0 : CR_E_STATE;
}

static int s_cmp_lease(const void *a, const void *b)
{
    int64_t x = ((const cr_store_lease_t *)a)->t_assigned, y = ((const cr_store_lease_t *)b)->t_assigned;
    return x < y ? -1 : x > y;
}

int cr_store_assigned_list(cr_store_t *s, cr_store_lease_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s->nassigned)
        return 0;
    cr_store_lease_t *v = malloc(s->nassigned * sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t have = 0;
    for (s_job_t *j = s->assigned_head; j; j = j->qnext) {
        cr_store_lease_t *l = &v[have++];
        snprintf(l->key.batch_id, sizeof l->key.batch_id, "%s", j->batch->id);
        snprintf(l->key.job_id, sizeof l->key.job_id, "%s", j->job_id);
        snprintf(l->key.language, sizeof l->key.language, "%s", s->langs[j->lang].name);
        snprintf(l->worker_id, sizeof l->worker_id, "%s", j->worker);
        l->t_assigned = j->t_assigned;
        l->attempt = j->attempt;
    }
    qsort(v, have, sizeof *v, s_cmp_lease); /* rolled-back ones may be out of order */
    *out = v;
    *n = have;
    return 0;
}

int cr_store_leases_each(cr_store_t *s, cr_store_lease_fn fn, void *arg)
{
    for (s_job_t *j = s->assigned_head, *next; j; j = next) {
        next = j->qnext;
        cr_store_lease_t l;
        snprintf(l.key.batch_id, sizeof l.key.batch_id, "%s", j->batch->id);
        snprintf(l.key.job_id, sizeof l.key.job_id, "%s", j->job_id);
        snprintf(l.key.language, sizeof l.key.language, "%s", s->langs[j->lang].name);
        snprintf(l.worker_id, sizeof l.worker_id, "%s", j->worker);
        l.t_assigned = j->t_assigned;
        l.attempt = j->attempt;
        if (fn(&l, arg))
            break;
    }
    return 0;
}
int cr_store_worker_jobs(cr_store_t *s, const char *worker_id, cr_store_key_t **keys, size_t *n)
{
    cr_store_key_t *k = NULL;
    size_t have = 0, cap = 0;
    for (s_job_t *j = s->assigned_head; j; j = j->qnext) {
        if (strcmp(j->worker, worker_id) != 0)
            continue;
        if (have == cap) {
            cap = cap ? 2 * cap : 16;
            void *g = realloc(k, cap * sizeof *k);
            if (!g) {
                free(k);
                *keys = NULL;
                *n = 0;
                return -ENOMEM;
            }
            k = g;
        }
        snprintf(k[have].batch_id, sizeof k[have].batch_id, "%s", j->batch->id);
        snprintf(k[have].job_id, sizeof k[have].job_id, "%s", j->job_id);
        snprintf(k[have].language, sizeof k[have].language, "%s", s->langs[j->lang].name);
        have++;
    }
    *keys = k;
    *n = have;
    return 0;
}
/* ---- counts ---- */

int cr_store_counts(cr_store_t *s, cr_store_counts_t *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < s->nlangs; i++)
        out->queued += s->langs[i].n;
    out->assigned = s->nassigned;
    for (size_t i = 0; i < S_BATCH_BUCKETS; i++)
        for (s_batch_t *b = s->batches[i]; b; b = b->hnext)
            out->done += b->done;
    return 0;
}
int cr_store_batch_get(cr_store_t *s, const char *batch_id, cr_store_batch_t *out)
{
    memset(out, 0, sizeof *out);
    s_batch_t *b = batch_id ? s_batch_find(s, batch_id) : NULL;
    if (!b)
        return CR_E_NOT_FOUND;
    out->total = b->total;
    out->done = b->done;
    out->last_seq = b->last_seq;
    out->created_ms = b->created_ms;
    snprintf(out->owner, sizeof out->owner, "%s", b->owner);
    return 0;
}
int cr_store_batch_options(cr_store_t *s, const char *batch_id, uint8_t **blob, size_t *len)
{
    *blob = NULL;
    *len = 0;
    return s_blob_of(s, Q_BATCH_OPTS, batch_id, blob, len);
}

typedef struct {
    char name[64];  /* hack flag */
    uint32_t count; /* records that raised it */
} s_flag_count_t;

int cr_store_batch_counts(cr_store_t *s, const char *batch_id,
                          uint32_t by_status[CR_STORE_NSTATUS], cr_store_flag_fn fn, void *arg)
{
    if (s_flush(s) != 0)
        return CR_E_STORE;
    /* by status from memory: counted since the batch was made, or once from
     * its rows (after a restart or a rollback) and from memory after */
    s_batch_t *mb = s_batch_find(s, batch_id);
    int step;
    sqlite3_stmt *st;
    if (mb && !mb->counted) {
        memset(mb->by_status, 0, sizeof mb->by_status);
        st = s_q(s, Q_BY_STATUS);
        s_text(st, 1, batch_id);
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            int status = sqlite3_column_int(st, 0);
            if (status >= 0 && status < CR_STORE_NSTATUS)
                mb->by_status[status] += (uint32_t)sqlite3_column_int64(st, 1);
        }
        sqlite3_reset(st);
        if (step != SQLITE_DONE)
            return s_fail(s, "by status");
        mb->counted = 1;
    }
    for (int i = 0; mb && i < CR_STORE_NSTATUS; i++)
        by_status[i] += mb->by_status[i];
    if (!fn)
        return 0;
    /* The judge knows a dozen flags or so: a short list beats a hash table. */
    s_flag_count_t *flags = NULL;
    size_t nflags = 0, cap = 0;
    int rc = 0;
    st = s_q(s, Q_FLAGS);
    s_text(st, 1, batch_id);
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        char buf[1024];
        s_copy(buf, sizeof buf, sqlite3_column_text(st, 0));
        char *save = NULL;
        for (char *f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
            size_t i = 0;
            while (i < nflags && strncmp(flags[i].name, f, sizeof flags[i].name - 1) != 0)
                i++;
            if (i == nflags) {
                if (nflags == cap) {
                    cap = cap ? 2 * cap : 16;
                    void *g = realloc(flags, cap * sizeof *flags);
                    if (!g) {
                        rc = -ENOMEM;
                        break;
                    }
                    flags = g;
                }
                snprintf(flags[nflags].name, sizeof flags[nflags].name, "%s", f);
                flags[nflags++].count = 0;
            }
            flags[i].count++;
        }
    }
    if (rc == 0 && step != SQLITE_DONE && step != SQLITE_ROW)
        rc = s_fail(s, "flags");
    sqlite3_reset(st);
    for (size_t i = 0; rc == 0 && i < nflags; i++)
        fn(flags[i].name, flags[i].count, arg);
    free(flags);
    return rc;
}

int cr_store_queued_by_owner(cr_store_t *s, const char *owner, uint64_t *n)
{
    *n = 0;
    for (size_t i = 0; i < S_BATCH_BUCKETS; i++)
        for (s_batch_t *b = s->batches[i]; b; b = b->hnext)
            if (b->queued && strcmp(b->owner, owner) == 0)
                *n += b->queued;
    return 0;
}
/* ---- groups ---- */

int cr_store_group_state(cr_store_t *s, const char *batch_id, const char *group_id,
                         uint32_t *members, uint32_t *done, uint64_t *last_seq)
{
    if (s_flush(s) != 0)
        return CR_E_STORE;
    sqlite3_stmt *st = s_q(s, Q_GROUP_STATE);
    s_text(st, 1, batch_id);
    s_text(st, 2, group_id);
    int step = sqlite3_step(st);
    *members = step == SQLITE_ROW ? (uint32_t)sqlite3_column_int64(st, 0) : 0;
    *done = step == SQLITE_ROW ? (uint32_t)sqlite3_column_int64(st, 1) : 0;
    *last_seq = step == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 2) : 0;
    sqlite3_reset(st);
    return step == SQLITE_ROW ? 0 : s_fail(s, "group state");
}

int cr_store_groups_done(cr_store_t *s, const char *batch_id, cr_store_group_fn fn, void *arg)
{
    if (s_flush(s) != 0)
        return CR_E_STORE;
    sqlite3_stmt *st = s_q(s, Q_GROUPS_DONE);
    s_text(st, 1, batch_id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        fn((const char *)sqlite3_column_text(st, 0), (uint64_t)sqlite3_column_int64(st, 1), arg);
    sqlite3_reset(st);
    return step == SQLITE_DONE ? 0 : s_fail(s, "groups done");
}

int cr_store_set_advantage(cr_store_t *s, const char *batch_id, const char *job_id, double adv)
{
    if (s_flush(s) != 0)
        return CR_E_STORE;
    uint8_t *blob = NULL;
    size_t len = 0;
    Crucible__RewardRecord *rec = NULL;
    int rc = cr_store_begin(s);
    if (rc != 0)
        return rc;
    sqlite3_stmt *st = s_q(s, Q_JOB_RECORD);
    s_text(st, 1, batch_id);
    s_text(st, 2, job_id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        rc = cr_wire_record_unpack(sqlite3_column_blob(st, 0),
                                   (size_t)sqlite3_column_bytes(st, 0), &rec);
    else if (step == SQLITE_DONE)
        rc = s_exists(s, Q_JOB_GET, batch_id, job_id) == 1 ? CR_E_STATE : CR_E_NOT_FOUND;
    else
        rc = s_fail(s, "record");
    sqlite3_reset(st);
    if (rc == 0) {
        rec->advantage = adv;
        rc = cr_wire_record_pack(rec, &blob, &len);
    }
    if (rc == 0) {
        st = s_q(s, Q_JOB_SET_RECORD);
        s_text(st, 1, batch_id);
        s_text(st, 2, job_id);
        s_blob(st, 3, blob, len);
        rc = s_run(s, st, "set advantage");
    }
    free(blob);
    if (rec)
        crucible__reward_record__free_unpacked(rec, NULL);
    return s_end(s, rc);
}

/* ---- invariant checker ---- */

/* Each query returns the first (batch, job) that breaks its invariant. */
static const struct {
    const char *what;
    const char *sql;
} s_checks[] = {
    {"(1) state is QUEUED, ASSIGNED or DONE",
     "SELECT batch_id, job_id FROM jobs WHERE state NOT IN (0, 1, 2)"},
    {"(2) attempt >= 1", "SELECT batch_id, job_id FROM jobs WHERE attempt < 1"},
    {"(3) a QUEUED job has no worker, seq or record",
     "SELECT batch_id, job_id FROM jobs WHERE state = 0 AND"
     " (worker_id <> '' OR seq IS NOT NULL OR record IS NOT NULL)"},
    {"(4) no row is ASSIGNED: assignments live in memory only",
     "SELECT batch_id, job_id FROM jobs WHERE state = 1"},
    {"(5) a DONE job has one record and a seq >= 1",
     "SELECT j.batch_id, j.job_id FROM jobs j WHERE j.state = 2 AND NOT EXISTS"
     " (SELECT 1 FROM records r WHERE r.job = j.rowid)"},
    {"(5) a record belongs to a job of its batch and has a seq >= 1",
     "SELECT r.batch_id, coalesce(j.job_id, '') FROM records r LEFT JOIN jobs j"
     " ON j.rowid = r.job WHERE j.rowid IS NULL OR j.batch_id <> r.batch_id OR r.seq < 1"},
    {"(6) every job belongs to a stored batch",
     "SELECT j.batch_id, j.job_id FROM jobs j WHERE NOT EXISTS"
     " (SELECT 1 FROM batches b WHERE b.batch_id = j.batch_id)"},
    {"(6) batches.total and batches.done count the batch's jobs",
     "SELECT b.batch_id, '' FROM batches b WHERE"
     " b.total <> (SELECT count(*) FROM jobs j WHERE j.batch_id = b.batch_id) OR"
     " b.done <> (SELECT count(*) FROM records r WHERE r.batch_id = b.batch_id)"},
    {"(7) the seqs of a batch are 1..done without gap and last_seq == done",
     "SELECT b.batch_id, '' FROM batches b WHERE b.last_seq <> b.done OR"
     " b.done <> (SELECT count(DISTINCT seq) FROM records r WHERE r.batch_id = b.batch_id) OR"
     " b.done <> (SELECT coalesce(max(seq), 0) FROM records r WHERE r.batch_id = b.batch_id)"},
    {"(8) a job that is not DONE names a stored task",
     "SELECT j.batch_id, j.job_id FROM jobs j WHERE NOT EXISTS"
     " (SELECT 1 FROM records r WHERE r.job = j.rowid) AND NOT EXISTS"
     " (SELECT 1 FROM tasks t WHERE t.hash = j.task_hash)"},
};

/* (9) and (10): memory against the log. */
static int s_check_memory(cr_store_t *s, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    size_t rows = 0, queued = 0, assigned = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT batch_id, job_id, attempt, rowid FROM jobs j"
                                  " WHERE state < 2"
                                  " AND NOT EXISTS (SELECT 1 FROM records r WHERE r.job = j.rowid)",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "check memory: %s", sqlite3_errmsg(s->db));
        return CR_E_STORE;
    }
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *b = (const char *)sqlite3_column_text(st, 0);
        const char *j = (const char *)sqlite3_column_text(st, 1);
        s_job_t *m = s_job_find(s, b, j);
        rows++;
        if (!m || m->attempt != (uint32_t)sqlite3_column_int64(st, 2) ||
            m->rowid != sqlite3_column_int64(st, 3)) {
            snprintf(err, errlen, "invariant (9) broken by %s/%s: %s", b, j,
                     !m ? "not DONE in the log, not live in memory"
                     : m->attempt != (uint32_t)sqlite3_column_int64(st, 2)
                         ? "attempt differs from memory's"
                         : "its row is not the one memory names");
            rc = CR_E_STATE;
        }
    }
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < s->capjobs + s->capold; i++)
        for (s_job_t *m = i < s->capjobs ? s->jobs[i] : s->old[i - s->capjobs]; m;
             m = m->hnext) {
            int ok = m->state == CR_JOB_QUEUED ? !m->worker
                                               : m->state == CR_JOB_ASSIGNED && m->worker &&
                                                     m->worker[0] && m->t_assigned > 0;
            if (!ok || m->attempt < 1) {
                snprintf(err, errlen, "invariant (9) broken by %s/%s: live %s job without %s",
                         m->batch->id, m->job_id, m->state ? "ASSIGNED" : "QUEUED",
                         m->state ? "a worker and t_assigned" : "an empty worker");
                return CR_E_STATE;
            }
            if (m->state == CR_JOB_QUEUED)
                queued++;
            else
                assigned++;
        }
    size_t inq = 0;
    for (size_t i = 0; i < s->nlangs; i++)
        inq += s->langs[i].n;
    if (rows != s->njobs || queued != inq || assigned != s->nassigned) {
        snprintf(err, errlen, "invariant (9) broken: %zu rows not DONE, %zu live jobs (%zu queued "
                 "of %zu in the queues, %zu assigned of %zu leased)", rows, s->njobs, queued, inq,
                 assigned, s->nassigned);
        return CR_E_STATE;
    }
    if (sqlite3_prepare_v2(s->db, "SELECT batch_id, total, done, last_seq FROM batches", -1, &st,
                           NULL) != SQLITE_OK) {
        snprintf(err, errlen, "check memory: %s", sqlite3_errmsg(s->db));
        return CR_E_STORE;
    }
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        s_batch_t *b = s_batch_find(s, id);
        if (!b || b->total != (uint32_t)sqlite3_column_int64(st, 1) ||
            b->done != (uint32_t)sqlite3_column_int64(st, 2) ||
            b->last_seq != (uint64_t)sqlite3_column_int64(st, 3)) {
            snprintf(err, errlen, "invariant (10) broken by %s/: its counters in memory differ "
                     "from its row", id);
            rc = CR_E_STATE;
        }
    }
    sqlite3_finalize(st);
    /* (10) continued: a batch's records by status, where memory counts them */
    for (size_t i = 0; rc == 0 && i < S_BATCH_BUCKETS; i++)
        for (s_batch_t *b = s->batches[i]; rc == 0 && b; b = b->hnext) {
            if (!b->counted)
                continue;
            uint32_t rows_by[CR_STORE_NSTATUS] = {0};
            st = s_q(s, Q_BY_STATUS);
            s_text(st, 1, b->id);
            while (sqlite3_step(st) == SQLITE_ROW) {
                int k = sqlite3_column_int(st, 0);
                if (k >= 0 && k < CR_STORE_NSTATUS)
                    rows_by[k] = (uint32_t)sqlite3_column_int64(st, 1);
            }
            sqlite3_reset(st);
            if (memcmp(rows_by, b->by_status, sizeof rows_by) != 0) {
                snprintf(err, errlen, "invariant (10) broken by %s/: its records by status in "
                         "memory differ from its rows", b->id);
                rc = CR_E_STATE;
            }
        }
    return rc;
}

int cr_store_check(cr_store_t *s, char *err, size_t errlen)
{
    if (s_flush(s) != 0)
        return CR_E_STORE;
    for (size_t i = 0; i < sizeof s_checks / sizeof s_checks[0]; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, s_checks[i].sql, -1, &st, NULL) != SQLITE_OK) {
            snprintf(err, errlen, "check %s: %s", s_checks[i].what, sqlite3_errmsg(s->db));
            return CR_E_STORE;
        }
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW)
            snprintf(err, errlen, "invariant %s broken by %s/%s", s_checks[i].what,
                     (const char *)sqlite3_column_text(st, 0),
                     (const char *)sqlite3_column_text(st, 1));
        else if (step != SQLITE_DONE)
            snprintf(err, errlen, "check %s: %s", s_checks[i].what, sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        if (step != SQLITE_DONE)
            return step == SQLITE_ROW ? CR_E_STATE : CR_E_STORE;
    }
    /* (5) continued: each record decodes and agrees with its row. */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT j.batch_id, j.job_id, r.seq, r.status, r.record FROM records r"
                           " JOIN jobs j ON j.rowid = r.job",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "check records: %s", sqlite3_errmsg(s->db));
        return CR_E_STORE;
    }
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *b = (const char *)sqlite3_column_text(st, 0);
        const char *j = (const char *)sqlite3_column_text(st, 1);
        Crucible__RewardRecord *rec = NULL;
        if (cr_wire_record_unpack(sqlite3_column_blob(st, 4), (size_t)sqlite3_column_bytes(st, 4),
                                  &rec) != 0) {
            snprintf(err, errlen, "invariant (5) broken by %s/%s: record does not decode", b, j);
            rc = CR_E_STATE;
            break;
        }
        if (strcmp(rec->batch_id, b) != 0 || strcmp(rec->job_id, j) != 0 ||
            rec->seq != (uint64_t)sqlite3_column_int64(st, 2) ||
            (int)rec->status != sqlite3_column_int(st, 3)) {
            snprintf(err, errlen,
                     "invariant (5) broken by %s/%s: record says %s/%s seq %llu status %d", b, j,
                     rec->batch_id, rec->job_id, (unsigned long long)rec->seq, (int)rec->status);
            rc = CR_E_STATE;
        }
        crucible__reward_record__free_unpacked(rec, NULL);
    }
    sqlite3_finalize(st);
    return rc == 0 ? s_check_memory(s, err, errlen) : rc;
}
