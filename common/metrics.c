/* metrics.c — see metrics.h.
 *
 * The registry is small (tens of families, a few hundred series): linear
 * search keeps it simple and is far below a scrape's cost. Rendering follows
 * the text format: # HELP and # TYPE per family, one line per series, and
 * for a histogram cumulative _bucket{le=...} lines, _sum and _count. */
#define _GNU_SOURCE
#include "metrics.h"

#include "timeutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const double cr_metrics_latency_buckets[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,  2.5,
                                             5,    10,    30,   60,  120,  300,  600};
const size_t cr_metrics_latency_nbuckets =
    sizeof cr_metrics_latency_buckets / sizeof cr_metrics_latency_buckets[0];

typedef struct {
    char *labels;     /* owned; "" = none */
    double value;     /* counter or gauge value; histogram: sum */
    uint64_t count;   /* histogram: observations */
    uint64_t *bucket; /* owned; histogram: per bound, not cumulative */
} s_series_t;

typedef struct {
    char *name;                           /* owned */
    char *help;                           /* owned */
    cr_metric_type_t type;
    double bounds[CR_METRICS_MAX_BUCKETS]; /* histogram upper bounds, ascending */
    size_t nbounds;
    s_series_t *series;                   /* owned array */
    size_t nseries, capseries;
} s_family_t;

struct cr_metrics {
    pthread_mutex_t mu;    /* guards everything below */
    s_family_t *fam;       /* owned array */
    size_t nfam, capfam;
};

cr_metrics_t *cr_metrics_new(void)
{
    cr_metrics_t *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->mu, NULL);
    return m;
}

static void s_series_free(s_series_t *s)
{
    free(s->labels);
    free(s->bucket);
}

void cr_metrics_destroy(cr_metrics_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_metrics_t *m = *self_p;
    for (size_t i = 0; i < m->nfam; i++) {
        for (size_t k = 0; k < m->fam[i].nseries; k++)
            s_series_free(&m->fam[i].series[k]);
        free(m->fam[i].series);
        free(m->fam[i].name);
        free(m->fam[i].help);
    }
    free(m->fam);
    pthread_mutex_destroy(&m->mu);
    free(m);
    *self_p = NULL;
}

static int s_name_ok(const char *n)
{
    if (!n || !*n || !(n[0] == '_' || n[0] == ':' || (n[0] >= 'a' && n[0] <= 'z') ||
                       (n[0] >= 'A' && n[0] <= 'Z')))
        return 0;
    return strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:") ==
           strlen(n);
}

static s_family_t *s_find(cr_metrics_t *m, const char *name)
{
    for (size_t i = 0; i < m->nfam; i++)
        if (strcmp(m->fam[i].name, name) == 0)
            return &m->fam[i];
    return NULL;
}

int cr_metrics_declare(cr_metrics_t *m, const char *name, cr_metric_type_t type,
                       const char *help, const double *bounds, size_t nbounds)
{
    if (!s_name_ok(name) || nbounds > CR_METRICS_MAX_BUCKETS)
        return -EINVAL;
    for (size_t i = 1; i < nbounds; i++)
        if (!(bounds[i] > bounds[i - 1]))
            return -EINVAL;
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    if (s_find(m, name)) {
        rc = -EEXIST;
        goto out;
    }
    if (m->nfam == m->capfam) {
        size_t cap = m->capfam ? m->capfam * 2 : 16;
        s_family_t *f = realloc(m->fam, cap * sizeof *f);
        if (!f) {
            rc = -ENOMEM;
            goto out;
        }
        m->fam = f;
        m->capfam = cap;
    }
    s_family_t *f = &m->fam[m->nfam];
    memset(f, 0, sizeof *f);
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    if (!f->name || !f->help) {
        free(f->name);
        free(f->help);
        rc = -ENOMEM;
        goto out;
    }
    f->type = type;
    if (type == CR_METRIC_HISTOGRAM) {
        memcpy(f->bounds, bounds, nbounds * sizeof *bounds);
        f->nbounds = nbounds;
    }
    m->nfam++;
out:
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* The series of f with labels, created when absent. NULL on out of memory. */
static s_series_t *s_series(s_family_t *f, const char *labels)
{
    if (!labels)
        labels = "";
    for (size_t i = 0; i < f->nseries; i++)
        if (strcmp(f->series[i].labels, labels) == 0)
            return &f->series[i];
    if (f->nseries == f->capseries) {
        size_t cap = f->capseries ? f->capseries * 2 : 8;
        s_series_t *s = realloc(f->series, cap * sizeof *s);
        if (!s)
            return NULL;
        f->series = s;
        f->capseries = cap;
    }
    s_series_t *s = &f->series[f->nseries];
    memset(s, 0, sizeof *s);
    s->labels = strdup(labels);
    if (f->type == CR_METRIC_HISTOGRAM)
        s->bucket = calloc(f->nbounds + 1, sizeof *s->bucket);
    if (!s->labels || (f->type == CR_METRIC_HISTOGRAM && !s->bucket)) {
        s_series_free(s);
        return NULL;
    }
    f->nseries++;
    return s;
}

/* One update: op 0 add, 1 set, 2 observe. */
static int s_update(cr_metrics_t *m, const char *name, const char *labels, double v, int op)
{
    static const cr_metric_type_t want[3] = {CR_METRIC_COUNTER, CR_METRIC_GAUGE,
                                             CR_METRIC_HISTOGRAM};
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    s_family_t *f = s_find(m, name);
    s_series_t *s = NULL;
    if (!f)
        rc = -ENOENT;
    else if (f->type != want[op] && !(op == 0 && f->type == CR_METRIC_GAUGE))
        rc = -EINVAL; /* a gauge may be added to; a counter is never set */
    else if (!(s = s_series(f, labels)))
        rc = -ENOMEM;
    if (rc == 0) {
        if (op == 0) {
            if (v > 0 || f->type == CR_METRIC_GAUGE)
                s->value += v;
        } else if (op == 1) {
            s->value = v;
        } else {
            size_t b = 0;
            while (b < f->nbounds && v > f->bounds[b])
                b++;
            s->bucket[b]++;
            s->count++;
            s->value += v;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int cr_metrics_add(cr_metrics_t *m, const char *name, const char *labels, double v)
{
    return s_update(m, name, labels, v, 0);
}

int cr_metrics_set(cr_metrics_t *m, const char *name, const char *labels, double v)
{
    return s_update(m, name, labels, v, 1);
}

int cr_metrics_observe(cr_metrics_t *m, const char *name, const char *labels, double v)
{
    return s_update(m, name, labels, v, 2);
}

int cr_metrics_clear(cr_metrics_t *m, const char *name)
{
    pthread_mutex_lock(&m->mu);
    s_family_t *f = s_find(m, name);
    if (f) {
        for (size_t i = 0; i < f->nseries; i++)
            s_series_free(&f->series[i]);
        f->nseries = 0;
    }
    pthread_mutex_unlock(&m->mu);
    return f ? 0 : -ENOENT;
}

int cr_metrics_get(cr_metrics_t *m, const char *name, const char *labels, double *out)
{
    int rc = -ENOENT;
    pthread_mutex_lock(&m->mu);
    s_family_t *f = s_find(m, name);
    for (size_t i = 0; f && i < f->nseries; i++) {
        if (strcmp(f->series[i].labels, labels ? labels : "") == 0) {
            *out = f->type == CR_METRIC_HISTOGRAM ? (double)f->series[i].count
                                                  : f->series[i].value;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

char *cr_metrics_label_escape(const char *v, char *out, size_t len)
{
    if (len == 0)
        return out;
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p;) {
        /* whole characters only: never end inside a UTF-8 sequence */
        size_t n = *p >= 0xF0 ? 4 : *p >= 0xE0 ? 3 : *p >= 0xC0 ? 2 : 1;
        const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
        size_t w = esc ? 2 : n;
        if (k + w >= len || strnlen((const char *)p, n) < n)
            break;
        memcpy(out + k, esc ? esc : (const char *)p, w);
        k += w;
        p += n;
    }
    out[k] = '\0';
    return out;
}

/* Formats a sample value as the text format wants (+Inf, -Inf, NaN). */
static void s_num(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "NaN");
    else if (isinf(v))
        snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
    else
        snprintf(buf, len, "%.17g", v);
}

char *cr_metrics_render(cr_metrics_t *m, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    static const char *const tname[] = {"counter", "gauge", "histogram"};
    char num[64];
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->nfam; i++) {
        const s_family_t *fam = &m->fam[i];
        fprintf(f, "# HELP %s ", fam->name);
        for (const char *p = fam->help; *p; p++) /* help escapes \\ and \n only */
            fputs(*p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : (char[2]){*p, 0}, f);
        fprintf(f, "\n# TYPE %s %s\n", fam->name, tname[fam->type]);
        for (size_t k = 0; k < fam->nseries; k++) {
            const s_series_t *s = &fam->series[k];
            int has = s->labels[0] != '\0';
            if (fam->type != CR_METRIC_HISTOGRAM) {
                s_num(num, sizeof num, s->value);
                fprintf(f, "%s%s%s%s %s\n", fam->name, has ? "{" : "", s->labels, has ? "}" : "",
                        num);
                continue;
            }
            uint64_t cum = 0;
            for (size_t b = 0; b <= fam->nbounds; b++) {
                cum += s->bucket[b];
                if (b < fam->nbounds)
                    s_num(num, sizeof num, fam->bounds[b]);
                fprintf(f, "%s_bucket{%s%sle=\"%s\"} %llu\n", fam->name, s->labels,
                        has ? "," : "", b < fam->nbounds ? num : "+Inf",
                        (unsigned long long)cum);
            }
            s_num(num, sizeof num, s->value);
            fprintf(f, "%s_sum%s%s%s %s\n", fam->name, has ? "{" : "", s->labels, has ? "}" : "",
                    num);
            fprintf(f, "%s_count%s%s%s %llu\n", fam->name, has ? "{" : "", s->labels,
                    has ? "}" : "", (unsigned long long)s->count);
        }
    }
    pthread_mutex_unlock(&m->mu);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}

/* ---- the listener ---- */

typedef struct {
    int fd;                            /* -1 = free slot */
    int64_t deadline_ms;               /* monotonic; dropped after */
    char req[CR_METRICS_HTTP_REQ_MAX]; /* request head read so far */
    size_t nreq;
    char *out;                         /* owned; answer being written, NULL while reading */
    size_t nout, sent;
} s_conn_t;

struct cr_metrics_http {
    int fd;                              /* listening socket; owned */
    int port;
    cr_metrics_t *m;                     /* borrowed */
    s_conn_t conn[CR_METRICS_HTTP_CONNS];
};

static void s_conn_close(s_conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

cr_metrics_http_t *cr_metrics_http_new(const char *addr, cr_metrics_t *m, char *err,
                                       size_t errlen)
{
    char host[256];
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || (size_t)(colon - addr) >= sizeof host || !colon[1] || *end || port < 0 ||
        port > 65535) {
        snprintf(err, errlen, "metrics address '%s': expected HOST:PORT", addr ? addr : "");
        return NULL;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (!host[0] || strcmp(host, "*") == 0) {
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
        int g = getaddrinfo(host, NULL, &hints, &res);
        if (g != 0 || !res) {
            snprintf(err, errlen, "metrics address '%s': %s", addr,
                     g ? gai_strerror(g) : "no IPv4 address");
            return NULL;
        }
        sa.sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
        freeaddrinfo(res);
    }
    cr_metrics_http_t *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->m = m;
    for (int i = 0; i < CR_METRICS_HTTP_CONNS; i++)
        h->conn[i].fd = -1;
    h->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    socklen_t sl = sizeof sa;
    if (h->fd < 0 || setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(h->fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(h->fd, 16) != 0 ||
        getsockname(h->fd, (struct sockaddr *)&sa, &sl) != 0) {
        snprintf(err, errlen, "metrics address '%s': %s", addr, strerror(errno));
        cr_metrics_http_destroy(&h);
        return NULL;
    }
    h->port = ntohs(sa.sin_port);
    return h;
}

void cr_metrics_http_destroy(cr_metrics_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_metrics_http_t *h = *self_p;
    for (int i = 0; i < CR_METRICS_HTTP_CONNS; i++)
        s_conn_close(&h->conn[i]);
    if (h->fd >= 0)
        close(h->fd);
    free(h);
    *self_p = NULL;
}

int cr_metrics_http_port(const cr_metrics_http_t *h)
{
    return h->port;
}

int cr_metrics_http_pollitems(const cr_metrics_http_t *h, zmq_pollitem_t *items, int max)
{
    int n = 0;
    if (max < 1)
        return 0;
    items[n++] = (zmq_pollitem_t){.fd = h->fd, .events = ZMQ_POLLIN};
    for (int i = 0; i < CR_METRICS_HTTP_CONNS && n < max; i++)
        if (h->conn[i].fd >= 0)
            items[n++] = (zmq_pollitem_t){
                .fd = h->conn[i].fd, .events = h->conn[i].out ? ZMQ_POLLOUT : ZMQ_POLLIN};
    return n;
}

/* Builds the answer to the request head in c->req. */
static void s_answer(cr_metrics_http_t *h, s_conn_t *c)
{
    const char *status = "200 OK", *type = "text/plain; version=0.0.4; charset=utf-8";
    char *body = NULL;
    size_t nbody = 0;
    int get = strncmp(c->req, "GET ", 4) == 0;
    const char *path = get ? c->req + 4 : "";
    size_t plen = strcspn(path, " ?\r\n");
    if (!get) {
        status = "405 Method Not Allowed";
    } else if (plen == 8 && strncmp(path, "/metrics", 8) == 0) {
        body = cr_metrics_render(h->m, &nbody);
        if (!body)
            status = "500 Internal Server Error";
    } else if (plen == 8 && strncmp(path, "/healthz", 8) == 0) {
        body = strdup("ok\n");
        nbody = body ? 3 : 0;
    } else {
        status = "404 Not Found";
    }
    if (!body) {
        type = "text/plain; charset=utf-8";
        body = strdup(status);
        nbody = body ? strlen(body) : 0;
    }
    int k = asprintf(&c->out,
                     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%.*s",
                     status, type, nbody, (int)nbody, body ? body : "");
    free(body);
    if (k < 0) {
        c->out = NULL;
        s_conn_close(c);
        return;
    }
    c->nout = (size_t)k;
    c->sent = 0;
}

int cr_metrics_http_handle(cr_metrics_http_t *h)
{
    int64_t now = cr_time_mono_ms();
    int done = 0;
    /* accept every pending connection; with no free slot the newest is refused */
    for (;;) {
        int fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            break;
        int i = 0;
        while (i < CR_METRICS_HTTP_CONNS && h->conn[i].fd >= 0)
            i++;
        if (i == CR_METRICS_HTTP_CONNS) {
            close(fd);
            continue;
        }
        h->conn[i].fd = fd;
        h->conn[i].deadline_ms = now + CR_METRICS_HTTP_DEADLINE_MS;
    }
    for (int i = 0; i < CR_METRICS_HTTP_CONNS; i++) {
        s_conn_t *c = &h->conn[i];
        if (c->fd < 0)
            continue;
        if (!c->out) {
            ssize_t r = recv(c->fd, c->req + c->nreq, sizeof c->req - 1 - c->nreq, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                s_conn_close(c);
                continue;
            }
            if (r > 0) {
                c->nreq += (size_t)r;
                c->req[c->nreq] = '\0';
            }
            if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n"))
                s_answer(h, c);
            else if (c->nreq >= sizeof c->req - 1) {
                /* a head that does not fit: answer what we can, it is not a scrape */
                memcpy(c->req, "BAD ", 4);
                s_answer(h, c);
            }
        }
        if (c->fd >= 0 && c->out) {
            ssize_t w = send(c->fd, c->out + c->sent, c->nout - c->sent, MSG_NOSIGNAL);
            if (w > 0)
                c->sent += (size_t)w;
            if (c->sent == c->nout) {
                done++;
                s_conn_close(c);
                continue;
            }
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                s_conn_close(c);
                continue;
            }
        }
        if (c->fd >= 0 && now > c->deadline_ms)
            s_conn_close(c);
    }
    return done;
}
