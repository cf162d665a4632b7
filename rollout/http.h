/* http.h — chat completions against OpenAI-compatible servers (libcurl multi).
 *
 * One client drives every request of a rollout from the caller's loop: a
 * request is queued, started on the endpoint with the fewest requests in
 * flight below its concurrency, retried on 408, 429, 5xx, a connection
 * error, a timeout, a stream that ended before [DONE] or an answer that is
 * not the JSON the protocol promises (backoff doubling from backoff_ms up
 * to backoff_max_ms, full jitter, a longer Retry-After wins; a retry may go
 * to another endpoint), and handed back through the done callback once,
 * answered or failed. Any other status (400, 401, 404...) fails at once:
 * retrying cannot fix it. Not thread-safe: one client per loop. */
#ifndef CR_HTTP_H
#define CR_HTTP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cr_http cr_http_t;

typedef struct {
    const char *endpoints;  /* comma list of base URLs (".../v1"); borrowed */
    const char *model;      /* borrowed */
    const char *api_key;    /* Bearer token; NULL or "" = no Authorization header; borrowed */
    int concurrency;        /* requests in flight per endpoint at most */
    int64_t timeout_ms;     /* one try, whole */
    int retries;            /* retries after the first try */
    int64_t backoff_ms;     /* first retry's backoff cap, doubled per retry */
    int64_t backoff_max_ms; /* backoff cap */
    int stream;             /* ask for server-sent events */
    double temperature;
    double top_p;
    int64_t max_tokens;
} cr_http_opts_t;

/* What one request ended with; handed to the callback, valid during the call. */
typedef struct {
    int ok;                  /* 1: answered; 0: failed, error says why */
    size_t n;                /* choices received */
    char **content;          /* per choice index: the message content ("" when none) */
    char **finish_reason;    /* per choice: "stop", "length", ... ("" when none) */
    int64_t prompt_tokens;   /* usage; -1 = the server gave none */
    int64_t completion_tokens;
    const char *endpoint;    /* base URL of the last try */
    int attempts;            /* tries made, 1 = no retry */
    double latency_ms;       /* from queueing to the answer (backoffs included) */
    char error[512];         /* why it failed, or the faults retried past */
} cr_http_result_t;

/* Counters since the client was made. */
typedef struct {
    uint64_t requests;  /* requests queued */
    uint64_t answered;  /* ended ok */
    uint64_t failed;    /* ended failed */
    uint64_t tries;     /* HTTP tries started */
    uint64_t retry_429, retry_408, retry_5xx, retry_timeout, retry_conn, retry_invalid;
    uint64_t refused;   /* other HTTP statuses: failed at once */
} cr_http_stats_t;

typedef void (*cr_http_done_fn)(void *arg, void *tag, const cr_http_result_t *res);

/* Makes a client (curl_global_init is the caller's). done is called once
 * per request from cr_http_run. Returns NULL with err saying why (no
 * endpoint, curl could not start). Caller owns the client. */
cr_http_t *cr_http_new(const cr_http_opts_t *o, cr_http_done_fn done, void *arg, char *err,
                       size_t errlen);

/* Cancels what is in flight (no callbacks) and frees. Safe on NULL; nulls *self_p. */
void cr_http_destroy(cr_http_t **self_p);

/* Queues POST <endpoint>/chat/completions with messages (borrowed, read
 * now) and n choices. Returns 0, or -ENOMEM. */
int cr_http_request(cr_http_t *h, const json_t *messages, int n, void *tag);

/* One step of the loop: starts what may start, waits up to timeout_ms for
 * the transfers or extra_fd (-1 = none) to be readable, finishes what
 * ended (callbacks) and schedules retries. Returns 0, or -EINTR when a
 * signal cut the wait. */
int cr_http_run(cr_http_t *h, int extra_fd, int timeout_ms);

size_t cr_http_in_flight(const cr_http_t *h);   /* tries in progress */
size_t cr_http_waiting(const cr_http_t *h);     /* queued or backing off */
void cr_http_stats(const cr_http_t *h, cr_http_stats_t *s);

/* Base URLs parsed from the option, in order (borrowed). */
size_t cr_http_endpoints(const cr_http_t *h, const char *const **urls);

#endif
