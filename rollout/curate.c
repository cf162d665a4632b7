/* curate.c — `crucible curate`: a corpus judged, the correct, fast and
 * distinct solutions kept as SFT JSONL; see rollout.h.
 *
 * Order of the verdicts (one precedence rule, first match wins): duplicate
 * (same task and normalised source as an earlier solution: never judged),
 * no record, infrastructure outcome, hack (HACK_DETECTED, or OK with a hack
 * flag), not OK (the status; its flags named in why), slower than
 * --min-speedup, kept. */
#define _GNU_SOURCE
#include "rollout.h"

#include "client.h"
#include "error.h"
#include "file.h"
#include "hash.h"
#include "judge.h"
#include "log.h"
#include "progress.h"
#include "prompt.h"
#include "record.h"
#include "timeutil.h"
#include "wire.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Crucible__JobSpec *job;          /* borrowed from the job set */
    char norm[CR_HASH_HEX_LEN + 1];  /* hash of task + normalised source */
    int dup_of;                      /* index of the first with the same hash; -1 none */
    Crucible__RewardRecord *rec;     /* owned; NULL until judged */
} s_item_t;

typedef struct {
    s_item_t *items;
    size_t n;
    size_t got;
    cr_ro_progress_t prog;
} s_curate_t;

/* The source without comments and with every run of white space made one
 * space (string and character literals kept as written): two solutions
 * that differ only in layout and comments are one. Caller frees. */
static char *s_normalise(const char *src)
{
    size_t n = strlen(src), k = 0;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    int space = 0;
    for (size_t i = 0; i < n;) {
        char c = src[i];
        if (c == '/' && src[i + 1] == '/') {
            while (i < n && src[i] != '\n')
                i++;
            space = 1;
            continue;
        }
        if (c == '/' && src[i + 1] == '*') {
            const char *e = strstr(src + i + 2, "*/");
            i = e ? (size_t)(e - src) + 2 : n;
            space = 1;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            space = 1;
            i++;
            continue;
        }
        if (space && k)
            out[k++] = ' ';
        space = 0;
        if (c == '"' || c == '\'') {
            out[k++] = src[i++];
            while (i < n && src[i] != c) {
                if (src[i] == '\\' && i + 1 < n)
                    out[k++] = src[i++];
                out[k++] = src[i++];
            }
            if (i < n)
                out[k++] = src[i++];
            continue;
        }
        out[k++] = src[i++];
    }
    out[k] = '\0';
    return out;
}

static void s_on_record(void *arg, const Crucible__RewardRecord *rec)
{
    s_curate_t *c = arg;
    for (size_t i = 0; i < c->n; i++) {
        if (c->items[i].dup_of < 0 && !c->items[i].rec &&
            strcmp(c->items[i].job->job_id, rec->job_id) == 0) {
            c->items[i].rec = cr_wire_record_dup(rec);
            c->got++;
            c->prog.units_done++;
            c->prog.turns++;
            c->prog.ok += rec->status == CRUCIBLE__STATUS__STATUS_OK && !rec->n_hack_flags;
            if (rec->has_reward) {
                c->prog.rewarded++;
                c->prog.reward_sum += rec->reward;
            }
            return;
        }
    }
}

/* Why item i is dropped ("" = kept), into why. */
static void s_verdict(const cr_config_t *cfg, const s_curate_t *c, size_t i, char *why,
                      size_t len, const char **reason)
{
    const s_item_t *it = &c->items[i];
    const Crucible__RewardRecord *r = it->rec;
    double s = r && r->profile ? r->profile->speedup_geomean : 0;
    why[0] = '\0';
    *reason = "kept";
    if (it->dup_of >= 0) {
        *reason = "duplicate";
        snprintf(why, len, "same task and normalised source as %s", c->items[it->dup_of].job->job_id);
    } else if (!r) {
        *reason = "no_record";
        snprintf(why, len, "no record came back");
    } else if (cr_status_is_infra(r->status)) {
        *reason = "infra";
        snprintf(why, len, "%s: %.200s", cr_status_name(r->status), r->message);
    } else if (r->status == CRUCIBLE__STATUS__STATUS_HACK_DETECTED ||
               (r->status == CRUCIBLE__STATUS__STATUS_OK && r->n_hack_flags)) {
        *reason = "hack";
        size_t n = (size_t)snprintf(why, len, "%s, flagged:", cr_status_name(r->status));
        for (size_t k = 0; k < r->n_hack_flags && n < len; k++)
            n += (size_t)snprintf(why + n, len - n, " %s", r->hack_flags[k]);
    } else if (r->status != CRUCIBLE__STATUS__STATUS_OK) {
        *reason = cr_status_name(r->status);
        size_t n = (size_t)snprintf(why, len, "%s: %.200s", cr_status_name(r->status), r->message);
        for (size_t k = 0; k < r->n_hack_flags && n < len; k++)
            n += (size_t)snprintf(why + n, len - n, "%s%s", k ? ", " : "; flagged: ",
                                  r->hack_flags[k]);
    } else if (s < cfg->min_speedup) {
        *reason = "slow";
        snprintf(why, len, "correct but slow: speedup %.2fx < --min-speedup %.2fx", s,
                 cfg->min_speedup);
    }
}

int cr_curate_run(const cr_config_t *cfg, const char *tasks_dir, const char *corpus,
                  const char *endpoint, cr_rollout_tick_fn tick, void *arg)
{
    cr_jobset_t js = {0};
    s_curate_t c = {0};
    cr_judge_t *j = NULL;
    json_t *report = NULL;
    char err[1024], batch[CR_CONFIG_STR];
    char *tmpl = NULL;
    int rc = 0;
    const char *out = cfg->out[0] ? cfg->out : "sft.jsonl";
    char rpath[CR_CONFIG_STR + 16];
    snprintf(rpath, sizeof rpath, "%s", cfg->report[0] ? cfg->report : "");
    if (!rpath[0])
        snprintf(rpath, sizeof rpath, "%s.report.json", out);
    if (cfg->prompt_template[0] &&
        (rc = cr_file_read(cfg->prompt_template, 1u << 20, &tmpl, NULL)) != 0) {
        fprintf(stderr, "crucible curate: --prompt-template %s: %s\n", cfg->prompt_template,
                cr_strerror(rc));
        return rc;
    }
    if ((rc = cr_jobset_load(&js, tasks_dir, corpus, err, sizeof err)) != 0) {
        fprintf(stderr, "crucible curate: %s\n", err);
        goto done;
    }
    char skipped[128];
    size_t gone = cr_jobset_keep_backends(&js, cfg->backends, skipped, sizeof skipped);
    if (gone)
        fprintf(stderr, "crucible curate: %zu solutions of %s tasks skipped (--backends %s)\n",
                gone, skipped, cfg->backends);
    c.n = js.njobs;
    if (!c.n) {
        fprintf(stderr, "crucible curate: the corpus has no solution\n");
        rc = CR_E_USAGE;
        goto done;
    }
    if (!(c.items = calloc(c.n, sizeof *c.items))) {
        rc = -ENOMEM;
        goto done;
    }
    size_t unique = 0;
    for (size_t i = 0; i < c.n; i++) {
        s_item_t *it = &c.items[i];
        it->job = js.jobs[i];
        it->dup_of = -1;
        char *norm = s_normalise(it->job->source);
        if (!norm) {
            rc = -ENOMEM;
            goto done;
        }
        cr_hash_t h;
        cr_hash_init(&h);
        cr_hash_update_str(&h, it->job->task);
        cr_hash_update(&h, "", 1);
        cr_hash_update_str(&h, norm);
        cr_hash_final_hex(&h, it->norm);
        free(norm);
        for (size_t k = 0; k < i && it->dup_of < 0; k++)
            if (c.items[k].dup_of < 0 && strcmp(c.items[k].norm, it->norm) == 0)
                it->dup_of = (int)k;
        unique += it->dup_of < 0;
    }
    if (cfg->batch[0])
        snprintf(batch, sizeof batch, "%s", cfg->batch);
    else
        cr_random_id("cu-", batch, sizeof batch);
    if (!(j = cr_judge_new(cfg, endpoint, batch, s_on_record, &c))) {
        fprintf(stderr, "crucible curate: cannot reach the coordinator\n");
        rc = CR_E_ZMQ;
        goto done;
    }
    for (size_t i = 0; i < js.ntasks; i++)
        cr_judge_add_task(j, js.tasks[i]);
    for (size_t i = 0; i < c.n && rc == 0; i++)
        if (c.items[i].dup_of < 0)
            rc = cr_judge_submit(j, c.items[i].job->job_id, c.items[i].job->task,
                                 c.items[i].job->source, "", 0, 0);
    if (rc != 0)
        goto done;
    char label[CR_CONFIG_STR + 16];
    snprintf(label, sizeof label, "curate %s", batch);
    cr_ro_progress_init(&c.prog, stderr, label, (uint32_t)unique);
    fprintf(stderr, "crucible curate: %zu solutions, %zu distinct, judged as batch %s\n", c.n,
            unique, batch);
    int64_t last_tick = 0, t0 = cr_time_mono_ms();
    while (c.got < unique) {
        struct pollfd p = {.fd = cr_judge_fd(j), .events = POLLIN};
        poll(&p, p.fd >= 0 ? 1 : 0, 50);
        if (cr_judge_run(j) != 0) {
            rc = CR_E_ZMQ;
            break;
        }
        c.prog.judge_in_flight = (uint32_t)cr_judge_pending(j);
        cr_ro_progress_draw(&c.prog, 0);
        int64_t now = cr_time_mono_ms();
        if (tick && now - last_tick >= 100) {
            last_tick = now;
            if ((rc = tick(arg)) != 0)
                break;
        }
        if (cfg->wait_s > 0 && now - t0 > (int64_t)(cfg->wait_s * 1000)) {
            fprintf(stderr, "crucible curate: --wait-s %g passed with %zu records missing\n",
                    cfg->wait_s, unique - c.got);
            break; /* the missing ones are reported as no_record */
        }
    }
    c.prog.judge_in_flight = 0;
    cr_ro_progress_draw(&c.prog, 1);
    if (rc != 0)
        goto done;

    /* verdicts, the SFT file and the report */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    report = json_object();
    json_t *items = json_array(), *by = json_object();
    size_t kept = 0;
    for (size_t i = 0; m && report && items && by && i < c.n; i++) {
        const s_item_t *it = &c.items[i];
        char why[600];
        const char *reason;
        s_verdict(cfg, &c, i, why, sizeof why, &reason);
        const Crucible__RewardRecord *r = it->rec;
        double s = r && r->profile ? r->profile->speedup_geomean : 0;
        char hw[CR_CONFIG_STR * 2] = "";
        if (r)
            snprintf(hw, sizeof hw, "%s:%s", r->backend, r->device);
        json_t *e = json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:f, s:s}", "id", it->job->job_id,
                              "task", it->job->task, "kept", why[0] == '\0', "reason", reason,
                              "why", why, "status",
                              r ? cr_status_name(r->status) : "UNJUDGED", "speedup", s,
                              "hardware", hw);
        json_array_append_new(items, e);
        json_object_set_new(by, reason,
                            json_integer(json_integer_value(json_object_get(by, reason)) + 1));
        if (why[0])
            continue;
        kept++;
        /* the prompt the policy would get for the task, the solution as the answer */
        size_t ti = 0;
        while (ti < js.ntasks && strcmp(js.tasks[ti]->name, it->job->task) != 0)
            ti++;
        cr_prompt_task_t pt;
        char perr[256];
        if (ti == js.ntasks ||
            cr_prompt_task_load(&pt, js.task_dirs[ti], js.tasks[ti]->task_json, cfg->hardware,
                                perr, sizeof perr) != 0) {
            rc = CR_E_TASK;
            break;
        }
        char *prompt = cr_prompt_render(tmpl, &pt), *completion = NULL;
        size_t sl = strlen(it->job->source);
        if (asprintf(&completion, "```%s\n%s%s```", pt.language, it->job->source,
                     sl && it->job->source[sl - 1] == '\n' ? "" : "\n") < 0)
            completion = NULL;
        char rid[2 * CR_CONFIG_STR];
        snprintf(rid, sizeof rid, "%s/%s", batch, it->job->job_id);
        json_t *line = prompt && completion
                           ? json_pack("{s:s, s:s, s:s, s:s, s:f, s:s, s:s, s:f}", "prompt", prompt,
                                       "completion", completion, "task", it->job->task, "id",
                                       it->job->job_id, "speedup", s, "hardware", hw, "record_id",
                                       rid, "reward", r->reward)
                           : NULL;
        char *ls = line ? json_dumps(line, JSON_COMPACT) : NULL;
        if (ls)
            fprintf(m, "%s\n", ls);
        else
            rc = -ENOMEM;
        free(ls);
        json_decref(line);
        free(prompt);
        free(completion);
        cr_prompt_task_close(&pt);
    }
    if (m)
        fclose(m);
    if (rc == 0 && (!m || !buf))
        rc = -ENOMEM;
    if (rc == 0 && (rc = cr_file_write_atomic(out, buf, len)) != 0)
        fprintf(stderr, "crucible curate: %s: %s\n", out, cr_strerror(rc));
    free(buf);
    json_object_set_new(report, "batch", json_string(batch));
    json_object_set_new(report, "total", json_integer((json_int_t)c.n));
    json_object_set_new(report, "judged", json_integer((json_int_t)c.got));
    json_object_set_new(report, "kept", json_integer((json_int_t)kept));
    json_object_set_new(report, "dropped", json_integer((json_int_t)(c.n - kept)));
    json_object_set_new(report, "min_speedup", json_real(cfg->min_speedup));
    json_object_set_new(report, "by_reason", by);
    json_object_set_new(report, "items", items);
    char *rj = json_dumps(report, JSON_INDENT(1));
    if (rc == 0 && (!rj || (rc = cr_file_write_atomic(rpath, rj, strlen(rj))) != 0))
        fprintf(stderr, "crucible curate: %s: %s\n", rpath, cr_strerror(rc ? rc : -ENOMEM));
    if (rc == 0) {
        fprintf(stderr, "kept %zu of %zu solutions in %s; dropped:", kept, c.n, out);
        const char *k;
        json_t *v;
        json_object_foreach(by, k, v)
            if (strcmp(k, "kept") != 0)
                fprintf(stderr, " %s %lld", k, (long long)json_integer_value(v));
        fprintf(stderr, "; report in %s\n", rpath);
    }
    free(rj);
done:
    json_decref(report);
    cr_judge_destroy(&j);
    for (size_t i = 0; c.items && i < c.n; i++)
        if (c.items[i].rec)
            crucible__reward_record__free_unpacked(c.items[i].rec, NULL);
    free(c.items);
    cr_jobset_close(&js);
    free(tmpl);
    return rc;
}
