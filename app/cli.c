/* cli.c — the client subcommands; see cli.h and docs/protocol.md. */
#define _GNU_SOURCE
#include "cli.h"

#include "coordinator.h"
#include "error.h"
#include "file.h"
#include "gateway.h"
#include "hash.h"
#include "log.h"
#include "record.h"
#include "task.h"
#include "timeutil.h"
#include "wire.h"
#include "worker.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ parsing */

int cr_cli_parse(const char *name, unsigned cmd, const char *usage, int min_pos, int max_pos,
                 int argc, char **argv, cr_config_t *cfg, int *npos)
{
    char err[512];
    int dump = 0;
    /* --dump-config is not a setting, so it is taken out before the table parses */
    int k = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc)
                argv[k++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--dump-config") == 0)
            dump = 1;
        else
            argv[k++] = argv[i];
    }
    argc = k;
    cr_config_defaults(cfg);
    int rc = cr_config_env(cfg, cmd, err, sizeof err);
    if (rc == 0)
        rc = cr_config_argv(cfg, cmd, argc, argv, npos, err, sizeof err);
    if (rc == 1) {
        printf("usage: %s\n\noptions (each also CRUCIBLE_<NAME> in the environment):\n", usage);
        cr_config_help(stdout, cmd);
        printf("  %-28s %s\n  %-28s %s\n", "--dump-config", "print the settings and exit",
               "--help", "print this help");
        return CR_EXIT_OK;
    }
    if (rc == 0 && dump) {
        cr_config_dump(stdout, cfg, cmd);
        return CR_EXIT_OK;
    }
    if (rc == 0 && (*npos < min_pos || *npos > max_pos)) {
        if (min_pos == max_pos)
            snprintf(err, sizeof err, "expected %d argument%s, got %d", min_pos,
                     min_pos == 1 ? "" : "s", *npos);
        else if (max_pos >= CR_CLI_ANY)
            snprintf(err, sizeof err, "expected at least %d argument%s, got %d", min_pos,
                     min_pos == 1 ? "" : "s", *npos);
        else
            snprintf(err, sizeof err, "expected %d to %d arguments, got %d", min_pos, max_pos,
                     *npos);
        rc = CR_E_USAGE;
    }
    if (rc != 0) {
        fprintf(stderr, "crucible %s: %s\nusage: %s\n(see crucible %s --help)\n", name, err, usage,
                name);
        return CR_EXIT_USAGE;
    }
    cr_log_level_t level = CR_LEVEL_INFO;
    cr_log_parse_level(cfg->log_level, &level); /* validated by the table */
    cr_log_set_level(level);
    return -1;
}

static volatile sig_atomic_t s_interrupted;

static void s_on_signal(int sig)
{
    (void)sig;
    s_interrupted = 1;
}

void cr_cli_catch_signals(void)
{
    struct sigaction sa = {.sa_handler = s_on_signal}; /* no SA_RESTART: waits return EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cr_cli_interrupted(void)
{
    return s_interrupted;
}

/* ----------------------------------------------------------------- progress */

void cr_progress_init(cr_progress_t *p, FILE *f, uint32_t total)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->tty = isatty(fileno(f));
    p->total = total;
    p->t0_ms = cr_time_mono_ms();
}

void cr_progress_set_total(cr_progress_t *p, uint32_t total, uint32_t done_already)
{
    p->total = total;
    p->done0 = done_already;
    p->t0_ms = cr_time_mono_ms();
}

void cr_progress_add(cr_progress_t *p, const Crucible__RewardRecord *rec)
{
    p->done++;
    p->by_status[rec->status >= 0 && rec->status < CR_PROGRESS_NSTATUS ? rec->status : 0]++;
    for (size_t i = 0; i < rec->n_hack_flags; i++) {
        int k = 0;
        while (k < p->nflags && strcmp(p->flags[k], rec->hack_flags[i]) != 0)
            k++;
        if (k == p->nflags && k < CR_PROGRESS_NFLAGS)
            snprintf(p->flags[p->nflags++], sizeof p->flags[0], "%s", rec->hack_flags[i]);
        p->flag_count[k]++; /* k == CR_PROGRESS_NFLAGS: the "other" slot */
    }
}

void cr_progress_counts(const cr_progress_t *p, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
#define S_PUT(...)                                                                          \
    do {                                                                                    \
        int k_ = snprintf(out + n, len - n, __VA_ARGS__);                                   \
        if (k_ > 0)                                                                         \
            n = n + (size_t)k_ < len ? n + (size_t)k_ : len - 1;                            \
    } while (0)
    const char *sep = "";
    for (int s = 0; s < CR_PROGRESS_NSTATUS; s++) {
        if (p->by_status[s]) {
            S_PUT("%s%s %u", sep, cr_status_name(s), p->by_status[s]);
            sep = ", ";
        }
    }
    if (p->nflags) {
        S_PUT("%shacks:", n ? "  " : "");
        sep = " ";
        for (int k = 0; k <= p->nflags && k <= CR_PROGRESS_NFLAGS; k++) {
            if (p->flag_count[k]) {
                S_PUT("%s%s %u", sep, k < p->nflags ? p->flags[k] : "other", p->flag_count[k]);
                sep = ", ";
            }
        }
    }
#undef S_PUT
}

void cr_progress_draw(cr_progress_t *p, int final)
{
    int64_t now = cr_time_mono_ms();
    if (!final && !p->total && !p->done)
        return; /* nothing to show until the StatusReply or a first record */
    /* a terminal redraws 10 times a second; a log gets a line when something
     * changed (at most every 2 s) and otherwise every 30 s, as a sign of life */
    if (!final && p->tty && now - p->last_ms < 100)
        return;
    if (!final && !p->tty && (now - p->last_ms < 2000 ||
                              (p->done == p->last_done && now - p->last_ms < 30000)))
        return;
    p->last_ms = now;
    p->last_done = p->done;
    char line[1024];
    size_t n = 0;
#define S_PUT(...)                                                                          \
    do {                                                                                    \
        int k_ = snprintf(line + n, sizeof line - n, __VA_ARGS__);                          \
        if (k_ > 0)                                                                         \
            n = n + (size_t)k_ < sizeof line ? n + (size_t)k_ : sizeof line - 1;            \
    } while (0)
    if (p->total) {
        int w = 24, fill = (int)((uint64_t)w * (p->done > p->total ? p->total : p->done) / p->total);
        S_PUT("[%.*s%.*s] ", fill, "########################", w - fill,
              "........................");
        S_PUT("%u/%u", p->done, p->total);
    } else {
        S_PUT("%u done", p->done);
    }
    char counts[768];
    cr_progress_counts(p, counts, sizeof counts);
    if (counts[0])
        S_PUT("  %s", counts);
    double secs = (double)(now - p->t0_ms) / 1000.0;
    double rate = secs > 0.5 && p->done > p->done0 ? (p->done - p->done0) / secs : 0;
    if (rate > 0) {
        S_PUT("  %.1f/s", rate);
        if (p->total > p->done) {
            long eta = lround((p->total - p->done) / rate);
            S_PUT("  ETA %ld:%02ld", eta / 60, eta % 60);
        }
    }
#undef S_PUT
    if (p->tty) {
        fprintf(p->f, "\r\033[K%s%s", line, final ? "\n" : "");
        p->dirty = !final;
    } else {
        fprintf(p->f, "%s\n", line);
    }
    fflush(p->f);
}

/* ------------------------------------------------------------------ stream */

/* The CR_E_* code named by a wire Error.code ("E_NOT_FOUND"), CR_E_STATE if unknown. */
static int s_code(const char *name)
{
#define S_CODE(n, val, msg)                                                                 \
    if (strcmp(name, "E_" #n) == 0)                                                         \
        return val;
    CR_ERRNO_MAP(S_CODE)
#undef S_CODE
    return CR_E_STATE;
}

int cr_cli_wait_reply(cr_client_t *c, double wait_s, int want, Crucible__Envelope **out,
                      int (*tick)(void *arg), void *arg, char *err, size_t errlen)
{
    *out = NULL;
    int64_t start = cr_time_mono_ms(), last = start;
    int warned = 0;
    for (;;) {
        if (s_interrupted) {
            snprintf(err, errlen, "interrupted");
            return -EINTR;
        }
        int t = tick ? tick(arg) : 0;
        if (t != 0) {
            snprintf(err, errlen, "stopped");
            return t;
        }
        int64_t now = cr_time_mono_ms();
        if (wait_s > 0 && now - start > (int64_t)(wait_s * 1000)) {
            snprintf(err, errlen, "no reply from the coordinator within %g s", wait_s);
            return CR_E_TIMEOUT;
        }
        if (!warned && now - last > 5000) {
            /* 5 s: far above a healthy coordinator's reply time */
            fprintf(stderr, "crucible: still waiting for the coordinator...\n");
            warned = 1;
        }
        Crucible__Envelope *env = NULL;
        int rc = cr_client_recv(c, 250, &env);
        if (rc == -EAGAIN || rc == -EINTR || (rc != 0 && rc != CR_E_ZMQ))
            continue;
        if (rc != 0) {
            snprintf(err, errlen, "socket error: %s", cr_strerror(rc));
            return rc;
        }
        if ((int)env->body_case == want) {
            *out = env;
            return 0;
        }
        if (env->body_case == CRUCIBLE__ENVELOPE__BODY_ERROR) {
            snprintf(err, errlen, "%s: %s", env->error->code, env->error->message);
            rc = s_code(env->error->code);
            cr_wire_free(&env);
            return rc;
        }
        cr_wire_free(&env); /* a late message of an earlier request */
    }
}

/* Ends a progress line left open on a terminal, so what follows starts clean. */
static void s_end_line(cr_progress_t *p)
{
    if (p && p->dirty) {
        fputc('\n', p->f);
        p->dirty = 0;
    }
}

int64_t cr_cli_silence_ms(const cr_config_t *cfg)
{
    if (cfg->heartbeat_ms <= 0 || cfg->liveness <= 0)
        return CR_CLI_SILENCE_MS;
    return cfg->heartbeat_ms * cfg->liveness;
}

/* (Re)starts the stream on the client's current socket. */
static int s_stream_subscribe(cr_stream_t *s)
{
    if (s->progress && !s->progress->total && cr_client_status(s->client, s->batch) != 0)
        return CR_E_ZMQ;
    return cr_client_subscribe(s->client, s->batch, s->last_seq, 1);
}

int cr_cli_stream(cr_stream_t *s)
{
    s->error[0] = '\0';
    int64_t silence = s->silence_ms ? s->silence_ms : CR_CLI_SILENCE_MS;
    if (s_stream_subscribe(s) != 0)
        goto zmq_fail;
    int64_t start = cr_time_mono_ms(), heard = start;
    for (;;) {
        int64_t now = cr_time_mono_ms();
        if (silence > 0 && now - heard > silence) {
            /* No heartbeat: the coordinator died (and may be back on the
             * same endpoint) or dropped us. A new connection and the
             * records after the last one seen; seq filters any overlap. */
            cr_warn("batch %s: no word from the coordinator for %lld ms: reconnecting, "
                    "resuming after seq %llu", s->batch, (long long)(now - heard),
                    (unsigned long long)s->last_seq);
            heard = now;
            s->reconnects++;
            if (cr_client_reconnect(s->client) != 0 || s_stream_subscribe(s) != 0)
                goto zmq_fail;
        }
        int rc = s->tick ? s->tick(s->arg) : 0;
        if (s_interrupted) {
            snprintf(s->error, sizeof s->error, "interrupted");
            rc = -EINTR;
        } else if (rc == 0 && s->wait_s > 0 &&
                   cr_time_mono_ms() - start > (int64_t)(s->wait_s * 1000)) {
            snprintf(s->error, sizeof s->error, "batch %s not done after %g s", s->batch,
                     s->wait_s);
            rc = CR_E_TIMEOUT;
        }
        if (rc != 0) {
            s_end_line(s->progress);
            return rc;
        }
        if (s->progress)
            cr_progress_draw(s->progress, 0);
        Crucible__Envelope *env = NULL;
        rc = cr_client_recv(s->client, 250, &env);
        if (rc == CR_E_ZMQ)
            goto zmq_fail;
        if (rc != 0)
            continue; /* timeout, signal (checked above) or one bad message (logged) */
        heard = cr_time_mono_ms(); /* any message, Heartbeat included, is a sign of life */
        switch (env->body_case) {
        case CRUCIBLE__ENVELOPE__BODY_RESULT: {
            const Crucible__RewardRecord *r = env->result->record;
            if (!r || strcmp(r->batch_id, s->batch) != 0 || r->seq <= s->last_seq)
                break; /* another batch, or a replayed duplicate */
            s->last_seq = r->seq;
            if (s->progress)
                cr_progress_add(s->progress, r);
            rc = s->on_record ? s->on_record(s->arg, r) : 0;
            break;
        }
        case CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY:
            if (s->progress && strcmp(env->status_reply->batch_id, s->batch) == 0)
                cr_progress_set_total(s->progress, env->status_reply->batch_total,
                                      env->status_reply->batch_done);
            break;
        case CRUCIBLE__ENVELOPE__BODY_BATCH_DONE:
            if (strcmp(env->batch_done->batch_id, s->batch) != 0)
                break;
            s->total = env->batch_done->total;
            if (s->progress) {
                if (!s->progress->total)
                    s->progress->total = s->total;
                cr_progress_draw(s->progress, 1);
            }
            cr_wire_free(&env);
            return 0;
        case CRUCIBLE__ENVELOPE__BODY_ERROR:
            snprintf(s->error, sizeof s->error, "%s: %s", env->error->code, env->error->message);
            rc = s_code(env->error->code);
            break;
        default:
            break; /* GroupDone and replies to other requests */
        }
        cr_wire_free(&env);
        if (rc != 0) {
            s_end_line(s->progress);
            return rc;
        }
    }
zmq_fail:
    snprintf(s->error, sizeof s->error, "cannot send to the coordinator: %s",
             cr_strerror(CR_E_ZMQ));
    return CR_E_ZMQ;
}

/* ---------------------------------------------------------------- commands */

/* A client for cfg's endpoint, or NULL after saying why. */
static cr_client_t *s_connect(const char *cmd, const cr_config_t *cfg)
{
    cr_client_t *c = cr_client_new_cfg(cfg);
    if (!c)
        fprintf(stderr, "crucible %s: cannot connect to %s\n", cmd, cfg->clients_endpoint);
    return c;
}

/* Status and cancel wait this long when --wait-s is 0: a one-shot question
 * should not hang on a coordinator that is down. */
#define S_QUERY_WAIT_S 10.0

/* Waits for the reply to a request whose send returned sent. */
static int s_ask(cr_client_t *c, const cr_config_t *cfg, int sent, int want,
                 Crucible__Envelope **env, char *err, size_t errlen)
{
    if (sent != 0) {
        snprintf(err, errlen, "%s", cr_strerror(sent));
        return sent;
    }
    return cr_cli_wait_reply(c, cfg->wait_s > 0 ? cfg->wait_s : S_QUERY_WAIT_S, want, env, NULL,
                             NULL, err, errlen);
}

void cr_cli_batch_id(const cr_config_t *cfg, const char *prefix, char *out, size_t len)
{
    if (cfg->batch[0]) {
        snprintf(out, len, "%s", cfg->batch);
        return;
    }
    cr_hash_global_init();
    cr_random_id(prefix, out, len);
}

/* One Submit of jobs[off, off + n) of js, waiting for its SubmitAck. */
static int s_submit_chunk(cr_client_t *c, const cr_config_t *cfg, const cr_jobset_t *js,
                          size_t off, size_t n, const char *batch, int (*tick)(void *arg),
                          void *arg, Crucible__Envelope **ack, char *err, size_t errlen)
{
    *ack = NULL;
    Crucible__JobOptions opts;
    cr_client_job_options(cfg, &opts);
    /* Twice the silence: a large submit keeps a live coordinator busy a while,
     * and a needless resubmit costs a second pass over the jobs. */
    double slice_s = 2.0 * (double)cr_cli_silence_ms(cfg) / 1000.0;
    int64_t start = cr_time_mono_ms();
    for (;;) {
        int rc = cr_client_submit(c, batch, js->tasks, js->ntasks, js->jobs + off, n, &opts, 0);
        if (rc != 0) {
            snprintf(err, errlen, "%s%s", cr_strerror(rc),
                     rc == CR_E_TOO_BIG ? " (split the candidates, or raise --max-msg)" : "");
            return rc;
        }
        double left = cfg->wait_s > 0 ? cfg->wait_s - (double)(cr_time_mono_ms() - start) / 1000.0
                                      : slice_s;
        if (left <= 0) {
            snprintf(err, errlen, "no reply from the coordinator within %g s", cfg->wait_s);
            return CR_E_TIMEOUT;
        }
        rc = cr_cli_wait_reply(c, left < slice_s ? left : slice_s,
                               CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK, ack, tick, arg, err, errlen);
        if (rc != CR_E_TIMEOUT || (cfg->wait_s > 0 && left <= slice_s))
            return rc; /* a reply, an error, or --wait-s spent */
        /* The coordinator may have died with our Submit, or before answering
         * it: a new connection, the same batch again (idempotent). */
        cr_warn("batch %s: no SubmitAck within %g s: reconnecting and submitting again", batch,
                slice_s);
        if (cr_client_reconnect(c) != 0) {
            snprintf(err, errlen, "cannot reconnect to the coordinator");
            return CR_E_ZMQ;
        }
    }
}

int cr_cli_submit_batch(cr_client_t *c, const cr_config_t *cfg, const cr_jobset_t *js,
                        const char *batch, int (*tick)(void *arg), void *arg,
                        Crucible__Envelope **ack, char *err, size_t errlen)
{
    /* A coordinator takes at most --max-submit-jobs per Submit so that
     * storing one never stalls its loop: a larger batch goes in several
     * Submits of the same batch id, one after the other, and the last
     * SubmitAck returned carries the counts of them all. */
    uint32_t accepted = 0, duplicate = 0, rejected = 0;
    size_t off = 0;
    *ack = NULL;
    do {
        size_t n = js->njobs - off < CR_CLI_SUBMIT_CHUNK ? js->njobs - off : CR_CLI_SUBMIT_CHUNK;
        cr_wire_free(ack);
        int rc = s_submit_chunk(c, cfg, js, off, n, batch, tick, arg, ack, err, errlen);
        if (rc != 0)
            return rc;
        accepted += (*ack)->submit_ack->accepted;
        duplicate += (*ack)->submit_ack->duplicate;
        rejected += (*ack)->submit_ack->rejected;
        off += n;
    } while (off < js->njobs);
    (*ack)->submit_ack->accepted = accepted;
    (*ack)->submit_ack->duplicate = duplicate;
    (*ack)->submit_ack->rejected = rejected;
    return 0;
}

int cr_cli_submit(int argc, char **argv)
{
    static const char usage[] =
        "crucible submit TASKS [CANDIDATES] [--batch ID] [--follow] [options]\n"
        "  TASKS       a task folder or a folder of task folders\n"
        "  CANDIDATES  a folder laid out <task>/<file> (or <task>/candidates/<file>), or a\n"
        "              JSONL manifest of {\"task\", \"file\" | \"source\", \"job_id\"?,\n"
        "              \"group_id\"?, \"sample_index\"?, \"turn\"?}; default: each task's\n"
        "              candidates/ folder. Prints the batch id.";
    cr_config_t cfg;
    int npos, x = cr_cli_parse("submit", CR_CMD_SUBMIT, usage, 1, 2, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    int code = CR_EXIT_FAIL;
    cr_jobset_t js = {0};
    cr_client_t *c = NULL;
    Crucible__Envelope *env = NULL;
    char err[1024], batch[CR_CONFIG_STR];
    if (cr_jobset_load(&js, argv[0], npos > 1 ? argv[1] : NULL, err, sizeof err) != 0) {
        fprintf(stderr, "crucible submit: %s\n", err);
        goto done;
    }
    if (js.njobs == 0) {
        fprintf(stderr, "crucible submit: no candidates found\n");
        goto done;
    }
    cr_cli_batch_id(&cfg, "b-", batch, sizeof batch);
    if (!(c = s_connect("submit", &cfg)))
        goto done;
    if (cr_cli_submit_batch(c, &cfg, &js, batch, NULL, NULL, &env, err, sizeof err) != 0) {
        fprintf(stderr, "crucible submit: batch %s: %s\n", batch, err);
        goto done;
    }
    const Crucible__SubmitAck *ack = env->submit_ack;
    printf("%s\n", batch);
    fflush(stdout);
    fprintf(stderr, "batch %s: %u accepted, %u duplicate, %u rejected; queue depth %u\n", batch,
            ack->accepted, ack->duplicate, ack->rejected, ack->queue_depth);
    for (size_t i = 0; i < ack->n_errors; i++)
        fprintf(stderr, "  %s\n", ack->errors[i]);
    for (size_t i = 0; i < ack->n_warnings; i++)
        fprintf(stderr, "  warning: %s\n", ack->warnings[i]);
    code = CR_EXIT_OK;
    if (cfg.follow) {
        cr_progress_t p;
        cr_progress_init(&p, stderr, (uint32_t)js.njobs);
        cr_stream_t s = {.client = c, .batch = batch, .wait_s = cfg.wait_s, .progress = &p,
                         .silence_ms = cr_cli_silence_ms(&cfg)};
        if (cr_cli_stream(&s) != 0) {
            fprintf(stderr, "crucible submit: %s\n", s.error);
            code = CR_EXIT_FAIL;
        }
    }
done:
    cr_wire_free(&env);
    cr_client_destroy(&c);
    cr_jobset_close(&js);
    return code;
}

int cr_cli_watch(int argc, char **argv)
{
    cr_config_t cfg;
    int npos, x = cr_cli_parse("watch", CR_CMD_WATCH, "crucible watch BATCH [options]", 1, 1,
                               argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    cr_client_t *c = s_connect("watch", &cfg);
    if (!c)
        return CR_EXIT_FAIL;
    cr_progress_t p;
    cr_progress_init(&p, stdout, 0);
    cr_stream_t s = {.client = c, .batch = argv[0], .wait_s = cfg.wait_s, .progress = &p,
                     .silence_ms = cr_cli_silence_ms(&cfg)};
    int rc = cr_cli_stream(&s);
    if (rc != 0)
        fprintf(stderr, "crucible watch: %s\n", s.error);
    cr_client_destroy(&c);
    return rc == 0 ? CR_EXIT_OK : CR_EXIT_FAIL;
}

typedef struct {
    FILE *f;       /* output, borrowed */
    int format;    /* 0 jsonl, 1 csv, 2 pb, 3 kernelbench (jsonl of KernelBench's fields) */
    uint64_t n;    /* records written */
    cr_progress_t *counts; /* per status and flag, when no progress line counts them; borrowed */
} s_writer_t;

static int s_write_record(void *arg, const Crucible__RewardRecord *rec)
{
    s_writer_t *w = arg;
    int rc = 0;
    if (w->counts)
        cr_progress_add(w->counts, rec);
    if (w->format == 0) {
        char *j = cr_record_to_json(rec);
        rc = j && fprintf(w->f, "%s\n", j) > 0 ? 0 : -EIO;
        free(j);
    } else if (w->format == 3) {
        char *j = cr_record_to_kernelbench(rec);
        rc = j && fprintf(w->f, "%s\n", j) > 0 ? 0 : -EIO;
        free(j);
    } else if (w->format == 1) {
        cr_record_csv_row(w->f, rec);
        rc = ferror(w->f) ? -EIO : 0;
    } else {
        rc = cr_record_write_delimited(w->f, rec);
    }
    w->n += rc == 0;
    return rc;
}

int cr_cli_results(int argc, char **argv)
{
    cr_config_t cfg;
    int npos, x = cr_cli_parse("results", CR_CMD_RESULTS,
                               "crucible results BATCH [--format jsonl|csv|pb|kernelbench] [--out FILE] "
                               "[options]\n  writes every record of the batch; ends when the "
                               "batch is done (or --wait-s passes)",
                               1, 1, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    s_writer_t w = {.f = stdout,
                    .format = strcmp(cfg.format, "csv") == 0  ? 1
                              : strcmp(cfg.format, "pb") == 0 ? 2
                              : strcmp(cfg.format, "kernelbench") == 0 ? 3
                                                              : 0};
    if (cfg.out[0] && !(w.f = fopen(cfg.out, "we"))) {
        fprintf(stderr, "crucible results: %s: %s\n", cfg.out, strerror(errno));
        return CR_EXIT_FAIL;
    }
    cr_client_t *c = s_connect("results", &cfg);
    if (!c) {
        if (w.f != stdout)
            fclose(w.f);
        return CR_EXIT_FAIL;
    }
    if (w.format == 1)
        cr_record_csv_header(w.f);
    /* progress only where a person is looking and it cannot mix with the records */
    cr_progress_t p;
    cr_progress_init(&p, stderr, 0);
    int show = p.tty && (w.f != stdout || !isatty(STDOUT_FILENO));
    w.counts = show ? NULL : &p; /* a shown progress line counts them itself */
    cr_stream_t s = {.client = c, .batch = argv[0], .wait_s = cfg.wait_s,
                     .progress = show ? &p : NULL, .on_record = s_write_record, .arg = &w,
                     .silence_ms = cr_cli_silence_ms(&cfg)};
    int rc = cr_cli_stream(&s);
    if (rc == 0 && !show) {
        /* the per-batch summary a progress line would have ended with */
        char counts[768];
        cr_progress_counts(&p, counts, sizeof counts);
        fprintf(stderr, "batch %s: %llu records%s%s\n", argv[0], (unsigned long long)w.n,
                counts[0] ? ": " : "", counts);
    }
    if (rc != 0)
        fprintf(stderr, "crucible results: %s (%llu records written)\n",
                s.error[0] ? s.error : cr_strerror(rc), (unsigned long long)w.n);
    if (fflush(w.f) != 0 || (w.f != stdout && fclose(w.f) != 0)) {
        fprintf(stderr, "crucible results: %s: %s\n", cfg.out[0] ? cfg.out : "stdout",
                strerror(errno));
        rc = -EIO;
    }
    if (rc == 0 && cfg.out[0])
        fprintf(stderr, "%llu records of batch %s written to %s\n", (unsigned long long)w.n,
                argv[0], cfg.out);
    cr_client_destroy(&c);
    return rc == 0 ? CR_EXIT_OK : CR_EXIT_FAIL;
}

/* Prints a protobuf map<string, uint32> given as its entries. */
#define S_PRINT_MAP(label, entries, n)                                                      \
    do {                                                                                    \
        if (n) {                                                                            \
            printf("  %s:", label);                                                         \
            for (size_t i_ = 0; i_ < (n); i_++)                                             \
                printf("%s %s %u", i_ ? "," : "", (entries)[i_]->key, (entries)[i_]->value); \
            printf("\n");                                                                   \
        }                                                                                   \
    } while (0)

int cr_cli_status(int argc, char **argv)
{
    cr_config_t cfg;
    int npos, x = cr_cli_parse("status", CR_CMD_STATUS, "crucible status [BATCH] [options]", 0, 1,
                               argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    const char *batch = npos ? argv[0] : "";
    cr_client_t *c = s_connect("status", &cfg);
    if (!c)
        return CR_EXIT_FAIL;
    Crucible__Envelope *env = NULL;
    char err[600];
    int rc = s_ask(c, &cfg, cr_client_status(c, batch), CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY,
                   &env, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "crucible status: %s\n", err);
        cr_client_destroy(&c);
        return CR_EXIT_FAIL;
    }
    const Crucible__StatusReply *r = env->status_reply;
    printf("queue %u, running %u, done %llu, %.1f jobs/min, %zu worker%s\n", r->queue_depth,
           r->running, (unsigned long long)r->done, r->jobs_per_minute, r->n_workers,
           r->n_workers == 1 ? "" : "s");
    for (size_t i = 0; i < r->n_workers; i++) {
        const Crucible__WorkerInfo *w = r->workers[i];
        char gpus[64] = ""; /* a worker that owns several (docs/multigpu.md) */
        if (w->gpus > 1)
            snprintf(gpus, sizeof gpus, ", %u GPUs%s%s", w->gpus, w->nccl ? " nccl" : "",
                     w->nvlink ? " nvlink" : "");
        printf("  %-24s %-16s %-32s in flight %u/%u, done %llu%s%s\n", w->worker_id, w->host,
               w->device, w->in_flight, w->credit, (unsigned long long)w->done, gpus,
               w->draining ? " (draining)" : "");
    }
    if (batch[0]) {
        printf("batch %s: %u/%u done\n", r->batch_id, r->batch_done, r->batch_total);
        S_PRINT_MAP("by status", r->by_status, r->n_by_status);
        S_PRINT_MAP("hack flags", r->hack_flags, r->n_hack_flags);
    }
    cr_wire_free(&env);
    cr_client_destroy(&c);
    return CR_EXIT_OK;
}

int cr_cli_cancel(int argc, char **argv)
{
    cr_config_t cfg;
    int npos, x = cr_cli_parse("cancel", CR_CMD_CANCEL, "crucible cancel BATCH [JOB] [options]", 1,
                               2, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    cr_client_t *c = s_connect("cancel", &cfg);
    if (!c)
        return CR_EXIT_FAIL;
    Crucible__Envelope *env = NULL;
    char err[600];
    int rc = s_ask(c, &cfg, cr_client_cancel(c, argv[0], npos > 1 ? argv[1] : ""),
                   CRUCIBLE__ENVELOPE__BODY_CANCEL_ACK, &env, err, sizeof err);
    if (rc == 0)
        printf("batch %s: %u job%s cancelled\n", argv[0], env->cancel_ack->cancelled,
               env->cancel_ack->cancelled == 1 ? "" : "s");
    else
        fprintf(stderr, "crucible cancel: %s\n", err);
    cr_wire_free(&env);
    cr_client_destroy(&c);
    return rc == 0 ? CR_EXIT_OK : CR_EXIT_FAIL;
}

/* Checks one task folder; prints the verdict. Returns 0 or the loader's error. */
static int s_check_task(const char *dir)
{
    cr_task_t *t = NULL;
    char err[1024];
    int rc = cr_task_load_dir(dir, &t, err, sizeof err);
    if (rc != 0) {
        printf("FAIL %s: %s\n", dir, err);
        return rc;
    }
    char cls[CR_TASK_CLASS_MAX + 1];
    cr_task_class(t, cls, sizeof cls);
    if (t->gpus > 0) /* docs/multigpu.md */
        printf("ok %s: %s, %d params, %d cases, %d GPUs (placement class %s)\n", dir, t->name,
               t->nparams, t->ncases, t->gpus, cls);
    else
        printf("ok %s: %s, %d params, %d cases\n", dir, t->name, t->nparams, t->ncases);
    cr_task_destroy(&t);
    return 0;
}

int cr_cli_task(int argc, char **argv)
{
    static const char usage[] = "crucible task check DIR... [options]\n"
                                "  validates each task folder (or each task folder inside DIR)";
    cr_config_t cfg;
    int npos, x = cr_cli_parse("task", CR_CMD_TASK, usage, 2, CR_CLI_ANY, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    if (strcmp(argv[0], "check") != 0) {
        fprintf(stderr, "crucible task: unknown action '%s'\nusage: %s\n", argv[0], usage);
        return CR_EXIT_USAGE;
    }
    int failed = 0;
    for (int i = 1; i < npos; i++) {
        char *tj = cr_file_join(argv[i], "task.json");
        if (tj && cr_file_exists(tj)) {
            failed |= s_check_task(argv[i]) != 0;
            free(tj);
            continue;
        }
        free(tj);
        /* a folder of tasks: check each one in it */
        struct dirent **names = NULL;
        int n = scandir(argv[i], &names, NULL, alphasort), found = 0;
        for (int k = 0; k < n; k++) {
            char *d = names[k]->d_name[0] == '.' ? NULL : cr_file_join(argv[i], names[k]->d_name);
            char *t = d ? cr_file_join(d, "task.json") : NULL;
            if (t && cr_file_exists(t)) {
                found = 1;
                failed |= s_check_task(d) != 0;
            }
            free(t);
            free(d);
            free(names[k]);
        }
        free(names);
        if (!found) {
            printf("FAIL %s: %s\n", argv[i], n < 0 ? strerror(errno) : "no task.json here or in its folders");
            failed = 1;
        }
    }
    return failed ? CR_EXIT_FAIL : CR_EXIT_OK;
}

int cr_cli_coordinator(int argc, char **argv)
{
    cr_config_t cfg;
    int npos, x = cr_cli_parse("coordinator", CR_CMD_COORDINATOR, "crucible coordinator [options]",
                               0, 0, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_log_set_role("coordinator");
    return cr_coordinator_main(&cfg);
}

int cr_cli_worker(int argc, char **argv)
{
    cr_config_t cfg;
    int npos, x = cr_cli_parse("worker", CR_CMD_WORKER, "crucible worker [options]", 0, 0, argc,
                               argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_log_set_role("worker");
    if (cfg.gpus_per_worker > 1 && !cfg.gpus[0]) { /* a group needs the GPUs to group */
        fprintf(stderr, "crucible worker: --gpus-per-worker %lld groups the GPUs of --gpus; "
                "without --gpus name one worker's GPUs with --gpu-group (docs/multigpu.md)\n",
                (long long)cfg.gpus_per_worker);
        return CR_EXIT_USAGE;
    }
    if (cfg.gpus[0] && cfg.gpu_group[0]) {
        fprintf(stderr, "crucible worker: --gpus makes the workers' groups itself "
                "(--gpus-per-worker); --gpu-group is for one worker\n");
        return CR_EXIT_USAGE;
    }
    if (cfg.gpus[0]) {
        /* the children are this same program: the path, not argv[0], finds it */
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) {
            fprintf(stderr, "crucible worker: cannot find /proc/self/exe: %s\n", strerror(errno));
            return CR_EXIT_FAIL;
        }
        exe[n] = '\0';
        return cr_worker_main_gpus(&cfg, exe);
    }
    return cr_worker_main(&cfg);
}

int cr_cli_gateway(int argc, char **argv)
{
    static const char usage[] =
        "crucible gateway [--listen ADDR:PORT] [--tasks DIR] [--token-file FILE] [options]\n"
        "  an HTTP/JSON front door for trainers, in front of the coordinator at\n"
        "  --clients-endpoint: the native API (/v1/batches...) and the remote-reward\n"
        "  shapes of OpenRLHF (/reward/openrlhf) and slime (/reward/slime); docs/gateway.md";
    cr_config_t cfg;
    int npos, x = cr_cli_parse("gateway", CR_CMD_GATEWAY, usage, 0, 0, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_log_set_role("gateway");
    return cr_gateway_main(&cfg);
}
