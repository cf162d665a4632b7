/* traj.h — trajectories: their state, the write-ahead log, the outputs.
 *
 * The write-ahead log (<out>.wal, JSONL) gets one line per finished step
 * before the driver acts on it: "start" (the rollout id and settings),
 * "completion" (turn t answered: messages sent, completion, kernel, usage),
 * "judged" (turn t's record, whole), "failed" (a request that failed past
 * its retries: the sample stops with llm_error). A killed rollout reads it
 * back with cr_traj_wal_load and goes on where it was: a turn with a
 * completion and no record is submitted again under the same job id (the
 * coordinator counts it duplicate if it was already queued, and streams
 * its record), a judged turn gets its feedback again from the record. A
 * torn last line (killed mid-write) is ignored. */
#ifndef CR_TRAJ_H
#define CR_TRAJ_H

#include "crucible.pb-c.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#define CR_TRAJ_ID 256 /* bytes of a job id */

typedef struct {
    uint32_t turn;                    /* from 1 */
    json_t *messages;                 /* sent, after trimming; owned */
    size_t dropped;                   /* messages trimmed away before sending */
    char *completion;                 /* owned */
    char *kernel;                     /* extracted source, owned */
    char *finish_reason;              /* owned */
    int64_t prompt_tokens;            /* usage; -1 = none */
    int64_t completion_tokens;        /* usage; -1 = none */
    char *endpoint;                   /* owned */
    int attempts;                     /* HTTP tries */
    double latency_ms;                /* queued to answered */
    char *faults;                     /* faults retried past, "" none; owned */
    char job_id[CR_TRAJ_ID];          /* "<task>/s<k>/t<t>" */
    Crucible__RewardRecord *record;   /* owned; NULL until judged */
    char *feedback;                   /* owned; NULL when the sample stopped here */
    int has_reward;                   /* the record has a reward */
    double reward;                    /* S_t */
    double ret;                       /* R_t (cr_credit_returns) */
    double adv;                       /* group-relative over (task, turn) */
} cr_turn_t;

typedef enum {
    CR_TRAJ_NEED_LLM = 0, /* the next turn's request is to be sent */
    CR_TRAJ_IN_LLM,       /* a request is out */
    CR_TRAJ_IN_JUDGE,     /* the last turn is with the judge */
    CR_TRAJ_DONE,         /* stopped: see stop */
} cr_traj_state_t;

typedef struct {
    char *task;                 /* task name, owned */
    int task_index;             /* into the driver's task table */
    uint32_t sample;            /* index within the group, from 0 */
    cr_turn_t *turns;           /* owned, nturns of them */
    uint32_t nturns;
    cr_traj_state_t state;
    char stop[16];              /* "target" | "turns" | "llm_error" | "unjudged" | "" */
    char *error;                /* why llm_error; owned */
} cr_traj_t;

/* Settings the outputs carry. Strings borrowed. */
typedef struct {
    const char *rollout_id;
    const char *model;
    const char *endpoints;      /* comma list */
    double temperature, top_p;
    int64_t max_tokens;
    uint32_t n;                 /* choices per first-turn request */
    int stream;
    const char *credit;         /* name@version */
    double gamma;
    const char *reward;         /* the judge's formula */
    const char *feedback;       /* template name */
    int64_t turns;              /* T */
} cr_traj_meta_t;

/* A new turn at the end of t (zeroed, turn number set). NULL on ENOMEM. */
cr_turn_t *cr_traj_add_turn(cr_traj_t *t);
/* Frees what t owns and zeroes it. */
void cr_traj_close(cr_traj_t *t);

/* ---- write-ahead log ---- */

typedef struct {
    FILE *f;       /* open for append; owned */
    char *path;    /* owned */
    int dirty;     /* lines written since the last sync */
} cr_wal_t;

/* Opens path for append (made 0600 when new) and, when it is new, writes
 * the start line. 0 or -errno. */
int cr_wal_open(cr_wal_t *w, const char *path, const cr_traj_meta_t *m);
void cr_wal_close(cr_wal_t *w);
/* Lines for a finished step; each is written and flushed whole (a SIGKILL
 * after the call loses nothing). 0 or -errno. */
int cr_wal_completion(cr_wal_t *w, const cr_traj_t *t, const cr_turn_t *u);
int cr_wal_judged(cr_wal_t *w, const cr_traj_t *t, const cr_turn_t *u);
int cr_wal_failed(cr_wal_t *w, const cr_traj_t *t, uint32_t turn, const char *error);
/* fdatasync when lines were written since the last call (a power cut then
 * loses at most one loop turn). */
void cr_wal_sync(cr_wal_t *w);

/* Reads path's events into the trajectories: find(arg, task, sample)
 * names the trajectory of a line (NULL = a task or sample no longer in
 * the rollout: skipped). *rollout_id gets the start line's id (len bytes).
 * Returns the lines applied (0 when the file does not exist), or CR_E_JSON
 * with err naming the line. */
int cr_wal_load(const char *path, cr_traj_t *(*find)(void *arg, const char *task,
                                                     uint32_t sample),
                void *arg, char *rollout_id, size_t len, char *err, size_t errlen);

/* ---- outputs ---- */

/* One trajectory as a JSON object (the JSONL line). NULL on ENOMEM. */
json_t *cr_traj_json(const cr_traj_t *t, const cr_traj_meta_t *m, const char *batch);

/* Writes the trajectories to path, replacing it atomically: JSONL
 * (pb = 0) or length-delimited Trajectory messages (pb = 1). 0 or -errno. */
int cr_traj_write(const char *path, int pb, cr_traj_t *const *ts, size_t n,
                  const cr_traj_meta_t *m, const char *batch);

#endif
