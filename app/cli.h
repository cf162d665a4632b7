/* cli.h — the `crucible` subcommands that talk to a coordinator, and the
 * pieces they share with `crucible run` (run.h): command-line parsing,
 * job options, the progress line and the result stream.
 *
 * Every subcommand takes the arguments after its name and returns a process
 * exit code: 0 success, 1 failure, 2 usage error. */
#ifndef CR_CLI_H
#define CR_CLI_H

#include "client.h"
#include "config.h"

#include <stdint.h>
#include <stdio.h>

enum { CR_EXIT_OK = 0, CR_EXIT_FAIL = 1, CR_EXIT_USAGE = 2 };

/* max_pos for cr_cli_parse: no upper limit. */
#define CR_CLI_ANY 1000000

/* Parses a subcommand's line into cfg: defaults, CRUCIBLE_* environment,
 * then argv (rows of cmd only); sets the log level. --help prints usage and
 * the option rows on stdout; --dump-config prints the settings. The
 * positionals end up in argv[0..*npos) and their count must be within
 * [min_pos, max_pos]. Returns -1 when the command should run, else the exit
 * code to return at once (0 after --help or --dump-config, 2 on a usage
 * error, which is printed with a hint). */
int cr_cli_parse(const char *name, unsigned cmd, const char *usage, int min_pos, int max_pos,
                 int argc, char **argv, cr_config_t *cfg, int *npos);

/* Installs SIGINT/SIGTERM handlers that only set a flag (no SA_RESTART, so a
 * blocking wait returns early); cr_cli_interrupted() reads it. */
void cr_cli_catch_signals(void);
int cr_cli_interrupted(void);

/* ---- progress line ---- */

#define CR_PROGRESS_NSTATUS 16 /* above the largest Status value (13) */
#define CR_PROGRESS_NFLAGS 16  /* distinct hack flags shown; more are counted as "other" */

typedef struct {
    FILE *f;                                   /* drawn here, borrowed */
    int tty;                                   /* redraw in place; else plain lines */
    uint32_t total;                            /* jobs in the batch; 0 = unknown */
    uint32_t done;                             /* records seen */
    uint32_t by_status[CR_PROGRESS_NSTATUS];   /* records per Status value */
    char flags[CR_PROGRESS_NFLAGS][48];        /* hack flag names seen */
    uint32_t flag_count[CR_PROGRESS_NFLAGS + 1]; /* per flag; the last slot = other */
    int nflags;                                /* used entries of flags */
    int64_t t0_ms;                             /* monotonic ms the rate counts from */
    uint32_t done0;                            /* records already done at t0 */
    int64_t last_ms;                           /* monotonic ms of the last draw */
    uint32_t last_done;                        /* done at the last draw */
    int dirty;                                 /* a tty line is drawn and not ended */
} cr_progress_t;

void cr_progress_init(cr_progress_t *p, FILE *f, uint32_t total);
/* Sets the total and how many were already done (the rate counts from now). */
void cr_progress_set_total(cr_progress_t *p, uint32_t total, uint32_t done_already);
void cr_progress_add(cr_progress_t *p, const Crucible__RewardRecord *rec);
/* The counts so far, as the progress line shows them:
 * "OK 3, INCORRECT 2  hacks: link_audit 3, input_mutated 1" ("" before any). */
void cr_progress_counts(const cr_progress_t *p, char *out, size_t len);
/* Draws if due (tty: 10 per s; plain: on change, at most every 2 s); final
 * draws always and ends the line. */
void cr_progress_draw(cr_progress_t *p, int final);

/* ---- result stream ---- */

typedef struct {
    cr_client_t *client;                      /* borrowed */
    const char *batch;                        /* batch id */
    double wait_s;                            /* give up after; 0 = never */
    cr_progress_t *progress;                  /* NULL = none */
    int (*on_record)(void *arg, const Crucible__RewardRecord *rec); /* NULL = none; nonzero stops */
    int (*tick)(void *arg);                   /* NULL = none; called ~4 times a s, nonzero stops */
    void *arg;                                /* for on_record and tick */
    int64_t silence_ms;                       /* reconnect after this long without a word; 0 = CR_CLI_SILENCE_MS, < 0 = never */
    uint64_t last_seq;                        /* in/out: highest seq seen (records are deduplicated by it) */
    uint32_t reconnects;                      /* out: times the coordinator fell silent and we reconnected */
    uint32_t total;                           /* out: BatchDone.total */
    char error[512];                          /* out: why it stopped, when not at BatchDone */
} cr_stream_t;

/* Default silence before a client reconnects: liveness 3 x heartbeat 1000 ms. */
#define CR_CLI_SILENCE_MS 3000

/* How long a client waits without a word before it reconnects: the
 * coordinator's heartbeat-ms x liveness, as cfg has them. */
int64_t cr_cli_silence_ms(const cr_config_t *cfg);

/* Sends StatusRequest (when the progress has no total) and Subscribe{batch,
 * after_seq = s->last_seq, follow}, then hands every new record to
 * on_record until BatchDone. The coordinator sends subscribers a Heartbeat
 * every heartbeat-ms: after silence_ms without any message the client
 * reconnects (a new socket, as the coordinator may have restarted) and
 * subscribes again after the last seq it saw, so no record is lost and
 * none is handed over twice. Returns 0 at BatchDone; CR_E_TIMEOUT when
 * wait_s passed; -EINTR on SIGINT/SIGTERM; the callbacks' nonzero value;
 * CR_E_NOT_FOUND etc. for the coordinator's Error (s->error says which). */
int cr_cli_stream(cr_stream_t *s);

/* Waits for a reply of body case want (or an Error), ignoring other
 * messages. Returns 0 and *out (release with cr_wire_free), CR_E_TIMEOUT,
 * -EINTR, or the error the coordinator named, with err saying so. */
int cr_cli_wait_reply(cr_client_t *c, double wait_s, int want, Crucible__Envelope **out,
                      int (*tick)(void *arg), void *arg, char *err, size_t errlen);

/* The batch id: cfg->batch, or prefix + 12 random hex digits. */
void cr_cli_batch_id(const cr_config_t *cfg, const char *prefix, char *out, size_t len);

/* Jobs per Submit that cr_cli_submit_batch sends: at most the coordinator's
 * default --max-submit-jobs (common/config.c). */
#define CR_CLI_SUBMIT_CHUNK 2000

/* Submits js as batch with cfg's job options (no subscription), in Submits
 * of at most CR_CLI_SUBMIT_CHUNK jobs (the counts of *ack are their sums),
 * and waits
 * (cfg->wait_s, tick as for cr_cli_wait_reply) for the SubmitAck. When none
 * comes within twice cr_cli_silence_ms it reconnects and submits again:
 * resubmitting is idempotent (the jobs already stored count duplicate). Returns 0
 * and *ack (release with cr_wire_free), or an error with err saying why. */
int cr_cli_submit_batch(cr_client_t *c, const cr_config_t *cfg, const cr_jobset_t *js,
                        const char *batch, int (*tick)(void *arg), void *arg,
                        Crucible__Envelope **ack, char *err, size_t errlen);

/* ---- subcommands ---- */

int cr_cli_submit(int argc, char **argv);
int cr_cli_watch(int argc, char **argv);
int cr_cli_results(int argc, char **argv);
int cr_cli_status(int argc, char **argv);
int cr_cli_cancel(int argc, char **argv);
int cr_cli_task(int argc, char **argv);
int cr_cli_coordinator(int argc, char **argv);
int cr_cli_worker(int argc, char **argv);
int cr_cli_gateway(int argc, char **argv);
/* rollout_cmd.c */
int cr_cli_rollout(int argc, char **argv);
int cr_cli_curate(int argc, char **argv);

#endif
