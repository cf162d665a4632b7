/* driver.c — the rollout loop; see rollout.h.
 *
 * One thread, named phases per loop turn: schedule (a request for every
 * sample that needs its next turn), http (libcurl multi, woken as well by
 * the coordinator's socket), judge (submit answered turns, take records),
 * progress, tick. A sample moves NEED_LLM -> IN_LLM -> IN_JUDGE -> NEED_LLM
 * ... -> DONE; every arrow out of IN_LLM and IN_JUDGE is written to the
 * write-ahead log (traj.h) before the driver acts on it. */
#define _GNU_SOURCE
#include "rollout.h"

#include "client.h"
#include "credit.h"
#include "error.h"
#include "extract.h"
#include "file.h"
#include "hash.h"
#include "http.h"
#include "judge.h"
#include "log.h"
#include "progress.h"
#include "prompt.h"
#include "record.h"
#include "reward.h"
#include "timeutil.h"
#include "traj.h"
#include "wire.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_TASKS 4096 /* tasks of one rollout */
#define S_KEY_MAX 4096   /* bytes of an API key */

/* One task of the rollout. */
typedef struct {
    Crucible__TaskBundle *bundle; /* owned */
    cr_prompt_task_t pt;          /* owned */
    char *prompt;                 /* the rendered first message, owned */
    int c_language;               /* extraction drops extern "C" */
} s_task_t;

/* What a request is for (the http tag). */
typedef struct {
    int task;        /* index */
    int sample;      /* index; -1 = the whole group's first turn (n = samples) */
    json_t *sent;    /* the messages sent, owned */
    size_t dropped;  /* trimmed away */
} s_req_t;

typedef struct {
    const cr_config_t *cfg;       /* borrowed */
    s_task_t *tasks;              /* owned */
    int ntasks;
    cr_traj_t *trajs;             /* ntasks * samples, owned */
    size_t ntrajs;
    cr_http_t *http;              /* owned */
    cr_judge_t *judge;            /* owned; NULL with --no-judge */
    cr_wal_t wal;
    cr_traj_meta_t meta;
    char rollout_id[CR_CONFIG_STR];
    char credit[64];              /* name@version */
    char out[CR_CONFIG_STR + 8];  /* trajectories file */
    char walpath[CR_CONFIG_STR + 16];
    char *tmpl;                   /* prompt template text, owned; NULL = built in */
    cr_ro_progress_t prog;
    int fatal;                    /* a WAL write failed: stop */
    uint32_t resubmitted;         /* turns sent to the judge again on resume */
} s_driver_t;

/* ------------------------------------------------------------ task loading */

static int s_add_task(s_driver_t *d, const char *dir, char *err, size_t errlen)
{
    Crucible__TaskBundle *b = NULL;
    int rc = cr_client_task_bundle(dir, &b, err, errlen);
    if (rc != 0)
        return rc;
    cr_prompt_task_t pt;
    rc = cr_prompt_task_load(&pt, dir, b->task_json, d->cfg->hardware, err, errlen);
    if (rc != 0) {
        crucible__task_bundle__free_unpacked(b, NULL);
        return rc;
    }
    if (!cr_config_has_backend(d->cfg->backends, pt.language)) {
        fprintf(stderr, "crucible: task %s skipped: language %s is not in --backends %s\n",
                pt.name, pt.language, d->cfg->backends);
        cr_prompt_task_close(&pt);
        crucible__task_bundle__free_unpacked(b, NULL);
        return 0;
    }
    if (d->ntasks == S_MAX_TASKS) {
        snprintf(err, errlen, "more than %d tasks", S_MAX_TASKS);
        cr_prompt_task_close(&pt);
        crucible__task_bundle__free_unpacked(b, NULL);
        return CR_E_LIMIT;
    }
    s_task_t *t = &d->tasks[d->ntasks];
    t->bundle = b;
    t->pt = pt;
    t->c_language = strcmp(pt.language, "c") == 0;
    if (!(t->prompt = cr_prompt_render(d->tmpl, &t->pt))) {
        cr_prompt_task_close(&t->pt);
        crucible__task_bundle__free_unpacked(b, NULL);
        return -ENOMEM;
    }
    d->ntasks++;
    return 0;
}

/* Loads a task folder, or every task folder in dir (sorted by name). */
static int s_load_tasks(s_driver_t *d, const char *dir, char *err, size_t errlen)
{
    d->tasks = calloc(S_MAX_TASKS, sizeof *d->tasks);
    if (!d->tasks)
        return -ENOMEM;
    char *tj = cr_file_join(dir, "task.json");
    int one = tj && cr_file_exists(tj);
    free(tj);
    if (one)
        return s_add_task(d, dir, err, errlen);
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort), rc = 0;
    if (n < 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -errno;
    }
    for (int k = 0; k < n; k++) {
        char *sub = names[k]->d_name[0] == '.' ? NULL : cr_file_join(dir, names[k]->d_name);
        char *t = sub ? cr_file_join(sub, "task.json") : NULL;
        if (rc == 0 && t && cr_file_exists(t))
            rc = s_add_task(d, sub, err, errlen);
        free(t);
        free(sub);
        free(names[k]);
    }
    free(names);
    return rc;
}

/* ------------------------------------------------------------- the samples */

static cr_traj_t *s_find(void *arg, const char *task, uint32_t sample)
{
    s_driver_t *d = arg;
    if (sample >= (uint32_t)d->cfg->samples)
        return NULL;
    for (int i = 0; i < d->ntasks; i++)
        if (strcmp(d->tasks[i].pt.name, task) == 0)
            return &d->trajs[(size_t)i * (size_t)d->cfg->samples + sample];
    return NULL;
}

static void s_done(s_driver_t *d, cr_traj_t *t, const char *stop)
{
    t->state = CR_TRAJ_DONE;
    snprintf(t->stop, sizeof t->stop, "%s", stop);
    d->prog.units_done++;
}

/* The last turn of t was judged: its reward, and stop or the feedback. */
static void s_after_judged(s_driver_t *d, cr_traj_t *t)
{
    cr_turn_t *u = &t->turns[t->nturns - 1];
    const Crucible__RewardRecord *r = u->record;
    const cr_config_t *cfg = d->cfg;
    double s = r->profile ? r->profile->speedup_geomean : 0;
    int ok = r->status == CRUCIBLE__STATUS__STATUS_OK && r->n_hack_flags == 0;
    u->has_reward = r->has_reward;
    u->reward = r->has_reward ? r->reward : 0;
    d->prog.turns++;
    d->prog.ok += ok;
    if (r->has_reward) {
        d->prog.rewarded++;
        d->prog.reward_sum += r->reward;
    }
    if (ok && s >= cfg->target_speedup) {
        s_done(d, t, "target");
        return;
    }
    if (t->nturns >= (uint32_t)cfg->turns) {
        s_done(d, t, "turns");
        return;
    }
    free(u->feedback);
    u->feedback = cr_prompt_feedback(cfg->feedback, r, cfg->target_speedup,
                                     (size_t)cfg->error_chars);
    if (!u->feedback) {
        d->fatal = -ENOMEM;
        return;
    }
    t->state = CR_TRAJ_NEED_LLM;
}

/* Without a judge (--no-judge): the turn ends with a fixed sentence. */
static void s_unjudged(s_driver_t *d, cr_traj_t *t)
{
    cr_turn_t *u = &t->turns[t->nturns - 1];
    d->prog.turns++;
    if (t->nturns >= (uint32_t)d->cfg->turns) {
        s_done(d, t, "unjudged");
        return;
    }
    free(u->feedback);
    u->feedback = strdup("The judge is off for this rollout. Answer again with the whole "
                         "kernel in one fenced code block.");
    t->state = CR_TRAJ_NEED_LLM;
}

/* Sends turn u of t to the judge. */
static void s_to_judge(s_driver_t *d, cr_traj_t *t, cr_turn_t *u)
{
    char group[CR_CONFIG_STR + 64];
    snprintf(group, sizeof group, "%s/t%u", t->task, u->turn);
    int rc = cr_judge_submit(d->judge, u->job_id, t->task, u->kernel, group, t->sample, u->turn);
    if (rc != 0) {
        d->fatal = rc;
        return;
    }
    t->state = CR_TRAJ_IN_JUDGE;
}

/* One choice answered turn t->nturns + 1 of t. */
static void s_on_choice(s_driver_t *d, cr_traj_t *t, const s_req_t *q, const cr_http_result_t *res,
                        size_t i)
{
    cr_turn_t *u = cr_traj_add_turn(t);
    if (!u) {
        d->fatal = -ENOMEM;
        return;
    }
    u->messages = json_incref(q->sent);
    u->dropped = q->dropped;
    u->completion = strdup(res->content[i]);
    u->kernel = cr_extract_kernel(res->content[i], d->tasks[t->task_index].c_language);
    u->finish_reason = strdup(res->finish_reason[i]);
    u->prompt_tokens = res->prompt_tokens;
    u->completion_tokens = res->completion_tokens;
    u->endpoint = strdup(res->endpoint);
    u->attempts = res->attempts;
    u->latency_ms = res->latency_ms;
    u->faults = strdup(res->error);
    snprintf(u->job_id, sizeof u->job_id, "%s/s%u/t%u", t->task, t->sample, u->turn);
    if (!u->completion || !u->kernel || !u->finish_reason || !u->endpoint || !u->faults) {
        d->fatal = -ENOMEM;
        return;
    }
    int rc = cr_wal_completion(&d->wal, t, u);
    if (rc != 0) {
        d->fatal = rc;
        return;
    }
    if (d->judge)
        s_to_judge(d, t, u);
    else
        s_unjudged(d, t);
}

static void s_on_failed(s_driver_t *d, cr_traj_t *t, const char *error)
{
    int rc = cr_wal_failed(&d->wal, t, t->nturns + 1, error);
    if (rc != 0)
        d->fatal = rc;
    free(t->error);
    t->error = strdup(error);
    cr_warn("%s sample %u turn %u: %s", t->task, t->sample, t->nturns + 1, error);
    s_done(d, t, "llm_error");
}

static void s_on_http(void *arg, void *tag, const cr_http_result_t *res)
{
    s_driver_t *d = arg;
    s_req_t *q = tag;
    size_t k = (size_t)d->cfg->samples;
    cr_traj_t *group = &d->trajs[(size_t)q->task * k];
    if (q->sample >= 0) {
        cr_traj_t *t = &group[q->sample];
        if (!res->ok || res->n == 0)
            s_on_failed(d, t, res->ok ? "the answer has no choices" : res->error);
        else
            s_on_choice(d, t, q, res, 0);
    } else if (!res->ok) {
        for (size_t i = 0; i < k; i++)
            s_on_failed(d, &group[i], res->error);
    } else {
        /* a server may give fewer choices than n: the rest ask again one by one */
        for (size_t i = 0; i < k; i++) {
            if (i < res->n)
                s_on_choice(d, &group[i], q, res, i);
            else
                group[i].state = CR_TRAJ_NEED_LLM;
        }
    }
    json_decref(q->sent);
    free(q);
}

static void s_on_record(void *arg, const Crucible__RewardRecord *rec)
{
    s_driver_t *d = arg;
    cr_traj_t *t = s_find(d, rec->task, rec->sample_index);
    if (!t || t->state != CR_TRAJ_IN_JUDGE || rec->turn != t->nturns ||
        t->turns[t->nturns - 1].record) {
        cr_warn("record %s does not match a turn with the judge: ignored", rec->job_id);
        return;
    }
    cr_turn_t *u = &t->turns[t->nturns - 1];
    if (!(u->record = cr_wire_record_dup(rec))) {
        d->fatal = -ENOMEM;
        return;
    }
    int rc = cr_wal_judged(&d->wal, t, u);
    if (rc != 0) {
        d->fatal = rc;
        return;
    }
    s_after_judged(d, t);
}

/* The conversation so far, trimmed: what the next request of t sends. */
static s_req_t *s_request_for(s_driver_t *d, int task, int sample)
{
    s_req_t *q = calloc(1, sizeof *q);
    json_t *conv = json_array();
    if (!q || !conv) {
        free(q);
        json_decref(conv);
        return NULL;
    }
    q->task = task;
    q->sample = sample;
    json_array_append_new(conv, json_pack("{s:s, s:s}", "role", "user", "content",
                                          d->tasks[task].prompt));
    if (sample >= 0) {
        const cr_traj_t *t = &d->trajs[(size_t)task * (size_t)d->cfg->samples + (size_t)sample];
        for (uint32_t i = 0; i < t->nturns; i++) {
            json_array_append_new(conv, json_pack("{s:s, s:s}", "role", "assistant", "content",
                                                  t->turns[i].completion));
            json_array_append_new(conv, json_pack("{s:s, s:s}", "role", "user", "content",
                                                  t->turns[i].feedback ? t->turns[i].feedback
                                                                       : ""));
        }
    }
    q->sent = cr_prompt_trim(conv, (size_t)d->cfg->history_chars, &q->dropped);
    json_decref(conv);
    if (!q->sent) {
        free(q);
        return NULL;
    }
    return q;
}

/* Phase schedule: a request for every sample that needs one. */
static void s_schedule(s_driver_t *d)
{
    size_t k = (size_t)d->cfg->samples;
    int group_mode = strcmp(d->cfg->sample_mode, "n") == 0 && k > 1;
    for (int i = 0; i < d->ntasks && !d->fatal; i++) {
        cr_traj_t *g = &d->trajs[(size_t)i * k];
        size_t fresh = 0;
        for (size_t s = 0; s < k; s++)
            fresh += g[s].state == CR_TRAJ_NEED_LLM && g[s].nturns == 0;
        if (group_mode && fresh == k) {
            s_req_t *q = s_request_for(d, i, -1);
            if (!q || cr_http_request(d->http, q->sent, (int)k, q) != 0) {
                d->fatal = -ENOMEM;
                return;
            }
            for (size_t s = 0; s < k; s++)
                g[s].state = CR_TRAJ_IN_LLM;
            continue;
        }
        for (size_t s = 0; s < k; s++) {
            if (g[s].state != CR_TRAJ_NEED_LLM)
                continue;
            s_req_t *q = s_request_for(d, i, (int)s);
            if (!q || cr_http_request(d->http, q->sent, 1, q) != 0) {
                d->fatal = -ENOMEM;
                return;
            }
            g[s].state = CR_TRAJ_IN_LLM;
        }
    }
}

/* ----------------------------------------------------------------- credit */

/* Returns per trajectory, then advantages per (task, turn). */
static void s_credit(s_driver_t *d)
{
    size_t k = (size_t)d->cfg->samples;
    double r[64], ret[64];
    int has[64];
    for (size_t i = 0; i < d->ntrajs; i++) {
        cr_traj_t *t = &d->trajs[i];
        for (uint32_t u = 0; u < t->nturns; u++) {
            r[u] = t->turns[u].reward;
            has[u] = t->turns[u].has_reward;
        }
        cr_credit_returns(d->credit, d->cfg->gamma, r, has, (int)t->nturns, ret);
        for (uint32_t u = 0; u < t->nturns; u++)
            t->turns[u].ret = ret[u];
    }
    double *v = malloc(k * sizeof *v), *adv = malloc(k * sizeof *adv);
    int *hv = malloc(k * sizeof *hv);
    cr_turn_t **who = malloc(k * sizeof *who);
    for (int ti = 0; v && adv && hv && who && ti < d->ntasks; ti++) {
        for (uint32_t u = 0; u < (uint32_t)d->cfg->turns; u++) {
            int n = 0;
            for (size_t s = 0; s < k; s++) {
                cr_traj_t *t = &d->trajs[(size_t)ti * k + s];
                if (t->nturns > u) {
                    who[n] = &t->turns[u];
                    v[n] = who[n]->ret;
                    hv[n] = who[n]->has_reward;
                    n++;
                }
            }
            if (!n)
                continue;
            cr_reward_advantages(v, hv, n, adv);
            for (int m = 0; m < n; m++)
                who[m]->adv = adv[m];
        }
    }
    free(v);
    free(adv);
    free(hv);
    free(who);
}

/* ------------------------------------------------------------------- main */

static int s_read_key(const cr_config_t *cfg, char *key, size_t len, char *err, size_t errlen)
{
    key[0] = '\0';
    if (cfg->api_key_file[0]) {
        char *text = NULL;
        size_t n = 0;
        int rc = cr_file_read(cfg->api_key_file, S_KEY_MAX, &text, &n);
        if (rc != 0) {
            snprintf(err, errlen, "--api-key-file %s: %s", cfg->api_key_file, cr_strerror(rc));
            return rc;
        }
        snprintf(key, len, "%.*s", (int)strcspn(text, "\r\n"), text);
        free(text);
        return 0;
    }
    const char *v = cfg->api_key_env[0] ? getenv(cfg->api_key_env) : NULL;
    if (v)
        snprintf(key, len, "%s", v);
    return 0;
}

static void s_close(s_driver_t *d)
{
    cr_http_destroy(&d->http);
    cr_judge_destroy(&d->judge);
    cr_wal_close(&d->wal);
    for (size_t i = 0; d->trajs && i < d->ntrajs; i++)
        cr_traj_close(&d->trajs[i]);
    free(d->trajs);
    for (int i = 0; d->tasks && i < d->ntasks; i++) {
        crucible__task_bundle__free_unpacked(d->tasks[i].bundle, NULL);
        cr_prompt_task_close(&d->tasks[i].pt);
        free(d->tasks[i].prompt);
    }
    free(d->tasks);
    free(d->tmpl);
}

/* Brings every sample loaded from the write-ahead log to its state. */
static void s_resume(s_driver_t *d)
{
    for (size_t i = 0; i < d->ntrajs && !d->fatal; i++) {
        cr_traj_t *t = &d->trajs[i];
        for (uint32_t u = 0; u < t->nturns; u++) { /* the progress of earlier runs */
            const Crucible__RewardRecord *r = t->turns[u].record;
            if (r && u + 1 < t->nturns) {
                d->prog.turns++;
                d->prog.ok += r->status == CRUCIBLE__STATUS__STATUS_OK && !r->n_hack_flags;
                d->prog.rewarded += r->has_reward;
                d->prog.reward_sum += r->has_reward ? r->reward : 0;
                t->turns[u].has_reward = r->has_reward;
                t->turns[u].reward = r->has_reward ? r->reward : 0;
                t->turns[u].feedback = cr_prompt_feedback(d->cfg->feedback, r,
                                                          d->cfg->target_speedup,
                                                          (size_t)d->cfg->error_chars);
            } else if (!r && !d->judge && u + 1 < t->nturns) {
                d->prog.turns++;
                t->turns[u].feedback = strdup("The judge is off for this rollout. Answer again "
                                              "with the whole kernel in one fenced code block.");
            }
        }
        if (t->state == CR_TRAJ_DONE) { /* failed: llm_error */
            d->prog.units_done++;
            continue;
        }
        if (!t->nturns)
            continue;
        cr_turn_t *last = &t->turns[t->nturns - 1];
        if (last->record) {
            t->state = CR_TRAJ_IN_JUDGE;
            s_after_judged(d, t);
        } else if (d->judge) {
            s_to_judge(d, t, last);
            d->resubmitted++;
        } else {
            s_unjudged(d, t);
        }
    }
    d->prog.units_done0 = d->prog.units_done;
}

int cr_rollout_run(const cr_config_t *cfg, const char *tasks_dir, const char *endpoint,
                   cr_rollout_tick_fn tick, void *arg)
{
    s_driver_t d = {.cfg = cfg};
    char err[1024] = "", key[S_KEY_MAX + 1];
    int rc = 0;
    if (cr_credit_name(cfg->credit, d.credit, sizeof d.credit) != 0) {
        fprintf(stderr, "crucible rollout: --credit: unknown formula '%s' (discounted, best)\n",
                cfg->credit);
        return CR_E_USAGE;
    }
    if (strcmp(cfg->format, "jsonl") != 0 && strcmp(cfg->format, "pb") != 0) {
        fprintf(stderr, "crucible rollout: --format: expected jsonl or pb\n");
        return CR_E_USAGE;
    }
    if (cfg->prompt_template[0] &&
        (rc = cr_file_read(cfg->prompt_template, 1u << 20, &d.tmpl, NULL)) != 0) {
        fprintf(stderr, "crucible rollout: --prompt-template %s: %s\n", cfg->prompt_template,
                cr_strerror(rc));
        return rc;
    }
    if ((rc = s_load_tasks(&d, tasks_dir, err, sizeof err)) != 0 || d.ntasks == 0) {
        fprintf(stderr, "crucible rollout: %s\n", rc ? err : "no task to roll out");
        s_close(&d);
        return rc ? rc : CR_E_USAGE;
    }
    d.ntrajs = (size_t)d.ntasks * (size_t)cfg->samples;
    if (!(d.trajs = calloc(d.ntrajs, sizeof *d.trajs))) {
        s_close(&d);
        return -ENOMEM;
    }
    for (size_t i = 0; i < d.ntrajs; i++) {
        d.trajs[i].task_index = (int)(i / (size_t)cfg->samples);
        d.trajs[i].sample = (uint32_t)(i % (size_t)cfg->samples);
        if (!(d.trajs[i].task = strdup(d.tasks[d.trajs[i].task_index].pt.name))) {
            s_close(&d);
            return -ENOMEM;
        }
    }
    snprintf(d.out, sizeof d.out, "%s", cfg->out[0] ? cfg->out : "trajectories.jsonl");
    snprintf(d.walpath, sizeof d.walpath, "%s.wal", d.out);

    /* resume: the rollout id and every finished step from the log */
    snprintf(d.rollout_id, sizeof d.rollout_id, "%s", cfg->batch);
    char logged[CR_CONFIG_STR] = "";
    int lines = cr_wal_load(d.walpath, s_find, &d, logged, sizeof logged, err, sizeof err);
    if (lines < 0) {
        fprintf(stderr, "crucible rollout: %s\n", err[0] ? err : cr_strerror(lines));
        s_close(&d);
        return lines;
    }
    if (logged[0] && d.rollout_id[0] && strcmp(logged, d.rollout_id) != 0) {
        fprintf(stderr, "crucible rollout: %s belongs to rollout %s, not --batch %s: remove it or "
                "pick another --out\n", d.walpath, logged, d.rollout_id);
        s_close(&d);
        return CR_E_USAGE;
    }
    if (logged[0])
        snprintf(d.rollout_id, sizeof d.rollout_id, "%s", logged);
    if (!d.rollout_id[0])
        cr_random_id("ro-", d.rollout_id, sizeof d.rollout_id);
    d.meta = (cr_traj_meta_t){.rollout_id = d.rollout_id, .model = cfg->model,
                              .endpoints = cfg->endpoints, .temperature = cfg->temperature,
                              .top_p = cfg->top_p, .max_tokens = cfg->max_tokens,
                              .n = strcmp(cfg->sample_mode, "n") == 0 ? (uint32_t)cfg->samples : 1,
                              .stream = (int)cfg->stream, .credit = d.credit, .gamma = cfg->gamma,
                              .reward = cfg->reward, .feedback = cfg->feedback,
                              .turns = cfg->turns};
    if ((rc = cr_wal_open(&d.wal, d.walpath, &d.meta)) != 0) {
        fprintf(stderr, "crucible rollout: %s: %s\n", d.walpath, cr_strerror(rc));
        s_close(&d);
        return rc;
    }
    if ((rc = s_read_key(cfg, key, sizeof key, err, sizeof err)) != 0) {
        fprintf(stderr, "crucible rollout: %s\n", err);
        s_close(&d);
        return rc;
    }
    cr_http_opts_t ho = {.endpoints = cfg->endpoints, .model = cfg->model, .api_key = key,
                         .concurrency = (int)cfg->concurrency,
                         .timeout_ms = (int64_t)(cfg->llm_timeout_s * 1000),
                         .retries = (int)cfg->retries, .backoff_ms = cfg->backoff_ms,
                         .backoff_max_ms = cfg->backoff_max_ms, .stream = (int)cfg->stream,
                         .temperature = cfg->temperature, .top_p = cfg->top_p,
                         .max_tokens = cfg->max_tokens};
    d.http = cr_http_new(&ho, s_on_http, &d, err, sizeof err);
    memset(key, 0, sizeof key);
    if (!d.http) {
        fprintf(stderr, "crucible rollout: %s\n", err);
        s_close(&d);
        return CR_E_USAGE;
    }
    if (!cfg->no_judge) {
        if (!(d.judge = cr_judge_new(cfg, endpoint, d.rollout_id, s_on_record, &d))) {
            fprintf(stderr, "crucible rollout: cannot reach the coordinator\n");
            s_close(&d);
            return CR_E_ZMQ;
        }
        for (int i = 0; i < d.ntasks; i++)
            if (cr_judge_add_task(d.judge, d.tasks[i].bundle) != 0)
                d.fatal = -ENOMEM;
    }
    char label[CR_CONFIG_STR + 16];
    snprintf(label, sizeof label, "rollout %s", d.rollout_id);
    cr_ro_progress_init(&d.prog, stderr, label, (uint32_t)d.ntrajs);
    s_resume(&d);
    if (lines > 1)
        fprintf(stderr, "crucible rollout: resuming %s from %s: %u of %zu samples done, %u turns "
                "sent to the judge again\n", d.rollout_id, d.walpath, d.prog.units_done, d.ntrajs,
                d.resubmitted);
    fprintf(stderr, "crucible rollout: %s: %d tasks x %lld samples, up to %lld turns, against "
            "%s (model %s)\n", d.rollout_id, d.ntasks, (long long)cfg->samples,
            (long long)cfg->turns, cfg->endpoints, cfg->model);

    int64_t last_tick = 0;
    while (!d.fatal && d.prog.units_done < d.ntrajs) {
        s_schedule(&d);
        int fd = d.judge ? cr_judge_fd(d.judge) : -1;
        /* 50 ms: the ZMQ_FD is edge-triggered, so a bounded wait also catches
         * what arrived while it was being drained */
        if (cr_http_run(d.http, fd, d.judge && cr_judge_pending(d.judge) ? 50 : 100) != 0) {
            rc = -EINTR;
        }
        if (d.judge && cr_judge_run(d.judge) != 0) {
            fprintf(stderr, "crucible rollout: the coordinator's socket failed\n");
            rc = CR_E_ZMQ;
            break;
        }
        cr_wal_sync(&d.wal);
        d.prog.llm_in_flight = (uint32_t)(cr_http_in_flight(d.http) + cr_http_waiting(d.http));
        d.prog.judge_in_flight = d.judge ? (uint32_t)cr_judge_pending(d.judge) : 0;
        cr_ro_progress_draw(&d.prog, 0);
        int64_t now = cr_time_mono_ms();
        if (tick && now - last_tick >= 100) {
            last_tick = now;
            int t = tick(arg);
            if (t != 0) {
                rc = t;
                break;
            }
        }
        rc = 0;
    }
    d.prog.llm_in_flight = d.prog.judge_in_flight = 0;
    cr_ro_progress_draw(&d.prog, 1);
    if (d.fatal) {
        fprintf(stderr, "crucible rollout: stopped: %s\n", cr_strerror(d.fatal));
        rc = d.fatal;
    }
    cr_http_stats_t hs;
    cr_http_stats(d.http, &hs);
    fprintf(stderr, "requests: %llu answered, %llu failed; %llu tries; retried: 429 x%llu, 408 "
            "x%llu, 5xx x%llu, timeout x%llu, connection x%llu, invalid answer x%llu; refused "
            "%llu\n", (unsigned long long)hs.answered, (unsigned long long)hs.failed,
            (unsigned long long)hs.tries, (unsigned long long)hs.retry_429,
            (unsigned long long)hs.retry_408, (unsigned long long)hs.retry_5xx,
            (unsigned long long)hs.retry_timeout, (unsigned long long)hs.retry_conn,
            (unsigned long long)hs.retry_invalid, (unsigned long long)hs.refused);
    if (d.judge) {
        cr_judge_stats_t js;
        cr_judge_stats(d.judge, &js);
        fprintf(stderr, "judge: %llu jobs sent, %llu new, %llu already known (not judged "
                "again), %llu records, %u reconnects\n", (unsigned long long)js.submitted,
                (unsigned long long)js.accepted, (unsigned long long)js.duplicate,
                (unsigned long long)js.records, js.reconnects);
    }
    if (rc == 0) {
        s_credit(&d);
        cr_traj_t **ts = malloc(d.ntrajs * sizeof *ts);
        for (size_t i = 0; ts && i < d.ntrajs; i++)
            ts[i] = &d.trajs[i];
        rc = ts ? cr_traj_write(d.out, strcmp(cfg->format, "pb") == 0, ts, d.ntrajs, &d.meta,
                                d.rollout_id)
                : -ENOMEM;
        free(ts);
        uint32_t stops[5] = {0}, failed = 0;
        static const char *const names[] = {"target", "turns", "llm_error", "unjudged", "other"};
        for (size_t i = 0; i < d.ntrajs; i++) {
            int k = 0;
            while (k < 4 && strcmp(d.trajs[i].stop, names[k]) != 0)
                k++;
            stops[k]++;
            failed += k == 2;
        }
        if (rc != 0)
            fprintf(stderr, "crucible rollout: %s: %s\n", d.out, cr_strerror(rc));
        else
            fprintf(stderr, "%zu trajectories in %s (stop: target %u, turns %u, llm_error %u, "
                    "unjudged %u); credit %s, gamma %g\n", d.ntrajs, d.out, stops[0], stops[1],
                    stops[2], stops[3], d.credit, cfg->gamma);
        if (rc == 0 && failed)
            rc = CR_E_HTTP; /* reported above, sample by sample */
    } else if (rc == -EINTR || rc > 0 || rc == CR_E_CHILD) {
        fprintf(stderr, "crucible rollout: interrupted; every finished turn is in %s: run the "
                "same command again to resume\n", d.walpath);
    }
    s_close(&d);
    return rc;
}
