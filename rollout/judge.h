/* judge.h — a rollout's side of the cluster: turns submitted as jobs of one
 * batch, their records streamed back.
 *
 * Jobs are queued with cr_judge_submit and sent by cr_judge_run as one
 * Submit per step (subscribe off), followed by Subscribe{after_seq = the
 * last seq seen, follow}: the coordinator replays what this connection has
 * not seen and streams the rest, so each record is handed over once. A job
 * keeps its spec until its record comes: when the coordinator falls silent
 * (heartbeat-ms x liveness without a word while jobs are out) the client
 * reconnects and sends every such job again, which is idempotent (a job id
 * the batch knows is counted duplicate, never judged twice). A record of a
 * job not pending here (one an earlier run of the same rollout already
 * wrote down) is skipped. */
#ifndef CR_JUDGE_H
#define CR_JUDGE_H

#include "config.h"
#include "crucible.pb-c.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cr_judge cr_judge_t;

/* Called once per pending job with its record (borrowed for the call). */
typedef void (*cr_judge_record_fn)(void *arg, const Crucible__RewardRecord *rec);

typedef struct {
    uint64_t submitted;  /* jobs sent (resends included) */
    uint64_t accepted;   /* SubmitAck: new jobs queued */
    uint64_t duplicate;  /* SubmitAck: already known to the batch (not judged again) */
    uint64_t records;    /* records handed to the callback */
    uint64_t skipped;    /* records of jobs not pending here */
    uint32_t reconnects; /* times the coordinator fell silent */
    uint32_t errors;     /* Error replies */
} cr_judge_stats_t;

/* Connects to endpoint (NULL = cfg's clients endpoint, with its security)
 * for batch. cfg (borrowed, must outlive the judge) gives the job options and
 * the silence. Returns NULL when the socket cannot be made (logged). */
cr_judge_t *cr_judge_new(const cr_config_t *cfg, const char *endpoint, const char *batch,
                         cr_judge_record_fn fn, void *arg);
void cr_judge_destroy(cr_judge_t **self_p);

/* Makes a task known (bundle borrowed; it must outlive the judge). 0 or -ENOMEM. */
int cr_judge_add_task(cr_judge_t *j, Crucible__TaskBundle *b);

/* Queues a job (strings copied). 0, -ENOMEM, or CR_E_NOT_FOUND for an
 * unknown task. */
int cr_judge_submit(cr_judge_t *j, const char *job_id, const char *task, const char *source,
                    const char *group_id, uint32_t sample, uint32_t turn);

/* One step, never blocking: sends what is queued, hands over what came,
 * reconnects after silence. Returns 0, or CR_E_ZMQ when the socket failed. */
int cr_judge_run(cr_judge_t *j);

/* The socket's file descriptor for poll (ZMQ_FD, edge-triggered: call
 * cr_judge_run whenever it or a timeout fires). -1 on error. */
int cr_judge_fd(cr_judge_t *j);

size_t cr_judge_pending(const cr_judge_t *j);
void cr_judge_stats(const cr_judge_t *j, cr_judge_stats_t *s);

#endif
