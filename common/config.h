/* config.h — one declarative table for every setting.
 *
 * Each row names a setting, its type, default, bounds, the commands it
 * applies to and its help line. The same table drives command-line parsing
 * (--name value, --name=value, --flag), environment overrides
 * (CRUCIBLE_<NAME>, upper-cased, '-' -> '_'), --help and `--dump-config`.
 * Precedence: default < environment < command line. */
#ifndef CR_CONFIG_H
#define CR_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Which commands a row applies to (bit mask). */
enum {
    CR_CMD_COORDINATOR = 1 << 0,
    CR_CMD_WORKER = 1 << 1,
    CR_CMD_RUN = 1 << 2,
    CR_CMD_SUBMIT = 1 << 3,
    CR_CMD_WATCH = 1 << 4,
    CR_CMD_RESULTS = 1 << 5,
    CR_CMD_STATUS = 1 << 6,
    CR_CMD_CANCEL = 1 << 7,
    CR_CMD_TASK = 1 << 8,
    CR_CMD_REPORT = 1 << 9,
    CR_CMD_GATEWAY = 1 << 10,
    CR_CMD_ROLLOUT = 1 << 11,
    CR_CMD_CURATE = 1 << 12,
    CR_CMD_CLIENT = CR_CMD_SUBMIT | CR_CMD_WATCH | CR_CMD_RESULTS | CR_CMD_STATUS | CR_CMD_CANCEL |
                    CR_CMD_REPORT | CR_CMD_ROLLOUT | CR_CMD_CURATE,
    CR_CMD_ALL = 0x1fff,
};

#define CR_CONFIG_STR 256 /* bytes for every string setting */
#define CR_SPARES_MAX 16  /* config spares: at most this many (worker/supervisor.c note 5) */

typedef struct {
    /* --- endpoints --- */
    char clients_endpoint[CR_CONFIG_STR]; /* coordinator binds; clients connect */
    char workers_endpoint[CR_CONFIG_STR]; /* coordinator binds; workers connect */
    /* --- coordinator --- */
    char db[CR_CONFIG_STR];               /* SQLite file */
    int64_t queue_limit;                  /* jobs queued per client at most */
    int64_t max_attempts;                 /* tries before a job is recorded INFRA_ERROR */
    int64_t heartbeat_ms;                 /* ms between heartbeats, both ways */
    int64_t liveness;                     /* missed heartbeats before a peer is lost */
    int64_t drain_after;                  /* worker losses in a window, or INFRA_ERRORs in a row,
                                             before it is drained; 0 = never */
    double lease_s;                       /* s an assignment is held before it is requeued;
                                             0 = derived from the job's timeouts */
    int64_t max_credit;                   /* jobs one worker may hold at once; a Ready
                                             claiming more is clamped */
    char durability[CR_CONFIG_STR];       /* "full" | "normal" | "off": SQLite synchronous */
    int64_t max_submit_jobs;              /* jobs one Submit may carry */
    /* --- worker --- */
    char worker_id[CR_CONFIG_STR];        /* "" = <host>-<pid> */
    char work_dir[CR_CONFIG_STR];         /* build dirs, compile cache, scratch; "" = the
                                             default place (worker/workdir.h) */
    int64_t cache_bytes;                  /* compile cache bound, bytes of objects; 0 = none */
    int64_t compile_memory_mb;            /* MiB of address space per compiler process; 0 = no cap */
    char cc[CR_CONFIG_STR];               /* C compiler for the "c" backend */
    char nvcc[CR_CONFIG_STR];             /* CUDA compiler for the "cuda" backend */
    char cuda_arch[CR_CONFIG_STR];        /* "sm_90"; "" = the GPU's compute capability */
    int64_t gpu;                          /* NVML index of the worker's GPU */
    char gpus[CR_CONFIG_STR];             /* "all" | "0,2": one worker per GPU; "" = just --gpu */
    int64_t gpus_per_worker;              /* with --gpus: GPUs each worker owns (docs/multigpu.md) */
    char gpu_group[CR_CONFIG_STR];        /* "0,1": the GPUs this one worker owns, its --gpu
                                             first; "" = just --gpu */
    char runner[CR_CONFIG_STR];           /* crucible-runner path; "" = next to crucible */
    char backends[CR_CONFIG_STR];         /* comma list the worker serves */
    int64_t compile_jobs;                 /* compile pool threads; 0 = sized from the cores */
    int64_t spares;                       /* cuda worker: runners kept started ahead, <= CR_SPARES_MAX;
                                             -1 = sized from free memory */
    int64_t runner_per_job;               /* 1: a runner per job, not the serving judge
                                             (worker/supervisor.c note 8) */
    int64_t cpu;                          /* core the runner's timing thread is pinned to; -1 = pick */
    int64_t sandbox_uid;                  /* uid and gid a root runner drops to (docs/sandbox.md) */
    int64_t compile_uid;                  /* uid and gid of a root worker's compile boxes */
    char metrics_addr[CR_CONFIG_STR];     /* coordinator, worker: HOST:PORT of GET /metrics; "" = off */
    /* --- job options (batch defaults) --- */
    double compile_timeout_s;             /* s; a worker's is a cap on its jobs' */
    double run_timeout_s;                 /* s, whole runner; a worker's is a cap on its jobs' */
    double queue_timeout_s;               /* s a job may stay QUEUED; 0 = no limit */
    double time_budget_s;                 /* s of timing per bench case */
    double rse_target;                    /* relative standard error to stop at */
    char reward[CR_CONFIG_STR];           /* formula name */
    char ref_policy[CR_CONFIG_STR];       /* "interleaved" | "cached" */
    char clock_policy[CR_CONFIG_STR];     /* "observe" | "lock:base" | "lock:<MHz>" */
    /* --- client --- */
    char batch[CR_CONFIG_STR];            /* batch id; "" = generated */
    char format[CR_CONFIG_STR];           /* results: jsonl | csv | pb */
    char out[CR_CONFIG_STR];              /* results file; "" = stdout (run: crucible-results.jsonl) */
    double wait_s;                        /* client: give up after this many s; 0 = never */
    int64_t workers;                      /* run: local workers to start */
    char log_dir[CR_CONFIG_STR];          /* run: keep the local cluster's logs here; "" = not kept */
    int64_t follow;                       /* submit: keep streaming until done (watch/results always do) */
    /* --- gateway (gateway/gateway.h) --- */
    char listen[CR_CONFIG_STR];           /* HTTP address:port the gateway listens on */
    char tasks[CR_CONFIG_STR];            /* task folders that jobs may name */
    char token_file[CR_CONFIG_STR];       /* bearer tokens, one a line; "" = none */
    char tls_cert[CR_CONFIG_STR];         /* PEM certificate; "" = plain HTTP */
    char tls_key[CR_CONFIG_STR];          /* PEM private key of tls_cert */
    double request_timeout_s;             /* s a request waits when the caller names no timeout */
    int64_t max_body;                     /* bytes of one request body at most */
    int64_t max_connections;              /* HTTP connections served at once */
    double keep_s;                        /* s a finished batch stays in the gateway's memory */
    /* --- rollout and curate (rollout/rollout.h, docs/rollout.md) --- */
    char endpoints[CR_CONFIG_STR];        /* comma list of OpenAI-compatible base URLs (.../v1) */
    char model[CR_CONFIG_STR];            /* "model" of every request */
    char api_key_file[CR_CONFIG_STR];     /* file holding the API key; "" = api_key_env */
    char api_key_env[CR_CONFIG_STR];      /* environment variable holding the API key */
    int64_t concurrency;                  /* requests in flight per endpoint at most */
    int64_t samples;                      /* samples per task: one GRPO group */
    int64_t turns;                        /* turns per sample at most */
    char sample_mode[CR_CONFIG_STR];      /* "n": one request with n for a group's first turn;
                                             "single": one request per sample */
    int64_t stream;                       /* ask for server-sent events */
    double temperature;                   /* sampling temperature */
    double top_p;                         /* nucleus sampling */
    int64_t max_tokens;                   /* completion tokens per request at most */
    double llm_timeout_s;                 /* s one HTTP request may take, whole */
    int64_t retries;                      /* retries of one request (408/429/5xx, connection) */
    int64_t backoff_ms;                   /* ms: first retry's backoff, doubled per retry */
    int64_t backoff_max_ms;               /* ms: backoff cap */
    char feedback[CR_CONFIG_STR];         /* "sentences" | "json" */
    int64_t history_chars;                /* characters of a conversation kept at most */
    int64_t error_chars;                  /* characters of a compiler or judge message kept */
    double target_speedup;                /* stop a sample at OK with at least this speedup */
    char credit[CR_CONFIG_STR];           /* credit formula, name[@version] */
    double gamma;                         /* discount of the discounted return */
    char prompt_template[CR_CONFIG_STR];  /* template file; "" = built in */
    char hardware[CR_CONFIG_STR];         /* hardware named in the prompt; "" = from backends */
    int64_t local_workers;                /* start an embedded cluster of this many workers; 0 = none */
    int64_t no_judge;                     /* 1: turns are not judged (the driver's benchmark) */
    double min_speedup;                   /* curate: keep OK solutions at least this fast */
    char report[CR_CONFIG_STR];           /* curate: report file; "" = <out>.report.json */
    /* --- security (common/curve.h) --- */
    char key[CR_CONFIG_STR];              /* own CURVE secret key file; "" = no CURVE */
    char server_key[CR_CONFIG_STR];       /* clients, workers: the coordinator's public key file */
    char allow_clients[CR_CONFIG_STR];    /* coordinator: client public keys let in */
    char allow_workers[CR_CONFIG_STR];    /* coordinator: worker public keys let in */
    int64_t insecure;                     /* plaintext even with keys (loopback only) */
    int64_t insecure_force;               /* plaintext allowed on any endpoint */
    /* --- general --- */
    char log_level[CR_CONFIG_STR];        /* debug | info | warn | error | off */
    int64_t max_msg;                      /* bytes; ZMQ_MAXMSGSIZE and decoder cap */
} cr_config_t;

typedef enum { CR_CONF_INT, CR_CONF_DOUBLE, CR_CONF_STR, CR_CONF_BOOL } cr_conf_type_t;

typedef struct {
    const char *name;   /* command-line name without "--" */
    cr_conf_type_t type;
    size_t offset;      /* into cr_config_t */
    const char *def;    /* default, as text */
    double min, max;    /* bounds for numbers; min > max = unbounded */
    unsigned cmds;      /* CR_CMD_* mask */
    const char *help;
} cr_conf_row_t;

/* The table, and its length. */
extern const cr_conf_row_t cr_config_rows[];
extern const size_t cr_config_nrows;

/* Fills every field with its default. */
void cr_config_defaults(cr_config_t *c);

/* Applies CRUCIBLE_* environment variables for rows of cmd. Returns 0, or
 * CR_E_USAGE with err naming the variable and the bad value. */
int cr_config_env(cr_config_t *c, unsigned cmd, char *err, size_t errlen);

/* Parses argv for the rows of cmd, from index 0. Options may come anywhere;
 * the other arguments are moved, in order, to the front of argv and their
 * count is stored in *npos. "--" ends options. Returns 0, or CR_E_USAGE with
 * err naming the option ("--time-budget-s: 'x' is not a number"), or 1 when
 * --help was given. */
int cr_config_argv(cr_config_t *c, unsigned cmd, int argc, char **argv, int *npos, char *err,
                   size_t errlen);

/* Prints the rows of cmd as a help block ("  --name VALUE   help (default x)"). */
void cr_config_help(FILE *f, unsigned cmd);

/* Prints name = value for the rows of cmd. */
void cr_config_dump(FILE *f, const cr_config_t *c, unsigned cmd);

/* The row named name (without "--"), or NULL. */
const cr_conf_row_t *cr_config_find(const char *name);

/* Writes row r's value in c as text that cr_config_set reads back to the
 * same value; returns buf. */
const char *cr_config_format(const cr_config_t *c, const cr_conf_row_t *r, char *buf, size_t len);

/* Sets one row by name from text; same errors as cr_config_argv. */
int cr_config_set(cr_config_t *c, const char *name, const char *value, char *err, size_t errlen);

/* 1 when the comma list `backends` names `name` ("c", "cuda"), else 0. */
int cr_config_has_backend(const char *backends, const char *name);

#endif
