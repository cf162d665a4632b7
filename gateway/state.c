/* state.c — the gateway's batch table and its broker thread; see gw.h. */
#define _GNU_SOURCE
#include "gw.h"

#include "client.h"
#include "error.h"
#include "log.h"
#include "record.h"
#include "timeutil.h"
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

/* ------------------------------------------------------------------ table */

cr__gw_batch_t *cr__gw_find(cr__gw_t *g, const char *id)
{
    json_t *v = json_object_get(g->by_id, id);
    return v ? (cr__gw_batch_t *)(intptr_t)json_integer_value(v) : NULL;
}

cr__gw_batch_t *cr__gw_add(cr__gw_t *g, const char *id)
{
    cr__gw_batch_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    snprintf(b->id, sizeof b->id, "%s", id);
    b->index = json_object();
    b->groups = json_array();
    b->errors = json_array();
    b->t_created_ms = cr_time_mono_ms();
    if (!b->index || !b->groups || !b->errors) {
        cr__gw_batch_free(b);
        return NULL;
    }
    if (json_object_set_new(g->by_id, b->id, json_integer((json_int_t)(intptr_t)b)) != 0) {
        cr__gw_batch_free(b);
        return NULL;
    }
    b->next = g->batches;
    g->batches = b;
    g->nbatches++;
    return b;
}

long cr__gw_job(cr__gw_batch_t *b, const char *job_id, int add)
{
    json_t *v = json_object_get(b->index, job_id);
    if (v)
        return (long)json_integer_value(v);
    if (!add)
        return -1;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 8;
        void *p[8] = {realloc(b->job_ids, cap * sizeof *b->job_ids), NULL};
        if (p[0])
            b->job_ids = p[0];
        p[1] = realloc(b->rec, cap * sizeof *b->rec);
        if (p[1])
            b->rec = p[1];
        p[2] = realloc(b->rec_seq, cap * sizeof *b->rec_seq);
        if (p[2])
            b->rec_seq = p[2];
        p[3] = realloc(b->reward_v, cap * sizeof *b->reward_v);
        if (p[3])
            b->reward_v = p[3];
        p[4] = realloc(b->has_reward, cap * sizeof *b->has_reward);
        if (p[4])
            b->has_reward = p[4];
        p[5] = realloc(b->status, cap * sizeof *b->status);
        if (p[5])
            b->status = p[5];
        p[6] = realloc(b->order, cap * sizeof *b->order);
        if (p[6])
            b->order = p[6];
        for (int i = 0; i < 7; i++)
            if (!p[i])
                return -1;
        b->cap = cap;
    }
    size_t i = b->n;
    b->job_ids[i] = strdup(job_id);
    if (!b->job_ids[i] || json_object_set_new(b->index, job_id, json_integer((json_int_t)i)) != 0) {
        free(b->job_ids[i]);
        return -1;
    }
    b->rec[i] = NULL;
    b->rec_seq[i] = 0;
    b->reward_v[i] = 0;
    b->has_reward[i] = 0;
    b->status[i] = 0;
    b->n++;
    return (long)i;
}

void cr__gw_free_submit(cr__gw_batch_t *b)
{
    for (size_t i = 0; i < b->ntasks; i++)
        if (b->task_owned && b->task_owned[i])
            crucible__task_bundle__free_unpacked(b->tasks[i], NULL);
    free(b->tasks);
    free(b->task_owned);
    b->tasks = NULL;
    b->task_owned = NULL;
    b->ntasks = 0;
    for (size_t i = 0; i < b->njobs_spec; i++)
        crucible__job_spec__free_unpacked(b->jobs[i], NULL);
    free(b->jobs);
    b->jobs = NULL;
    b->njobs_spec = 0;
}

void cr__gw_batch_free(cr__gw_batch_t *b)
{
    if (!b)
        return;
    cr__gw_free_submit(b);
    for (size_t i = 0; i < b->n; i++) {
        free(b->job_ids[i]);
        free(b->rec[i]);
    }
    free(b->job_ids);
    free(b->rec);
    free(b->rec_seq);
    free(b->reward_v);
    free(b->has_reward);
    free(b->status);
    free(b->order);
    free(b->need_cancel);
    json_decref(b->index);
    json_decref(b->groups);
    json_decref(b->errors);
    free(b);
}

Crucible__TaskBundle *cr__gw_loaded(cr__gw_t *g, const char *name)
{
    for (size_t i = 0; i < g->nloaded; i++)
        if (strcmp(g->loaded[i]->name, name) == 0)
            return g->loaded[i];
    return NULL;
}

void cr__gw_wake(cr__gw_t *g)
{
    uint64_t one = 1;
    ssize_t n = write(g->wake_fd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is already non-zero, the broker wakes anyway */
}

/* ----------------------------------------------------------------- broker */

/* The HTTP status a coordinator's Error code maps to. */
static int s_http_for(const char *code)
{
    if (strcmp(code, "E_NOT_FOUND") == 0)
        return 404;
    if (strcmp(code, "E_TOO_BIG") == 0)
        return 413;
    if (strcmp(code, "E_LIMIT") == 0)
        return 429; /* the queue limit: try again later */
    if (strcmp(code, "E_DUPLICATE") == 0 || strcmp(code, "E_TASK") == 0 ||
        strcmp(code, "E_USAGE") == 0 || strcmp(code, "E_JSON") == 0)
        return 400;
    return 502;
}

static void s_on_result(cr__gw_t *g, const Crucible__RewardRecord *r)
{
    cr__gw_batch_t *b = r ? cr__gw_find(g, r->batch_id) : NULL;
    if (!b || r->seq <= b->last_seq)
        return; /* a batch we dropped, or a replayed duplicate (note 2) */
    long i = cr__gw_job(b, r->job_id, 1);
    if (i < 0)
        return;
    char *j = cr_record_to_json(r);
    if (!j)
        return;
    b->last_seq = r->seq;
    if (b->rec[i]) {
        /* a second record of one job (a new attempt after a coordinator
         * restart is stored once; keep the newer one) */
        free(b->rec[i]);
    } else {
        b->order[b->ndone++] = (size_t)i;
    }
    b->rec[i] = j;
    b->rec_seq[i] = r->seq;
    b->has_reward[i] = r->has_reward;
    b->reward_v[i] = r->reward;
    b->status[i] = r->status;
}

/* Writes the group's advantages into its members' record text. */
static void s_patch_advantage(cr__gw_batch_t *b, const char *job_id, double adv)
{
    long i = cr__gw_job(b, job_id, 0);
    if (i < 0 || !b->rec[i])
        return;
    json_t *o = json_loads(b->rec[i], 0, NULL);
    if (!o)
        return;
    json_object_set_new(o, "advantage", json_real(adv));
    char *t = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (t) {
        free(b->rec[i]);
        b->rec[i] = t;
    }
}

static void s_on_group(cr__gw_t *g, const Crucible__GroupDone *gd)
{
    cr__gw_batch_t *b = cr__gw_find(g, gd->batch_id);
    if (!b)
        return;
    /* a replay after a reconnect: already recorded */
    size_t k;
    json_t *v;
    json_array_foreach(b->groups, k, v)
        if (strcmp(json_string_value(json_object_get(v, "group_id")), gd->group_id) == 0)
            return;
    json_t *o = json_object(), *ids = json_array(), *rw = json_array(), *adv = json_array();
    for (size_t i = 0; i < gd->n_job_ids; i++) {
        json_array_append_new(ids, json_string(gd->job_ids[i]));
        long ji = cr__gw_job(b, gd->job_ids[i], 0);
        /* a member without a reward (infrastructure) is null, as in its record */
        int has = ji >= 0 && b->has_reward[ji];
        json_array_append_new(rw, has && i < gd->n_rewards ? json_real(gd->rewards[i]) : json_null());
        double a = i < gd->n_advantages ? gd->advantages[i] : 0;
        json_array_append_new(adv, json_real(a));
        s_patch_advantage(b, gd->job_ids[i], a);
    }
    json_object_set_new(o, "group_id", json_string(gd->group_id));
    json_object_set_new(o, "job_ids", ids);
    json_object_set_new(o, "rewards", rw);
    json_object_set_new(o, "advantages", adv);
    json_object_set_new(o, "seq", json_integer((json_int_t)b->last_seq));
    json_array_append_new(b->groups, o);
}

static void s_on_envelope(cr__gw_t *g, const Crucible__Envelope *env)
{
    switch (env->body_case) {
    case CRUCIBLE__ENVELOPE__BODY_RESULT:
        s_on_result(g, env->result->record);
        break;
    case CRUCIBLE__ENVELOPE__BODY_GROUP_DONE:
        s_on_group(g, env->group_done);
        break;
    case CRUCIBLE__ENVELOPE__BODY_BATCH_DONE: {
        cr__gw_batch_t *b = cr__gw_find(g, env->batch_done->batch_id);
        if (b && !b->done) {
            b->done = 1;
            b->total = env->batch_done->total;
            b->t_finished_ms = cr_time_mono_ms();
        }
        break;
    }
    case CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK: {
        const Crucible__SubmitAck *a = env->submit_ack;
        cr__gw_batch_t *b = cr__gw_find(g, a->batch_id);
        if (!b || b->state == CR__GW_ACKED)
            break;
        b->state = CR__GW_ACKED;
        b->accepted = a->accepted;
        b->duplicate = a->duplicate;
        b->rejected = a->rejected;
        for (size_t i = 0; i < a->n_errors; i++)
            json_array_append_new(b->errors, json_string(a->errors[i]));
        cr__gw_free_submit(b); /* stored: a reconnect only subscribes again */
        break;
    }
    case CRUCIBLE__ENVELOPE__BODY_CANCEL_ACK: {
        cr__gw_batch_t *b = cr__gw_find(g, env->cancel_ack->batch_id);
        if (b) {
            b->cancelled = env->cancel_ack->cancelled;
            b->cancel_gen++;
        }
        break;
    }
    case CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY: {
        const Crucible__StatusReply *r = env->status_reply;
        if (r->batch_id && r->batch_id[0])
            break; /* batches are counted here, from their records */
        json_t *o = json_object(), *ws = json_array();
        json_object_set_new(o, "queue_depth", json_integer(r->queue_depth));
        json_object_set_new(o, "running", json_integer(r->running));
        json_object_set_new(o, "done", json_integer((json_int_t)r->done));
        json_object_set_new(o, "jobs_per_minute", json_real(r->jobs_per_minute));
        for (size_t i = 0; i < r->n_workers; i++) {
            const Crucible__WorkerInfo *w = r->workers[i];
            json_t *wo = json_object();
            json_object_set_new(wo, "worker_id", json_string(w->worker_id));
            json_object_set_new(wo, "host", json_string(w->host));
            json_object_set_new(wo, "device", json_string(w->device));
            json_object_set_new(wo, "credit", json_integer(w->credit));
            json_object_set_new(wo, "in_flight", json_integer(w->in_flight));
            json_object_set_new(wo, "done", json_integer((json_int_t)w->done));
            json_object_set_new(wo, "draining", json_boolean(w->draining));
            json_array_append_new(ws, wo);
        }
        json_object_set_new(o, "workers", ws);
        free(g->status_json);
        g->status_json = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        g->status_gen++;
        break;
    }
    case CRUCIBLE__ENVELOPE__BODY_ERROR: {
        const Crucible__Error *e = env->error;
        cr__gw_batch_t *b = e->batch_id && e->batch_id[0] ? cr__gw_find(g, e->batch_id) : NULL;
        if (!b) {
            cr_warn("coordinator: %s: %s", e->code, e->message);
            break;
        }
        if (b->state != CR__GW_ACKED || b->adopted) {
            b->state = CR__GW_FAILED;
            b->http_status = s_http_for(e->code);
            snprintf(b->error, sizeof b->error, "%s: %s", e->code, e->message);
            b->t_finished_ms = cr_time_mono_ms();
            cr__gw_free_submit(b);
        } else {
            cr_warn("batch %s: coordinator: %s: %s", b->id, e->code, e->message);
        }
        break;
    }
    default:
        break; /* Heartbeat: a sign of life, counted by the caller */
    }
}

/* Sends the work handlers asked for. Under mu. Returns CR_E_ZMQ when the
 * socket failed (the broker then reconnects). */
static int s_send_work(cr__gw_t *g, cr_client_t *c)
{
    int rc = 0;
    if (g->need_status) {
        g->need_status = 0;
        rc = cr_client_status(c, "");
    }
    for (cr__gw_batch_t *b = g->batches; b && rc != CR_E_ZMQ; b = b->next) {
        if (b->need_submit) {
            b->need_submit = 0;
            rc = cr_client_submit(c, b->id, b->tasks, b->ntasks, b->jobs, b->njobs_spec,
                                  &b->opts, 0);
            if (rc == CR_E_TOO_BIG) {
                b->state = CR__GW_FAILED;
                b->http_status = 413;
                snprintf(b->error, sizeof b->error,
                         "E_TOO_BIG: the batch exceeds --max-msg: split it");
                b->t_finished_ms = cr_time_mono_ms();
                rc = 0;
                continue;
            }
            if (b->state == CR__GW_NEW)
                b->state = CR__GW_SENT;
        }
        if (b->need_subscribe && rc == 0) {
            b->need_subscribe = 0;
            rc = cr_client_subscribe(c, b->id, b->last_seq, 1);
        }
        if (b->need_cancel && rc == 0) {
            rc = cr_client_cancel(c, b->id, b->need_cancel);
            free(b->need_cancel);
            b->need_cancel = NULL;
        }
    }
    return rc == CR_E_ZMQ ? rc : 0;
}

/* Whether the coordinator owes us messages (note 4). Under mu. */
static int s_owed(cr__gw_t *g)
{
    for (cr__gw_batch_t *b = g->batches; b; b = b->next)
        if (b->state == CR__GW_SENT || (b->state != CR__GW_FAILED && !b->done))
            return 1;
    return 0;
}

/* After a reconnect: every unfinished entry again (note 4). Under mu. */
static void s_resume_all(cr__gw_t *g)
{
    for (cr__gw_batch_t *b = g->batches; b; b = b->next) {
        if (b->state == CR__GW_FAILED || b->done)
            continue;
        if (b->state == CR__GW_SENT || b->state == CR__GW_NEW)
            b->need_submit = b->njobs_spec > 0;
        b->need_subscribe = 1;
    }
}

/* Frees entries no handler holds, finished keep_s ago (note 3). Under mu. */
static void s_cron(cr__gw_t *g)
{
    int64_t now = cr_time_mono_ms(), keep = (int64_t)(g->cfg->keep_s * 1000);
    for (cr__gw_batch_t **pp = &g->batches; *pp;) {
        cr__gw_batch_t *b = *pp;
        int finished = b->done || b->state == CR__GW_FAILED;
        if (b->refs == 0 && finished && b->t_finished_ms && now - b->t_finished_ms > keep) {
            *pp = b->next;
            g->nbatches--;
            json_object_del(g->by_id, b->id);
            cr__gw_batch_free(b);
        } else {
            pp = &b->next;
        }
    }
}

void *cr__gw_broker(void *arg)
{
    cr__gw_t *g = arg;
    cr_client_t *c = cr_client_new_cfg(g->cfg);
    if (!c) {
        cr_error("gateway: cannot reach the coordinator at %s: every request will time out",
                 g->cfg->clients_endpoint);
        return NULL;
    }
    int64_t silence = g->cfg->heartbeat_ms * g->cfg->liveness;
    int64_t heard = cr_time_mono_ms(), last_cron = heard;
    for (;;) {
        pthread_mutex_lock(&g->mu);
        int stop = g->stop;
        int rc = stop ? 0 : s_send_work(g, c);
        int owed = s_owed(g);
        pthread_mutex_unlock(&g->mu);
        if (stop)
            break;
        int64_t now = cr_time_mono_ms();
        if (rc == CR_E_ZMQ || (owed && now - heard > silence)) {
            cr_warn("gateway: no word from the coordinator for %lld ms: reconnecting",
                    (long long)(now - heard));
            heard = now;
            if (cr_client_reconnect(c) == 0) {
                pthread_mutex_lock(&g->mu);
                g->connected = 0;
                s_resume_all(g);
                pthread_mutex_unlock(&g->mu);
            }
            continue;
        }
        if (!owed)
            heard = now; /* nothing is owed: silence is expected */
        zmq_pollitem_t items[2] = {{cr_client_socket(c), 0, ZMQ_POLLIN, 0},
                                   {NULL, g->wake_fd, ZMQ_POLLIN, 0}};
        /* records of a batch already received are handed out without a poll */
        int n = zmq_poll(items, 2, cr_client_pending(c) ? 0 : 200);
        if (n < 0 && zmq_errno() != EINTR)
            cr_warn("gateway: poll: %s", zmq_strerror(zmq_errno()));
        if (items[1].revents & ZMQ_POLLIN) {
            uint64_t v;
            ssize_t k = read(g->wake_fd, &v, sizeof v);
            (void)k;
        }
        if ((items[0].revents & ZMQ_POLLIN) || cr_client_pending(c)) {
            /* everything queued, in one lock: a step's records come in bursts */
            pthread_mutex_lock(&g->mu);
            for (int i = 0; i < 4096; i++) {
                Crucible__Envelope *env = NULL;
                int r = cr_client_recv(c, 0, &env);
                if (r != 0)
                    break;
                heard = cr_time_mono_ms();
                g->connected = 1;
                s_on_envelope(g, env);
                cr_wire_free(&env);
            }
            pthread_cond_broadcast(&g->cond);
            pthread_mutex_unlock(&g->mu);
        }
        if (cr_time_mono_ms() - last_cron > 1000) {
            last_cron = cr_time_mono_ms();
            pthread_mutex_lock(&g->mu);
            s_cron(g);
            pthread_mutex_unlock(&g->mu);
        }
    }
    cr_client_destroy(&c);
    return NULL;
}
