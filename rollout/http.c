/* http.c — the libcurl multi client of http.h.
 *
 * Invariants:
 *  1. A request is in exactly one place: the waiting list (queued, or
 *     backing off until due_ms) or the multi handle (one try in flight).
 *  2. An endpoint's in_flight counts the tries of it in the multi handle,
 *     and never exceeds the concurrency.
 *  3. The done callback runs once per request, after which it is freed. */
#define _GNU_SOURCE
#include "http.h"

#include "error.h"
#include "hash.h"
#include "log.h"
#include "timeutil.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_ENDPOINTS 64     /* endpoints of one rollout: far above any served fleet */
#define S_MAX_BODY (256u << 20) /* an answer larger than 256 MiB is no kernel: refused */

typedef struct {
    char *url;       /* base URL, owned */
    char *post_url;  /* <url>/chat/completions, owned */
    int in_flight;   /* tries in the multi handle */
} s_endpoint_t;

/* A growable byte string. */
typedef struct {
    char *p;    /* owned, NUL-terminated when cap > 0 */
    size_t n;   /* bytes used */
    size_t cap; /* bytes allocated */
} s_buf_t;

typedef struct s_req {
    char *body;                /* request JSON, owned */
    int n;                     /* choices asked for */
    void *tag;                 /* the caller's */
    int attempts;              /* tries started */
    int64_t due_ms;            /* monotonic ms it may start (backoff) */
    int64_t t0_ms;             /* monotonic ms it was queued */
    int ep;                    /* endpoint of the current or last try; -1 none */
    CURL *easy;                /* the try in flight; NULL while waiting */
    struct curl_slist *hdrs;   /* owned while in flight */
    s_buf_t resp;              /* body, or the SSE stream */
    size_t sse_off;            /* stream: bytes of resp parsed */
    int sse_done;              /* stream: data: [DONE] seen */
    int sse_bad;               /* stream: a data line that is not a chunk */
    int sse_events;            /* stream: data lines seen */
    s_buf_t *acc;              /* stream: content per choice, n of them */
    char **fin;                /* stream: finish_reason per choice, owned */
    int64_t ptok, ctok;        /* stream: usage; -1 = none */
    int64_t retry_after_ms;    /* from the Retry-After header; 0 = none */
    char faults[256];          /* what was retried past ("429, timeout") */
    struct s_req *next;        /* waiting list */
    struct s_req *fprev, *fnext; /* in-flight list */
} s_req_t;

struct cr_http {
    cr_http_opts_t o;          /* options; strings borrowed */
    char *auth;                /* "Authorization: Bearer ..." header; owned; NULL none */
    s_endpoint_t ep[S_MAX_ENDPOINTS];
    int nep;
    const char *urls[S_MAX_ENDPOINTS]; /* ep[i].url, for cr_http_endpoints */
    CURLM *multi;              /* owned */
    s_req_t *waiting;          /* list, owned */
    size_t nwaiting;
    size_t nflight;
    s_req_t *flight;           /* in-flight list (requests owned) */
    cr_http_done_fn done;
    void *arg;
    cr_http_stats_t st;
    uint64_t rr;               /* round robin among equally loaded endpoints */
};

static int s_buf_add(s_buf_t *b, const char *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return -ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

cr_http_t *cr_http_new(const cr_http_opts_t *o, cr_http_done_fn done, void *arg, char *err,
                       size_t errlen)
{
    cr_http_t *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->o = *o;
    h->done = done;
    h->arg = arg;
    for (const char *p = o->endpoints ? o->endpoints : ""; *p;) {
        p += strspn(p, ", ");
        size_t k = strcspn(p, ", ");
        if (!k)
            break;
        if (h->nep == S_MAX_ENDPOINTS) {
            snprintf(err, errlen, "--endpoints: more than %d", S_MAX_ENDPOINTS);
            goto fail;
        }
        while (k > 1 && p[k - 1] == '/')
            k--; /* "http://h/v1/" and "http://h/v1" are one endpoint */
        s_endpoint_t *e = &h->ep[h->nep];
        if (!(e->url = strndup(p, k)) || asprintf(&e->post_url, "%s/chat/completions", e->url) < 0)
            goto nomem;
        if (strncmp(e->url, "http://", 7) != 0 && strncmp(e->url, "https://", 8) != 0) {
            snprintf(err, errlen, "--endpoints: '%s' is not an http:// or https:// URL", e->url);
            h->nep++;
            goto fail;
        }
        h->urls[h->nep++] = e->url;
        p += k;
    }
    if (!h->nep) {
        snprintf(err, errlen, "--endpoints: no endpoint");
        goto fail;
    }
    if (o->api_key && *o->api_key && asprintf(&h->auth, "Authorization: Bearer %s", o->api_key) < 0)
        goto nomem;
    if (!(h->multi = curl_multi_init())) {
        snprintf(err, errlen, "curl_multi_init failed");
        goto fail;
    }
    return h;
nomem:
    snprintf(err, errlen, "out of memory");
fail:
    cr_http_destroy(&h);
    return NULL;
}

static void s_req_free(s_req_t *r)
{
    if (!r)
        return;
    free(r->body);
    free(r->resp.p);
    for (int i = 0; r->acc && i < r->n; i++)
        free(r->acc[i].p);
    free(r->acc);
    for (int i = 0; r->fin && i < r->n; i++)
        free(r->fin[i]);
    free(r->fin);
    curl_slist_free_all(r->hdrs);
    free(r);
}

void cr_http_destroy(cr_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_http_t *h = *self_p;
    if (h->multi) {
        while (h->flight) {
            s_req_t *r = h->flight;
            h->flight = r->fnext;
            curl_multi_remove_handle(h->multi, r->easy);
            curl_easy_cleanup(r->easy);
            s_req_free(r);
        }
        curl_multi_cleanup(h->multi);
    }
    while (h->waiting) {
        s_req_t *r = h->waiting;
        h->waiting = r->next;
        s_req_free(r);
    }
    for (int i = 0; i < h->nep; i++) {
        free(h->ep[i].url);
        free(h->ep[i].post_url);
    }
    free(h->auth);
    free(h);
    *self_p = NULL;
}

int cr_http_request(cr_http_t *h, const json_t *messages, int n, void *tag)
{
    json_t *b = json_pack("{s:s, s:O, s:i, s:f, s:f, s:I, s:b}", "model", h->o.model, "messages",
                          messages, "n", n, "temperature", h->o.temperature, "top_p", h->o.top_p,
                          "max_tokens", (json_int_t)h->o.max_tokens, "stream", h->o.stream != 0);
    if (b && h->o.stream)
        json_object_set_new(b, "stream_options", json_pack("{s:b}", "include_usage", 1));
    s_req_t *r = b ? calloc(1, sizeof *r) : NULL;
    if (r)
        r->body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    if (!r || !r->body) {
        s_req_free(r);
        return -ENOMEM;
    }
    r->n = n;
    r->tag = tag;
    r->ep = -1;
    r->t0_ms = r->due_ms = cr_time_mono_ms();
    r->next = h->waiting;
    h->waiting = r;
    h->nwaiting++;
    h->st.requests++;
    return 0;
}

/* ---- one try ---- */

/* Parses the SSE lines of r->resp from sse_off: "data: {chunk}" adds each
 * choice's delta.content, its finish_reason and a usage object;
 * "data: [DONE]" ends the stream. Other lines (comments, event:, id:) are
 * skipped, as the SSE specification says. */
static void s_sse_parse(s_req_t *r)
{
    for (;;) {
        char *line = r->resp.p + r->sse_off;
        char *nl = memchr(line, '\n', r->resp.n - r->sse_off);
        if (!nl)
            return;
        r->sse_off = (size_t)(nl - r->resp.p) + 1;
        *nl = '\0';
        if (nl > line && nl[-1] == '\r')
            nl[-1] = '\0';
        if (strncmp(line, "data:", 5) != 0)
            continue;
        const char *d = line + 5 + (line[5] == ' ');
        r->sse_events++;
        if (strcmp(d, "[DONE]") == 0) {
            r->sse_done = 1;
            continue;
        }
        json_t *c = json_loads(d, 0, NULL);
        json_t *choices = json_object_get(c, "choices");
        if (!json_is_object(c) || (choices && !json_is_array(choices))) {
            r->sse_bad = 1;
            json_decref(c);
            continue;
        }
        size_t i;
        json_t *ch;
        json_array_foreach(choices, i, ch) {
            json_int_t idx = json_integer_value(json_object_get(ch, "index"));
            if (idx < 0 || idx >= r->n)
                continue;
            const char *piece = json_string_value(json_object_get(json_object_get(ch, "delta"),
                                                                  "content"));
            if (piece)
                s_buf_add(&r->acc[idx], piece, strlen(piece));
            const char *f = json_string_value(json_object_get(ch, "finish_reason"));
            if (f) {
                free(r->fin[idx]);
                r->fin[idx] = strdup(f);
            }
        }
        json_t *u = json_object_get(c, "usage");
        if (json_is_object(u)) {
            r->ptok = json_integer_value(json_object_get(u, "prompt_tokens"));
            r->ctok = json_integer_value(json_object_get(u, "completion_tokens"));
        }
        json_decref(c);
    }
}

static size_t s_on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    s_req_t *r = arg;
    size_t n = size * nmemb;
    if (r->resp.n + n > S_MAX_BODY || s_buf_add(&r->resp, p, n) != 0)
        return 0; /* curl ends the transfer with CURLE_WRITE_ERROR */
    if (r->acc)
        s_sse_parse(r);
    return n;
}

static size_t s_on_header(char *p, size_t size, size_t nmemb, void *arg)
{
    s_req_t *r = arg;
    size_t n = size * nmemb;
    if (n > 12 && strncasecmp(p, "retry-after:", 12) == 0) {
        double s = strtod(p + 12, NULL); /* seconds; an HTTP date is ignored */
        if (s > 0 && s < 3600)
            r->retry_after_ms = (int64_t)(s * 1000);
    }
    return n;
}

/* The endpoint for the next try: the fewest in flight below the cap,
 * round robin among equals. -1 when all are full. */
static int s_pick(cr_http_t *h)
{
    int best = -1;
    for (int k = 0; k < h->nep; k++) {
        int i = (int)((h->rr + (uint64_t)k) % (uint64_t)h->nep);
        if (h->ep[i].in_flight < h->o.concurrency &&
            (best < 0 || h->ep[i].in_flight < h->ep[best].in_flight))
            best = i;
    }
    h->rr++;
    return best;
}

/* Starts r's next try on endpoint ep. 0, or -ENOMEM (r unchanged). */
static int s_start(cr_http_t *h, s_req_t *r, int ep)
{
    CURL *e = curl_easy_init();
    if (!e)
        return -ENOMEM;
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    hd = hd ? curl_slist_append(hd, "Expect:") : NULL; /* no 100-continue round trip */
    if (hd && h->o.stream)
        hd = curl_slist_append(hd, "Accept: text/event-stream");
    if (hd && h->auth)
        hd = curl_slist_append(hd, h->auth);
    if (!hd) {
        curl_easy_cleanup(e);
        return -ENOMEM;
    }
    free(r->resp.p);
    memset(&r->resp, 0, sizeof r->resp);
    r->sse_off = 0;
    r->sse_done = r->sse_bad = r->sse_events = 0;
    r->ptok = r->ctok = -1;
    r->retry_after_ms = 0;
    if (h->o.stream) {
        for (int i = 0; r->acc && i < r->n; i++)
            free(r->acc[i].p);
        for (int i = 0; r->fin && i < r->n; i++)
            free(r->fin[i]);
        free(r->acc);
        free(r->fin);
        r->acc = calloc((size_t)r->n, sizeof *r->acc);
        r->fin = calloc((size_t)r->n, sizeof *r->fin);
        if (!r->acc || !r->fin) {
            curl_slist_free_all(hd);
            curl_easy_cleanup(e);
            return -ENOMEM;
        }
    }
    curl_easy_setopt(e, CURLOPT_URL, h->ep[ep].post_url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->body));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, s_on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)h->o.timeout_ms);
    /* 10 s: a server that does not accept in that long is down, not busy */
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(h->o.timeout_ms < 10000 ? h->o.timeout_ms : 10000));
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
        curl_slist_free_all(hd);
        curl_easy_cleanup(e);
        return -ENOMEM;
    }
    r->easy = e;
    r->hdrs = hd;
    r->ep = ep;
    r->fprev = NULL;
    r->fnext = h->flight;
    if (h->flight)
        h->flight->fprev = r;
    h->flight = r;
    r->attempts++;
    h->ep[ep].in_flight++;
    h->nflight++;
    h->st.tries++;
    return 0;
}

/* Parses a whole (non-stream) answer into res. 0, or -1 when it is not a
 * chat completion. Strings point into *doc (release it after the callback). */
static int s_parse_body(const char *body, json_t **doc, cr_http_result_t *res, char ***content,
                        char ***fin)
{
    *doc = json_loads(body, 0, NULL);
    json_t *choices = json_object_get(*doc, "choices");
    if (!json_is_array(choices) || json_array_size(choices) == 0)
        return -1;
    size_t n = json_array_size(choices);
    *content = calloc(n, sizeof **content);
    *fin = calloc(n, sizeof **fin);
    if (!*content || !*fin)
        return -1;
    size_t i;
    json_t *ch;
    json_array_foreach(choices, i, ch) {
        json_t *idx = json_object_get(ch, "index");
        size_t k = json_is_integer(idx) && json_integer_value(idx) >= 0 &&
                           (size_t)json_integer_value(idx) < n ? (size_t)json_integer_value(idx)
                                                               : i;
        const char *c = json_string_value(json_object_get(json_object_get(ch, "message"),
                                                          "content"));
        if (!json_is_object(json_object_get(ch, "message")))
            return -1;
        (*content)[k] = (char *)(c ? c : "");
        const char *f = json_string_value(json_object_get(ch, "finish_reason"));
        (*fin)[k] = (char *)(f ? f : "");
    }
    for (size_t k = 0; k < n; k++) {
        if (!(*content)[k])
            (*content)[k] = "";
        if (!(*fin)[k])
            (*fin)[k] = "";
    }
    res->n = n;
    json_t *u = json_object_get(*doc, "usage");
    res->prompt_tokens = json_is_object(u) ? json_integer_value(json_object_get(u, "prompt_tokens")) : -1;
    res->completion_tokens =
        json_is_object(u) ? json_integer_value(json_object_get(u, "completion_tokens")) : -1;
    return 0;
}

static void s_note(s_req_t *r, const char *what)
{
    size_t n = strlen(r->faults);
    snprintf(r->faults + n, sizeof r->faults - n, "%s%s", n ? ", " : "", what);
}

/* A try ended: answer, retry or fail. */
static void s_finish(cr_http_t *h, s_req_t *r, CURLcode cc)
{
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(h->multi, r->easy);
    curl_easy_cleanup(r->easy);
    r->easy = NULL;
    curl_slist_free_all(r->hdrs);
    r->hdrs = NULL;
    h->ep[r->ep].in_flight--;
    h->nflight--;
    if (r->fprev)
        r->fprev->fnext = r->fnext;
    else
        h->flight = r->fnext;
    if (r->fnext)
        r->fnext->fprev = r->fprev;
    r->fprev = r->fnext = NULL;

    cr_http_result_t res = {.endpoint = h->ep[r->ep].url, .attempts = r->attempts,
                            .prompt_tokens = -1, .completion_tokens = -1};
    json_t *doc = NULL;
    char **content = NULL, **fin = NULL;
    const char *retry = NULL; /* the fault class when the try should be retried */
    char why[300] = "";
    if (cc != CURLE_OK) {
        retry = cc == CURLE_OPERATION_TIMEDOUT ? "timeout" : "connection";
        snprintf(why, sizeof why, "%s: %s", h->ep[r->ep].url, curl_easy_strerror(cc));
        if (cc == CURLE_OPERATION_TIMEDOUT)
            h->st.retry_timeout++;
        else
            h->st.retry_conn++;
    } else if (status == 200 && !h->o.stream) {
        if (s_parse_body(r->resp.p ? r->resp.p : "", &doc, &res, &content, &fin) != 0) {
            retry = "invalid";
            h->st.retry_invalid++;
            snprintf(why, sizeof why, "%s: answer is not a chat completion (%.60s)",
                     h->ep[r->ep].url, r->resp.p ? r->resp.p : "");
        }
    } else if (status == 200) {
        if (r->resp.n > r->sse_off) {
            /* a last line without its newline */
            s_buf_add(&r->resp, "\n", 1);
            s_sse_parse(r);
        }
        if (r->sse_bad || !r->sse_events) {
            retry = "invalid";
            h->st.retry_invalid++;
            snprintf(why, sizeof why, "%s: not an event stream of JSON chunks", h->ep[r->ep].url);
        } else if (!r->sse_done) {
            retry = "connection";
            h->st.retry_conn++;
            snprintf(why, sizeof why, "%s: stream ended before [DONE]", h->ep[r->ep].url);
        } else {
            content = calloc((size_t)r->n, sizeof *content);
            fin = calloc((size_t)r->n, sizeof *fin);
            if (content && fin) {
                for (int i = 0; i < r->n; i++) {
                    content[i] = r->acc[i].p ? r->acc[i].p : "";
                    fin[i] = r->fin[i] ? r->fin[i] : "";
                }
                res.n = (size_t)r->n;
                res.prompt_tokens = r->ptok;
                res.completion_tokens = r->ctok;
            }
        }
    } else if (status == 408 || status == 429 || status >= 500) {
        retry = status == 429 ? "429" : status == 408 ? "408" : "5xx";
        if (status == 429)
            h->st.retry_429++;
        else if (status == 408)
            h->st.retry_408++;
        else
            h->st.retry_5xx++;
        snprintf(why, sizeof why, "%s: HTTP %ld %.120s", h->ep[r->ep].url, status,
                 r->resp.p ? r->resp.p : "");
    } else {
        h->st.refused++;
        snprintf(why, sizeof why, "%s: HTTP %ld %.200s", h->ep[r->ep].url, status,
                 r->resp.p ? r->resp.p : "");
    }

    if (retry) {
        char note[32];
        snprintf(note, sizeof note, "%s", strcmp(retry, "5xx") == 0 ? "5xx" : retry);
        s_note(r, note);
    }
    if (retry && r->attempts <= h->o.retries) {
        /* full jitter over [0, min(cap, base * 2^(tries - 1))], Retry-After when longer */
        int64_t cap = h->o.backoff_ms;
        for (int i = 1; i < r->attempts && cap < h->o.backoff_max_ms; i++)
            cap *= 2;
        if (cap > h->o.backoff_max_ms)
            cap = h->o.backoff_max_ms;
        uint32_t rnd;
        cr_random_bytes(&rnd, sizeof rnd);
        int64_t wait = cap > 0 ? (int64_t)(rnd % (uint32_t)(cap + 1)) : 0;
        if (r->retry_after_ms > wait)
            wait = r->retry_after_ms;
        cr_debug("retry %d of a request in %lld ms: %s", r->attempts, (long long)wait, why);
        r->due_ms = cr_time_mono_ms() + wait;
        r->next = h->waiting;
        h->waiting = r;
        h->nwaiting++;
        json_decref(doc);
        free(content);
        free(fin);
        return;
    }
    res.ok = retry == NULL && why[0] == '\0' && content != NULL;
    if (!res.ok && !why[0])
        snprintf(why, sizeof why, "out of memory");
    if (res.ok)
        snprintf(res.error, sizeof res.error, "%s", r->faults);
    else if (retry)
        snprintf(res.error, sizeof res.error, "%d tries failed (%s); last: %s", r->attempts,
                 r->faults, why);
    else
        snprintf(res.error, sizeof res.error, "%s", why);
    res.content = content;
    res.finish_reason = fin;
    res.latency_ms = (double)(cr_time_mono_ms() - r->t0_ms);
    if (res.ok)
        h->st.answered++;
    else
        h->st.failed++;
    h->done(h->arg, r->tag, &res);
    json_decref(doc);
    free(content);
    free(fin);
    s_req_free(r);
}

/* Starts every waiting request that is due while an endpoint has room. */
static void s_start_due(cr_http_t *h, int64_t now, int64_t *next_due)
{
    s_req_t **pp = &h->waiting;
    *next_due = -1;
    while (*pp) {
        s_req_t *r = *pp;
        if (r->due_ms > now) {
            if (*next_due < 0 || r->due_ms < *next_due)
                *next_due = r->due_ms;
            pp = &r->next;
            continue;
        }
        int ep = s_pick(h);
        if (ep < 0)
            return; /* every endpoint full: wait for a try to end */
        if (s_start(h, r, ep) != 0) {
            pp = &r->next; /* out of memory: try again next turn */
            continue;
        }
        *pp = r->next;
        h->nwaiting--;
    }
}

int cr_http_run(cr_http_t *h, int extra_fd, int timeout_ms)
{
    int64_t now = cr_time_mono_ms(), next_due;
    s_start_due(h, now, &next_due);
    int running = 0;
    curl_multi_perform(h->multi, &running);
    if (next_due >= 0 && next_due - now < timeout_ms)
        timeout_ms = (int)(next_due - now > 0 ? next_due - now : 0);
    struct curl_waitfd w = {.fd = extra_fd, .events = CURL_WAIT_POLLIN};
    int nfds = 0;
    CURLMcode mc = curl_multi_poll(h->multi, extra_fd >= 0 ? &w : NULL, extra_fd >= 0 ? 1 : 0,
                                   timeout_ms, &nfds);
    curl_multi_perform(h->multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(h->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        s_req_t *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        s_finish(h, r, m->data.result);
    }
    s_start_due(h, cr_time_mono_ms(), &next_due);
    curl_multi_perform(h->multi, &running);
    return mc == CURLM_OK ? 0 : -EINTR;
}

size_t cr_http_in_flight(const cr_http_t *h)
{
    return h->nflight;
}

size_t cr_http_waiting(const cr_http_t *h)
{
    return h->nwaiting;
}

void cr_http_stats(const cr_http_t *h, cr_http_stats_t *s)
{
    *s = h->st;
}

size_t cr_http_endpoints(const cr_http_t *h, const char *const **urls)
{
    *urls = h->urls;
    return (size_t)h->nep;
}
