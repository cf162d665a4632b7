/* traj.c — trajectory state, write-ahead log and outputs; see traj.h. */
#define _GNU_SOURCE
#include "traj.h"

#include "error.h"
#include "file.h"
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

cr_turn_t *cr_traj_add_turn(cr_traj_t *t)
{
    cr_turn_t *p = realloc(t->turns, (t->nturns + 1) * sizeof *p);
    if (!p)
        return NULL;
    t->turns = p;
    cr_turn_t *u = &t->turns[t->nturns];
    memset(u, 0, sizeof *u);
    u->turn = ++t->nturns;
    u->prompt_tokens = u->completion_tokens = -1;
    return u;
}

static void s_turn_close(cr_turn_t *u)
{
    json_decref(u->messages);
    free(u->completion);
    free(u->kernel);
    free(u->finish_reason);
    free(u->endpoint);
    free(u->faults);
    free(u->feedback);
    if (u->record)
        crucible__reward_record__free_unpacked(u->record, NULL);
    memset(u, 0, sizeof *u);
}

void cr_traj_close(cr_traj_t *t)
{
    for (uint32_t i = 0; i < t->nturns; i++)
        s_turn_close(&t->turns[i]);
    free(t->turns);
    free(t->task);
    free(t->error);
    memset(t, 0, sizeof *t);
}

/* ---- write-ahead log ---- */

static int s_line(cr_wal_t *w, json_t *o)
{
    if (!o)
        return -ENOMEM;
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s)
        return -ENOMEM;
    /* one write per line: a kill leaves whole lines and at most one torn last one */
    int rc = fprintf(w->f, "%s\n", s) > 0 && fflush(w->f) == 0 ? 0 : -EIO;
    free(s);
    w->dirty = 1;
    return rc;
}

static json_t *s_meta_json(const cr_traj_meta_t *m)
{
    return json_pack("{s:s, s:s, s:s, s:{s:f, s:f, s:I, s:i, s:b}, s:s, s:f, s:s, s:s, s:I}",
                     "rollout", m->rollout_id, "model", m->model, "endpoints", m->endpoints,
                     "sampling", "temperature", m->temperature, "top_p", m->top_p, "max_tokens",
                     (json_int_t)m->max_tokens, "n", (int)m->n, "stream", m->stream, "credit",
                     m->credit, "gamma", m->gamma, "reward", m->reward, "feedback", m->feedback,
                     "turns", (json_int_t)m->turns);
}

int cr_wal_open(cr_wal_t *w, const char *path, const cr_traj_meta_t *m)
{
    memset(w, 0, sizeof *w);
    int fresh = !cr_file_exists(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    w->f = fdopen(fd, "a");
    w->path = strdup(path);
    if (!w->f || !w->path) {
        if (!w->f)
            close(fd);
        cr_wal_close(w);
        return -ENOMEM;
    }
    if (!fresh) {
        /* a torn last line of a killed run: end it, so the next line is whole */
        struct stat st;
        int rfd = open(path, O_RDONLY | O_CLOEXEC);
        char last = '\n';
        if (rfd >= 0 && fstat(rfd, &st) == 0 && st.st_size > 0)
            if (pread(rfd, &last, 1, st.st_size - 1) != 1)
                last = '\n';
        if (rfd >= 0)
            close(rfd);
        if (last != '\n') {
            fputc('\n', w->f);
            fflush(w->f);
        }
        return 0;
    }
    json_t *o = s_meta_json(m);
    if (o)
        json_object_set_new(o, "ev", json_string("start"));
    return s_line(w, o);
}

void cr_wal_close(cr_wal_t *w)
{
    if (w->f) {
        cr_wal_sync(w);
        fclose(w->f);
    }
    free(w->path);
    memset(w, 0, sizeof *w);
}

void cr_wal_sync(cr_wal_t *w)
{
    if (w->f && w->dirty) {
        fdatasync(fileno(w->f));
        w->dirty = 0;
    }
}

static json_t *s_key(const char *ev, const cr_traj_t *t, uint32_t turn)
{
    return json_pack("{s:s, s:s, s:i, s:i}", "ev", ev, "task", t->task, "sample", (int)t->sample,
                     "turn", (int)turn);
}

static const char *s_str(const char *s)
{
    return s ? s : "";
}

int cr_wal_completion(cr_wal_t *w, const cr_traj_t *t, const cr_turn_t *u)
{
    json_t *o = s_key("completion", t, u->turn);
    if (!o)
        return -ENOMEM;
    json_object_set_new(o, "messages", u->messages ? json_incref(u->messages) : json_array());
    json_object_set_new(o, "dropped", json_integer((json_int_t)u->dropped));
    json_object_set_new(o, "completion", json_string(s_str(u->completion)));
    json_object_set_new(o, "kernel", json_string(s_str(u->kernel)));
    json_object_set_new(o, "finish_reason", json_string(s_str(u->finish_reason)));
    json_object_set_new(o, "prompt_tokens", json_integer(u->prompt_tokens));
    json_object_set_new(o, "completion_tokens", json_integer(u->completion_tokens));
    json_object_set_new(o, "endpoint", json_string(s_str(u->endpoint)));
    json_object_set_new(o, "attempts", json_integer(u->attempts));
    json_object_set_new(o, "latency_ms", json_real(u->latency_ms));
    json_object_set_new(o, "faults", json_string(s_str(u->faults)));
    json_object_set_new(o, "job_id", json_string(u->job_id));
    return s_line(w, o);
}

int cr_wal_judged(cr_wal_t *w, const cr_traj_t *t, const cr_turn_t *u)
{
    json_t *o = s_key("judged", t, u->turn);
    char *rj = u->record ? cr_record_to_json(u->record) : NULL;
    json_t *r = rj ? json_loads(rj, 0, NULL) : NULL;
    free(rj);
    if (!o || !r) {
        json_decref(o);
        json_decref(r);
        return -ENOMEM;
    }
    json_object_set_new(o, "record", r);
    return s_line(w, o);
}

int cr_wal_failed(cr_wal_t *w, const cr_traj_t *t, uint32_t turn, const char *error)
{
    json_t *o = s_key("failed", t, turn);
    if (o)
        json_object_set_new(o, "error", json_string(s_str(error)));
    return s_line(w, o);
}

static char *s_jdup(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return strdup(s ? s : "");
}

int cr_wal_load(const char *path, cr_traj_t *(*find)(void *arg, const char *task,
                                                     uint32_t sample),
                void *arg, char *rollout_id, size_t len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int applied = 0, lineno = 0, rc = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (n <= 1)
            continue;
        json_t *o = json_loads(line, 0, NULL);
        if (!json_is_object(o)) {
            /* a torn line (the process was killed while writing it): the
             * step it described was not acted on, so it is done again */
            json_decref(o);
            continue;
        }
        const char *ev = json_string_value(json_object_get(o, "ev"));
        if (ev && strcmp(ev, "start") == 0) {
            const char *id = json_string_value(json_object_get(o, "rollout"));
            if (id && rollout_id && !rollout_id[0])
                snprintf(rollout_id, len, "%s", id);
            applied++;
            json_decref(o);
            continue;
        }
        const char *task = json_string_value(json_object_get(o, "task"));
        json_int_t sample = json_integer_value(json_object_get(o, "sample"));
        json_int_t turn = json_integer_value(json_object_get(o, "turn"));
        cr_traj_t *t = ev && task && sample >= 0 && turn >= 1 ? find(arg, task, (uint32_t)sample)
                                                              : NULL;
        if (!t) {
            json_decref(o);
            continue;
        }
        if (strcmp(ev, "completion") == 0 && (uint32_t)turn == t->nturns + 1) {
            cr_turn_t *u = cr_traj_add_turn(t);
            if (!u) {
                json_decref(o);
                rc = -ENOMEM;
                break;
            }
            u->messages = json_incref(json_object_get(o, "messages"));
            u->dropped = (size_t)json_integer_value(json_object_get(o, "dropped"));
            u->completion = s_jdup(o, "completion");
            u->kernel = s_jdup(o, "kernel");
            u->finish_reason = s_jdup(o, "finish_reason");
            u->prompt_tokens = json_integer_value(json_object_get(o, "prompt_tokens"));
            u->completion_tokens = json_integer_value(json_object_get(o, "completion_tokens"));
            u->endpoint = s_jdup(o, "endpoint");
            u->attempts = (int)json_integer_value(json_object_get(o, "attempts"));
            u->latency_ms = json_number_value(json_object_get(o, "latency_ms"));
            u->faults = s_jdup(o, "faults");
            snprintf(u->job_id, sizeof u->job_id, "%s",
                     s_str(json_string_value(json_object_get(o, "job_id"))));
            applied++;
        } else if (strcmp(ev, "judged") == 0 && (uint32_t)turn == t->nturns &&
                   !t->turns[turn - 1].record) {
            char *rj = json_dumps(json_object_get(o, "record"), JSON_COMPACT);
            char why[256];
            if (!rj || cr_record_from_json(rj, &t->turns[turn - 1].record, why, sizeof why) != 0) {
                snprintf(err, errlen, "%s:%d: judged record: %s", path, lineno,
                         rj ? why : "out of memory");
                free(rj);
                json_decref(o);
                rc = CR_E_JSON;
                break;
            }
            free(rj);
            applied++;
        } else if (strcmp(ev, "failed") == 0) {
            t->state = CR_TRAJ_DONE;
            snprintf(t->stop, sizeof t->stop, "llm_error");
            free(t->error);
            t->error = s_jdup(o, "error");
            applied++;
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    return rc ? rc : applied;
}

/* ---- outputs ---- */

json_t *cr_traj_json(const cr_traj_t *t, const cr_traj_meta_t *m, const char *batch)
{
    json_t *o = json_pack("{s:s, s:s, s:i, s:s+++, s:s, s:s}", "rollout", m->rollout_id, "task",
                          t->task, "sample", (int)t->sample, "group_id", m->rollout_id, "/",
                          t->task, "", "model", m->model, "endpoints", m->endpoints);
    json_t *turns = json_array();
    if (!o || !turns) {
        json_decref(o);
        json_decref(turns);
        return NULL;
    }
    json_object_set_new(o, "sampling",
                        json_pack("{s:f, s:f, s:I, s:i, s:b}", "temperature", m->temperature,
                                  "top_p", m->top_p, "max_tokens", (json_int_t)m->max_tokens, "n",
                                  (int)m->n, "stream", m->stream));
    json_object_set_new(o, "credit", json_string(m->credit));
    json_object_set_new(o, "gamma", json_real(m->gamma));
    json_object_set_new(o, "reward_formula", json_string(m->reward));
    json_object_set_new(o, "stop", json_string(t->stop));
    if (t->error)
        json_object_set_new(o, "error", json_string(t->error));
    for (uint32_t i = 0; i < t->nturns; i++) {
        const cr_turn_t *u = &t->turns[i];
        const Crucible__RewardRecord *r = u->record;
        json_t *j = json_object();
        char rid[2 * CR_TRAJ_ID + 2];
        snprintf(rid, sizeof rid, "%s/%s", batch, u->job_id);
        json_object_set_new(j, "turn", json_integer(u->turn));
        json_object_set(j, "messages", u->messages);
        json_object_set_new(j, "messages_dropped", json_integer((json_int_t)u->dropped));
        json_object_set_new(j, "completion", json_string(s_str(u->completion)));
        json_object_set_new(j, "kernel", json_string(s_str(u->kernel)));
        json_object_set_new(j, "finish_reason", json_string(s_str(u->finish_reason)));
        json_object_set_new(j, "usage", json_pack("{s:I, s:I}", "prompt_tokens",
                                                  (json_int_t)u->prompt_tokens,
                                                  "completion_tokens",
                                                  (json_int_t)u->completion_tokens));
        json_object_set_new(j, "endpoint", json_string(s_str(u->endpoint)));
        json_object_set_new(j, "attempts", json_integer(u->attempts));
        json_object_set_new(j, "latency_ms", json_real(u->latency_ms));
        json_object_set_new(j, "faults", json_string(s_str(u->faults)));
        json_object_set_new(j, "job_id", json_string(u->job_id));
        json_object_set_new(j, "record_id", r ? json_string(rid) : json_null());
        json_object_set_new(j, "status", json_string(r ? cr_status_name(r->status) : "UNJUDGED"));
        json_object_set_new(j, "speedup",
                            json_real(r && r->profile ? r->profile->speedup_geomean : 0));
        json_object_set_new(j, "message", json_string(r ? s_str(r->message) : ""));
        json_t *flags = json_array();
        for (size_t k = 0; r && k < r->n_hack_flags; k++)
            json_array_append_new(flags, json_string(r->hack_flags[k]));
        json_object_set_new(j, "hack_flags", flags);
        json_object_set_new(j, "has_reward", json_boolean(u->has_reward));
        json_object_set_new(j, "reward", json_real(u->reward));
        json_object_set_new(j, "return", json_real(u->ret));
        json_object_set_new(j, "advantage", json_real(u->adv));
        json_object_set_new(j, "feedback", u->feedback ? json_string(u->feedback) : json_null());
        json_array_append_new(turns, j);
    }
    json_object_set_new(o, "turns", turns);
    return o;
}

/* Appends a varint length and the packed message to m. */
static int s_put_delimited(FILE *m, const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(n ? n : 1), hdr[10];
    if (!buf)
        return -ENOMEM;
    protobuf_c_message_pack(msg, buf);
    size_t k = 0;
    for (uint64_t v = n; ; v >>= 7) {
        hdr[k++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    int rc = fwrite(hdr, 1, k, m) == k && fwrite(buf, 1, n, m) == n ? 0 : -EIO;
    free(buf);
    return rc;
}

/* The Trajectory message of t, packed onto m. Its strings are borrowed. */
static int s_write_pb(FILE *m, const cr_traj_t *t, const cr_traj_meta_t *meta, const char *batch)
{
    Crucible__Trajectory tr = CRUCIBLE__TRAJECTORY__INIT;
    Crucible__SamplingParams sp = CRUCIBLE__SAMPLING_PARAMS__INIT;
    char group[2 * CR_TRAJ_ID + 2], *eps[1] = {(char *)meta->endpoints};
    snprintf(group, sizeof group, "%s/%s", meta->rollout_id, t->task);
    tr.rollout_id = (char *)meta->rollout_id;
    tr.task = t->task;
    tr.sample_index = t->sample;
    tr.group_id = group;
    tr.model = (char *)meta->model;
    tr.n_endpoints = 1;
    tr.endpoints = eps;
    sp.temperature = meta->temperature;
    sp.top_p = meta->top_p;
    sp.max_tokens = meta->max_tokens;
    sp.n = meta->n;
    sp.stream = meta->stream;
    tr.sampling = &sp;
    tr.credit = (char *)meta->credit;
    tr.gamma = meta->gamma;
    tr.stop = (char *)t->stop;
    tr.reward_formula = (char *)meta->reward;
    tr.error = t->error ? t->error : "";
    Crucible__TrajectoryTurn *turns = calloc(t->nturns ? t->nturns : 1, sizeof *turns);
    Crucible__TrajectoryTurn **tp = calloc(t->nturns ? t->nturns : 1, sizeof *tp);
    char (*rids)[2 * CR_TRAJ_ID + 2] = calloc(t->nturns ? t->nturns : 1, sizeof *rids);
    int rc = turns && tp && rids ? 0 : -ENOMEM;
    size_t nmsg = 0;
    for (uint32_t i = 0; rc == 0 && i < t->nturns; i++)
        nmsg += json_array_size(t->turns[i].messages);
    Crucible__ChatMessage *msgs = calloc(nmsg ? nmsg : 1, sizeof *msgs);
    Crucible__ChatMessage **mp = calloc(nmsg ? nmsg : 1, sizeof *mp);
    if (!msgs || !mp)
        rc = -ENOMEM;
    size_t mk = 0;
    for (uint32_t i = 0; rc == 0 && i < t->nturns; i++) {
        const cr_turn_t *u = &t->turns[i];
        Crucible__TrajectoryTurn *x = &turns[i];
        crucible__trajectory_turn__init(x);
        tp[i] = x;
        x->turn = u->turn;
        x->messages = mp + mk;
        size_t k;
        json_t *msg;
        json_array_foreach(u->messages, k, msg) {
            crucible__chat_message__init(&msgs[mk]);
            msgs[mk].role = (char *)s_str(json_string_value(json_object_get(msg, "role")));
            msgs[mk].content = (char *)s_str(json_string_value(json_object_get(msg, "content")));
            mp[mk] = &msgs[mk];
            mk++;
            x->n_messages++;
        }
        x->completion = (char *)s_str(u->completion);
        x->kernel = (char *)s_str(u->kernel);
        x->finish_reason = (char *)s_str(u->finish_reason);
        x->prompt_tokens = u->prompt_tokens;
        x->completion_tokens = u->completion_tokens;
        x->endpoint = (char *)s_str(u->endpoint);
        x->attempts = (uint32_t)u->attempts;
        snprintf(rids[i], sizeof rids[i], "%s/%s", batch, u->job_id);
        x->record_id = u->record ? rids[i] : "";
        x->status = u->record ? u->record->status : CRUCIBLE__STATUS__STATUS_UNSPECIFIED;
        x->speedup = u->record && u->record->profile ? u->record->profile->speedup_geomean : 0;
        x->has_reward = u->has_reward;
        x->reward = u->reward;
        x->return_value = u->ret;
        x->advantage = u->adv;
        x->feedback = (char *)s_str(u->feedback);
        x->n_hack_flags = u->record ? u->record->n_hack_flags : 0;
        x->hack_flags = u->record ? u->record->hack_flags : NULL;
        x->message = (char *)(u->record ? s_str(u->record->message) : "");
    }
    tr.n_turns = t->nturns;
    tr.turns = tp;
    if (rc == 0)
        rc = s_put_delimited(m, &tr.base);
    free(msgs);
    free(mp);
    free(turns);
    free(tp);
    free(rids);
    return rc;
}

int cr_traj_write(const char *path, int pb, cr_traj_t *const *ts, size_t n,
                  const cr_traj_meta_t *m, const char *batch)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return -errno;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (pb) {
            rc = s_write_pb(mem, ts[i], m, batch);
            continue;
        }
        json_t *o = cr_traj_json(ts[i], m, batch);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!s)
            rc = -ENOMEM;
        else
            fprintf(mem, "%s\n", s);
        free(s);
    }
    if (fclose(mem) != 0 && rc == 0)
        rc = -EIO;
    if (rc == 0)
        rc = cr_file_write_atomic(path, buf ? buf : "", len);
    free(buf);
    return rc;
}
