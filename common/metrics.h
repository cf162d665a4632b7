/* metrics.h — Prometheus exposition: counters, gauges, histograms, the text
 * format (version 0.0.4) and a tiny HTTP listener for GET /metrics.
 *
 * A registry holds families (name, help, type; histograms also their bucket
 * bounds) and, under each, one series per label set. Labels are passed as
 * the text between the braces, already formatted ("status=\"OK\",backend=\"c\"";
 * NULL or "" = no labels); cr_metrics_label_escape makes a value safe for it.
 * Every call takes the registry's mutex, so threads may update while the
 * loop renders.
 *
 * The listener never blocks: its fds are added to the owner's zmq_poll
 * (cr_metrics_http_pollitems) and cr_metrics_http_handle does whatever is
 * ready: accept, read, answer, close. A peer that does not send a request
 * within CR_METRICS_HTTP_DEADLINE_MS is dropped, so a slow or silent client
 * costs a slot, never a loop turn. Routes: GET /metrics (the registry),
 * GET /healthz ("ok", for probes); anything else 404, a non-GET 405. */
#ifndef CR_METRICS_H
#define CR_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

typedef enum { CR_METRIC_COUNTER, CR_METRIC_GAUGE, CR_METRIC_HISTOGRAM } cr_metric_type_t;

#define CR_METRICS_MAX_BUCKETS 32        /* bounds per histogram; more is a caller bug */
#define CR_METRICS_HTTP_CONNS 8          /* scrapes served at once; Prometheus uses one */
#define CR_METRICS_HTTP_DEADLINE_MS 2000 /* request must arrive within this (ms) */
#define CR_METRICS_HTTP_REQ_MAX 4096     /* bytes of request head read at most */

/* Seconds buckets for latencies from a cached compile (~10 ms) to a long
 * profile (minutes): roughly x2.5 steps, as Prometheus' own defaults. */
extern const double cr_metrics_latency_buckets[];
extern const size_t cr_metrics_latency_nbuckets;

typedef struct cr_metrics cr_metrics_t;

/* An empty registry. Caller owns it; NULL on out of memory. */
cr_metrics_t *cr_metrics_new(void);

/* Frees the registry. Safe on NULL; nulls *self_p. */
void cr_metrics_destroy(cr_metrics_t **self_p);

/* Declares a family. bounds (ascending, +Inf implied) only for histograms.
 * Returns 0; -EEXIST when name is declared already; -EINVAL for a name that
 * is not [a-zA-Z_:][a-zA-Z0-9_:]*, or bounds that are unsorted or too many;
 * -ENOMEM. */
int cr_metrics_declare(cr_metrics_t *m, const char *name, cr_metric_type_t type,
                       const char *help, const double *bounds, size_t nbounds);

/* Counter: adds v (>= 0; a negative v is ignored). Gauge: sets v. Histogram:
 * records one observation v. Each creates the series on first use. Returns
 * 0, -ENOENT for an undeclared name, -EINVAL when the call does not fit the
 * family's type, -ENOMEM. */
int cr_metrics_add(cr_metrics_t *m, const char *name, const char *labels, double v);
int cr_metrics_set(cr_metrics_t *m, const char *name, const char *labels, double v);
int cr_metrics_observe(cr_metrics_t *m, const char *name, const char *labels, double v);

/* Drops every series of a gauge family (before setting a fresh set, e.g.
 * one per live worker). 0 or -ENOENT. */
int cr_metrics_clear(cr_metrics_t *m, const char *name);

/* A series' current value (counter/gauge value, histogram count), for tests
 * and derived gauges. 0 and *out, or -ENOENT. */
int cr_metrics_get(cr_metrics_t *m, const char *name, const char *labels, double *out);

/* The whole registry in the text format. Caller owns the string (free);
 * NULL on out of memory. *len (if not NULL) gets its length. */
char *cr_metrics_render(cr_metrics_t *m, size_t *len);

/* Writes v into out escaped for a label value (\\, \" and \n), truncated
 * to len - 1 bytes at a character boundary. Returns out. */
char *cr_metrics_label_escape(const char *v, char *out, size_t len);

/* ---- the listener ---- */

typedef struct cr_metrics_http cr_metrics_http_t;

/* Listens on addr, "HOST:PORT" (an IPv4 literal or a name that resolves to
 * one, or ":PORT" / "0.0.0.0:PORT" for every interface; port 0 picks one:
 * cr_metrics_http_port says which). Serves m (borrowed; it must outlive the
 * listener). Returns NULL with err saying why (bad address, port in use). */
cr_metrics_http_t *cr_metrics_http_new(const char *addr, cr_metrics_t *m, char *err,
                                       size_t errlen);

/* Closes the listener and every open connection. Safe on NULL; nulls *self_p. */
void cr_metrics_http_destroy(cr_metrics_http_t **self_p);

/* The port listened on. */
int cr_metrics_http_port(const cr_metrics_http_t *h);

/* Fills up to max zmq_pollitem_t entries (fd items) for the listener and its
 * open connections. Returns how many were filled (at least 1 when max >= 1). */
int cr_metrics_http_pollitems(const cr_metrics_http_t *h, zmq_pollitem_t *items, int max);

/* Does everything that is ready without blocking: accepts, reads requests,
 * writes answers, drops connections past their deadline. Calling it when
 * nothing is ready is harmless. Returns the number of answers completed. */
int cr_metrics_http_handle(cr_metrics_http_t *h);

#endif
