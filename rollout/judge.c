/* judge.c — the cluster side of a rollout; see judge.h. */
#define _GNU_SOURCE
#include "judge.h"

#include "client.h"
#include "error.h"
#include "log.h"
#include "timeutil.h"
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define S_CHUNK 2000          /* jobs per Submit: the coordinator's default max-submit-jobs */
#define S_RESUB_MS 200        /* at most one re-Subscribe after BatchDone per 200 ms */
#define S_ERROR_RETRY_MS 1000 /* after an Error reply, send the pending jobs again in 1 s */

typedef struct {
    Crucible__JobSpec *spec; /* owned (strings malloc'd) */
    int sent;                /* in a Submit since the last (re)connect */
} s_job_t;

struct cr_judge {
    const cr_config_t *cfg;       /* borrowed */
    cr_client_t *client;          /* owned */
    char *batch;                  /* owned */
    Crucible__JobOptions opts;    /* strings borrowed from cfg */
    Crucible__TaskBundle **tasks; /* borrowed bundles */
    size_t ntasks;
    s_job_t *jobs;                /* pending, owned */
    size_t njobs, cap;
    uint64_t last_seq;            /* highest seq handed over or skipped */
    int64_t last_heard_ms;        /* monotonic ms of the last message */
    int64_t silence_ms;           /* reconnect after this long without a word */
    int64_t resub_due_ms;         /* re-Subscribe at this time; 0 = not due */
    int64_t resend_due_ms;        /* send every pending job again at this time; 0 = not due */
    cr_judge_record_fn fn;
    void *arg;
    cr_judge_stats_t st;
};

cr_judge_t *cr_judge_new(const cr_config_t *cfg, const char *endpoint, const char *batch,
                         cr_judge_record_fn fn, void *arg)
{
    cr_judge_t *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->cfg = cfg;
    j->fn = fn;
    j->arg = arg;
    j->batch = strdup(batch);
    j->client = endpoint ? cr_client_new(endpoint, (size_t)cfg->max_msg) : cr_client_new_cfg(cfg);
    if (!j->batch || !j->client) {
        cr_judge_destroy(&j);
        return NULL;
    }
    cr_client_job_options(cfg, &j->opts);
    j->silence_ms = cfg->heartbeat_ms * cfg->liveness;
    j->last_heard_ms = cr_time_mono_ms();
    return j;
}

void cr_judge_destroy(cr_judge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_judge_t *j = *self_p;
    for (size_t i = 0; i < j->njobs; i++)
        crucible__job_spec__free_unpacked(j->jobs[i].spec, NULL);
    free(j->jobs);
    free(j->tasks);
    cr_client_destroy(&j->client);
    free(j->batch);
    free(j);
    *self_p = NULL;
}

int cr_judge_add_task(cr_judge_t *j, Crucible__TaskBundle *b)
{
    Crucible__TaskBundle **t = realloc(j->tasks, (j->ntasks + 1) * sizeof *t);
    if (!t)
        return -ENOMEM;
    j->tasks = t;
    j->tasks[j->ntasks++] = b;
    return 0;
}

static Crucible__TaskBundle *s_task(const cr_judge_t *j, const char *name)
{
    for (size_t i = 0; i < j->ntasks; i++)
        if (strcmp(j->tasks[i]->name, name) == 0)
            return j->tasks[i];
    return NULL;
}

int cr_judge_submit(cr_judge_t *j, const char *job_id, const char *task, const char *source,
                    const char *group_id, uint32_t sample, uint32_t turn)
{
    if (!s_task(j, task))
        return CR_E_NOT_FOUND;
    if (j->njobs == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 64;
        s_job_t *p = realloc(j->jobs, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        j->jobs = p;
        j->cap = cap;
    }
    Crucible__JobSpec *s = malloc(sizeof *s);
    if (!s)
        return -ENOMEM;
    crucible__job_spec__init(s);
    s->job_id = strdup(job_id);
    s->task = strdup(task);
    s->source = strdup(source);
    s->group_id = strdup(group_id ? group_id : "");
    s->sample_index = sample;
    s->turn = turn;
    if (!s->job_id || !s->task || !s->source || !s->group_id) {
        crucible__job_spec__free_unpacked(s, NULL);
        return -ENOMEM;
    }
    j->jobs[j->njobs++] = (s_job_t){.spec = s, .sent = 0};
    return 0;
}

/* Sends the unsent jobs (in Submits of S_CHUNK), then Subscribe. */
static int s_flush(cr_judge_t *j)
{
    size_t unsent = 0;
    for (size_t i = 0; i < j->njobs; i++)
        unsent += !j->jobs[i].sent;
    if (!unsent)
        return 0;
    Crucible__JobSpec **specs = malloc(unsent * sizeof *specs);
    Crucible__TaskBundle **tasks = malloc((j->ntasks ? j->ntasks : 1) * sizeof *tasks);
    int rc = specs && tasks ? 0 : -ENOMEM;
    size_t i = 0;
    while (rc == 0 && i < j->njobs) {
        size_t n = 0, nt = 0;
        for (; i < j->njobs && n < S_CHUNK; i++) {
            if (j->jobs[i].sent)
                continue;
            specs[n++] = j->jobs[i].spec;
            Crucible__TaskBundle *b = s_task(j, j->jobs[i].spec->task);
            size_t k = 0;
            while (k < nt && tasks[k] != b)
                k++;
            if (k == nt)
                tasks[nt++] = b;
        }
        if (!n)
            break;
        rc = cr_client_submit(j->client, j->batch, tasks, nt, specs, n, &j->opts, 0);
        if (rc == 0) {
            j->st.submitted += n;
            for (size_t k = 0; k < j->njobs; k++)
                for (size_t m = 0; m < n; m++)
                    if (j->jobs[k].spec == specs[m])
                        j->jobs[k].sent = 1;
        }
    }
    free(specs);
    free(tasks);
    if (rc == 0)
        rc = cr_client_subscribe(j->client, j->batch, j->last_seq, 1);
    if (rc != 0)
        cr_warn("batch %s: submit to the coordinator failed: %s (retried)", j->batch,
                cr_strerror(rc));
    return rc;
}

/* Hands rec over when its job is pending here. */
static void s_on_record(cr_judge_t *j, const Crucible__RewardRecord *rec)
{
    if (rec->seq && rec->seq <= j->last_seq)
        return; /* seen: a replay that overlapped */
    if (rec->seq > j->last_seq)
        j->last_seq = rec->seq;
    for (size_t i = 0; i < j->njobs; i++) {
        if (strcmp(j->jobs[i].spec->job_id, rec->job_id) != 0)
            continue;
        Crucible__JobSpec *s = j->jobs[i].spec;
        j->jobs[i] = j->jobs[--j->njobs];
        j->st.records++;
        j->fn(j->arg, rec);
        crucible__job_spec__free_unpacked(s, NULL);
        return;
    }
    j->st.skipped++;
}

int cr_judge_run(cr_judge_t *j)
{
    int64_t now = cr_time_mono_ms();
    if (j->resend_due_ms && now >= j->resend_due_ms) {
        j->resend_due_ms = 0;
        for (size_t i = 0; i < j->njobs; i++)
            j->jobs[i].sent = 0;
    }
    if (s_flush(j) != 0 && !j->resend_due_ms)
        j->resend_due_ms = now + S_ERROR_RETRY_MS;
    if (j->resub_due_ms && now >= j->resub_due_ms) {
        j->resub_due_ms = 0;
        if (j->njobs)
            cr_client_subscribe(j->client, j->batch, j->last_seq, 1);
    }
    /* bounded: a flood never starves the LLM side; the records of a Result
     * already received are all taken (its fd would not say they wait) */
    for (int k = 0; k < 10000 || cr_client_pending(j->client); k++) {
        Crucible__Envelope *env = NULL;
        int rc = cr_client_recv(j->client, 0, &env);
        if (rc == -EAGAIN || rc == -EINTR)
            break;
        if (rc == CR_E_ZMQ)
            return rc;
        if (rc != 0)
            continue; /* undecodable: logged by the client */
        j->last_heard_ms = cr_time_mono_ms();
        switch (env->body_case) {
        case CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK:
            j->st.accepted += env->submit_ack->accepted;
            j->st.duplicate += env->submit_ack->duplicate;
            for (size_t i = 0; i < env->submit_ack->n_errors; i++)
                cr_warn("batch %s: %s", j->batch, env->submit_ack->errors[i]);
            break;
        case CRUCIBLE__ENVELOPE__BODY_RESULT:
            if (env->result->record)
                s_on_record(j, env->result->record);
            break;
        case CRUCIBLE__ENVELOPE__BODY_BATCH_DONE:
            /* the subscription ended with the jobs the batch had then; later
             * ones need a new one */
            if (j->njobs)
                j->resub_due_ms = j->last_heard_ms + S_RESUB_MS;
            break;
        case CRUCIBLE__ENVELOPE__BODY_ERROR:
            j->st.errors++;
            cr_warn("batch %s: coordinator: %s %s (pending jobs sent again in %d ms)", j->batch,
                    env->error->code, env->error->message, S_ERROR_RETRY_MS);
            j->resend_due_ms = j->last_heard_ms + S_ERROR_RETRY_MS;
            break;
        default:
            break; /* Heartbeat, GroupDone: a sign of life */
        }
        cr_wire_free(&env);
    }
    now = cr_time_mono_ms();
    int out = 0;
    for (size_t i = 0; i < j->njobs && !out; i++)
        out = j->jobs[i].sent;
    if (!out)
        j->last_heard_ms = now; /* nothing owed: silence is expected */
    else if (now - j->last_heard_ms > j->silence_ms) {
        cr_warn("batch %s: coordinator silent for %lld ms with %zu jobs out: reconnecting and "
                "sending them again", j->batch, (long long)(now - j->last_heard_ms), j->njobs);
        j->st.reconnects++;
        if (cr_client_reconnect(j->client) == 0)
            for (size_t i = 0; i < j->njobs; i++)
                j->jobs[i].sent = 0;
        j->last_heard_ms = now;
    }
    return 0;
}

int cr_judge_fd(cr_judge_t *j)
{
    int fd = -1;
    size_t len = sizeof fd;
    if (zmq_getsockopt(cr_client_socket(j->client), ZMQ_FD, &fd, &len) != 0)
        return -1;
    return fd;
}

size_t cr_judge_pending(const cr_judge_t *j)
{
    return j->njobs;
}

void cr_judge_stats(const cr_judge_t *j, cr_judge_stats_t *s)
{
    *s = j->st;
}
