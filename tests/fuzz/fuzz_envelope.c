/* fuzz_envelope.c — libFuzzer harness for the wire decoder.
 *
 * Any bytes a peer can send go through cr_wire_unpack; a decoded envelope is
 * then walked the way the coordinator, worker and client handlers read it:
 * every body case, every nested message, every repeated field, the task
 * bundles through cr_task_parse and the records through cr_record_to_json.
 * A valid envelope must also survive pack → unpack unchanged in size.
 *
 * Built two ways: with -fsanitize=fuzzer (tests/fuzz/run.sh, CRUCIBLE_FUZZ)
 * and #included by tests/test_fuzz_regress.c, which renames the entry point
 * and replays tests/fuzz/regressions/ without libFuzzer. */
#include "error.h"
#include "record.h"
#include "task.h"
#include "wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Keeps the optimizer from dropping reads whose only purpose is ASan's check. */
static volatile size_t s_env_sink;

static void s_env_touch_str(const char *s)
{
    if (s)
        s_env_sink += strlen(s);
}

static void s_env_task(const Crucible__TaskBundle *tb)
{
    if (!tb)
        return;
    s_env_touch_str(tb->name);
    s_env_touch_str(tb->reference_source);
    s_env_touch_str(tb->baseline_source);
    s_env_touch_str(tb->hash);
    cr_task_t *t = NULL;
    char err[256];
    if (tb->task_json && cr_task_parse(tb->task_json, "fuzz", &t, err, sizeof err) == 0)
        cr_task_destroy(&t);
}

static void s_env_options(const Crucible__JobOptions *o)
{
    if (!o)
        return;
    s_env_touch_str(o->reward);
    s_env_touch_str(o->clock_policy);
    s_env_sink += o->max_attempts + (size_t)o->ref_policy;
}

static void s_env_spec(const Crucible__JobSpec *j)
{
    if (!j)
        return;
    s_env_touch_str(j->job_id);
    s_env_touch_str(j->task);
    s_env_touch_str(j->source);
    s_env_touch_str(j->group_id);
}

static void s_env_record(const Crucible__RewardRecord *r)
{
    if (!r)
        return;
    s_env_sink += strlen(cr_status_name(r->status)) + (size_t)cr_status_is_infra(r->status);
    for (size_t i = 0; i < r->n_hack_flags; i++)
        s_env_touch_str(r->hack_flags[i]);
    if (r->verify)
        for (size_t i = 0; i < r->verify->n_cases; i++)
            if (r->verify->cases[i])
                s_env_touch_str(r->verify->cases[i]->message);
    if (r->profile)
        for (size_t i = 0; i < r->profile->n_cases; i++)
            if (r->profile->cases[i])
                s_env_sink += r->profile->cases[i]->case_index;
    char *js = cr_record_to_json(r);
    if (js) {
        /* what the client writes it must read back */
        Crucible__RewardRecord *back = NULL;
        char err[256];
        if (cr_record_from_json(js, &back, err, sizeof err) != 0)
            abort();
        crucible__reward_record__free_unpacked(back, NULL);
        free(js);
    }
}

static void s_env_walk(const Crucible__Envelope *env)
{
    s_env_touch_str(cr_wire_body_name(env));
    switch (env->body_case) {
    case CRUCIBLE__ENVELOPE__BODY_READY: {
        const Crucible__Ready *m = env->ready;
        s_env_touch_str(m->worker_id);
        s_env_touch_str(m->host);
        for (size_t i = 0; i < m->n_backends; i++)
            s_env_touch_str(m->backends[i]);
        s_env_touch_str(m->device_name);
        s_env_touch_str(m->arch);
        s_env_touch_str(m->compiler);
        break;
    }
    case CRUCIBLE__ENVELOPE__BODY_HEARTBEAT:
        s_env_sink += env->heartbeat->in_flight;
        break;
    case CRUCIBLE__ENVELOPE__BODY_ASSIGN:
        for (size_t i = 0; i < env->assign->n_jobs; i++) {
            const Crucible__Job *j = env->assign->jobs[i];
            s_env_touch_str(j->batch_id);
            s_env_spec(j->spec);
            s_env_task(j->task);
            s_env_options(j->options);
        }
        break;
    case CRUCIBLE__ENVELOPE__BODY_RESULT:
        s_env_record(env->result->record);
        break;
    case CRUCIBLE__ENVELOPE__BODY_ACK:
        s_env_touch_str(env->ack->batch_id);
        s_env_touch_str(env->ack->job_id);
        break;
    case CRUCIBLE__ENVELOPE__BODY_DISCONNECT:
        s_env_touch_str(env->disconnect->reason);
        break;
    case CRUCIBLE__ENVELOPE__BODY_SUBMIT: {
        const Crucible__Submit *m = env->submit;
        s_env_touch_str(m->batch_id);
        for (size_t i = 0; i < m->n_tasks; i++)
            s_env_task(m->tasks[i]);
        for (size_t i = 0; i < m->n_jobs; i++)
            s_env_spec(m->jobs[i]);
        s_env_options(m->options);
        break;
    }
    case CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK:
        for (size_t i = 0; i < env->submit_ack->n_errors; i++)
            s_env_touch_str(env->submit_ack->errors[i]);
        break;
    case CRUCIBLE__ENVELOPE__BODY_SUBSCRIBE:
        s_env_touch_str(env->subscribe->batch_id);
        break;
    case CRUCIBLE__ENVELOPE__BODY_GROUP_DONE: {
        const Crucible__GroupDone *m = env->group_done;
        s_env_touch_str(m->group_id);
        for (size_t i = 0; i < m->n_job_ids; i++)
            s_env_touch_str(m->job_ids[i]);
        for (size_t i = 0; i < m->n_rewards; i++)
            s_env_sink += (size_t)(m->rewards[i] != 0);
        for (size_t i = 0; i < m->n_advantages; i++)
            s_env_sink += (size_t)(m->advantages[i] != 0);
        break;
    }
    case CRUCIBLE__ENVELOPE__BODY_BATCH_DONE:
        for (size_t i = 0; i < env->batch_done->n_by_status; i++)
            s_env_touch_str(env->batch_done->by_status[i]->key);
        break;
    case CRUCIBLE__ENVELOPE__BODY_STATUS_REQUEST:
        s_env_touch_str(env->status_request->batch_id);
        break;
    case CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY: {
        const Crucible__StatusReply *m = env->status_reply;
        for (size_t i = 0; i < m->n_workers; i++) {
            s_env_touch_str(m->workers[i]->worker_id);
            for (size_t k = 0; k < m->workers[i]->n_backends; k++)
                s_env_touch_str(m->workers[i]->backends[k]);
        }
        for (size_t i = 0; i < m->n_by_status; i++)
            s_env_touch_str(m->by_status[i]->key);
        for (size_t i = 0; i < m->n_hack_flags; i++)
            s_env_touch_str(m->hack_flags[i]->key);
        break;
    }
    case CRUCIBLE__ENVELOPE__BODY_CANCEL:
        s_env_touch_str(env->cancel->job_id);
        break;
    case CRUCIBLE__ENVELOPE__BODY_CANCEL_ACK:
        s_env_touch_str(env->cancel_ack->batch_id);
        break;
    case CRUCIBLE__ENVELOPE__BODY_ERROR:
        s_env_touch_str(env->error->code);
        s_env_touch_str(env->error->message);
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Crucible__Envelope *env = NULL;
    if (cr_wire_unpack(data, size, CR_WIRE_MAX_MSG, &env) != 0) {
        if (env) /* the contract: *out is NULL on every failure */
            abort();
        return 0;
    }
    s_env_walk(env);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (cr_wire_pack(env, &buf, &len) == 0) {
        Crucible__Envelope *again = NULL;
        if (cr_wire_unpack(buf, len, CR_WIRE_MAX_MSG, &again) != 0)
            abort(); /* what we pack we must read */
        cr_wire_free(&again);
        free(buf);
    }
    cr_wire_free(&env);
    return 0;
}
