/* zap.c — see zap.h. */
#define _GNU_SOURCE
#include "zap.h"

#include "curve.h"
#include "error.h"
#include "log.h"
#include "timeutil.h"
#include "wire.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define S_ZAP_ENDPOINT "inproc://zeromq.zap.01" /* fixed by RFC 27 */
#define S_ZAP_FRAMES 8    /* a CURVE request has 7; more is malformed */
#define S_ZAP_POLL_MS 100 /* how soon the thread notices stop */
#define S_ZAP_QUIET_MS 10000 /* a refused key is logged again after this long */

typedef struct {
    char (*keys)[CR_CURVE_Z85 + 1]; /* allowed public keys, owned */
    size_t n;                       /* count */
} s_allow_t;

struct cr_zap {
    void *sock;                        /* REP bound to S_ZAP_ENDPOINT, used by the thread */
    s_allow_t clients;                 /* domain CR_ZAP_CLIENTS */
    s_allow_t workers;                 /* domain CR_ZAP_WORKERS */
    pthread_t thread;                  /* the handler */
    int started;                       /* 1 once thread runs */
    atomic_int stop;                   /* set by destroy */
    atomic_uint_least64_t refused;     /* handshakes refused */
    char last_key[CR_CURVE_Z85 + 1];   /* last refused key (log rate limit) */
    int64_t last_log_ms;               /* when it was logged */
};

static int s_allowed(const s_allow_t *a, const char *key)
{
    for (size_t i = 0; i < a->n; i++)
        if (memcmp(a->keys[i], key, CR_CURVE_Z85) == 0)
            return 1;
    return 0;
}

/* Handles one request of nf frames; sends the reply. */
static void s_answer(cr_zap_t *z, zmq_msg_t *f, int nf)
{
    char key[CR_CURVE_Z85 + 1] = "", domain[64] = "", mech[16] = "", addr[128] = "";
    const char *why = NULL;
    if (nf < 6 || zmq_msg_size(&f[0]) != 3 || memcmp(zmq_msg_data(&f[0]), "1.0", 3) != 0) {
        why = "malformed ZAP request";
    } else {
        snprintf(domain, sizeof domain, "%.*s", (int)zmq_msg_size(&f[2]),
                 (const char *)zmq_msg_data(&f[2]));
        snprintf(addr, sizeof addr, "%.*s", (int)zmq_msg_size(&f[3]),
                 (const char *)zmq_msg_data(&f[3]));
        snprintf(mech, sizeof mech, "%.*s", (int)zmq_msg_size(&f[5]),
                 (const char *)zmq_msg_data(&f[5]));
        const s_allow_t *a = strcmp(domain, CR_ZAP_CLIENTS) == 0   ? &z->clients
                             : strcmp(domain, CR_ZAP_WORKERS) == 0 ? &z->workers
                                                                   : NULL;
        if (strcmp(mech, "CURVE") != 0)
            why = "not CURVE";
        else if (nf != 7 || zmq_msg_size(&f[6]) != 32 ||
                 !zmq_z85_encode(key, zmq_msg_data(&f[6]), 32))
            why = "malformed CURVE credentials";
        else if (!a)
            why = "unknown domain";
        else if (!s_allowed(a, key))
            why = "key not in the allow-list";
    }
    if (why) {
        atomic_fetch_add(&z->refused, 1);
        int64_t now = cr_time_mono_ms();
        if (strcmp(key, z->last_key) != 0 || now - z->last_log_ms >= S_ZAP_QUIET_MS) {
            cr_warn("zap: refused %s connection from %s, key %s: %s", domain[0] ? domain : "?",
                    addr[0] ? addr : "?", key[0] ? key : "-", why);
            memcpy(z->last_key, key, sizeof key);
            z->last_log_ms = now;
        }
    } else {
        cr_debug("zap: %s key %s from %s allowed", domain, key, addr);
    }
    /* version, request id, status code, status text, user id, metadata */
    const char *code = why ? "400" : "200";
    const char *text = why ? why : "OK";
    zmq_send(z->sock, "1.0", 3, ZMQ_SNDMORE);
    if (nf >= 2)
        zmq_send(z->sock, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), ZMQ_SNDMORE);
    else
        zmq_send(z->sock, "", 0, ZMQ_SNDMORE);
    zmq_send(z->sock, code, 3, ZMQ_SNDMORE);
    zmq_send(z->sock, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(z->sock, key, why ? 0 : CR_CURVE_Z85, ZMQ_SNDMORE);
    zmq_send(z->sock, "", 0, 0);
}

static void *s_thread(void *arg)
{
    cr_zap_t *z = arg;
    while (!atomic_load(&z->stop)) {
        zmq_pollitem_t it = {z->sock, 0, ZMQ_POLLIN, 0};
        int rc = zmq_poll(&it, 1, S_ZAP_POLL_MS);
        if (rc < 0 && zmq_errno() == ETERM)
            break;
        if (rc <= 0)
            continue;
        zmq_msg_t f[S_ZAP_FRAMES];
        int nf = 0, more = 1, bad = 0;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, z->sock, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&m);
                bad = 1;
                break;
            }
            more = zmq_msg_more(&m);
            if (nf < S_ZAP_FRAMES)
                f[nf++] = m; /* moves the message: closed below */
            else {
                zmq_msg_close(&m);
                bad = 1; /* too many frames: still read them all, then refuse */
            }
        }
        /* a REP socket must answer what it received, even a bad request */
        if (nf > 0 || !bad)
            s_answer(z, f, bad ? 0 : nf);
        for (int i = 0; i < nf; i++)
            zmq_msg_close(&f[i]);
    }
    return NULL;
}

cr_zap_t *cr_zap_new(void *zmq_ctx, const char *allow_clients, const char *allow_workers,
                     size_t max_msg, char *err, size_t errlen)
{
    cr_zap_t *z = calloc(1, sizeof *z);
    if (!z) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    atomic_init(&z->stop, 0);
    atomic_init(&z->refused, 0);
    if (cr_curve_read_list(allow_clients, &z->clients.keys, &z->clients.n, err, errlen) != 0 ||
        cr_curve_read_list(allow_workers, &z->workers.keys, &z->workers.n, err, errlen) != 0)
        goto fail;
    z->sock = zmq_socket(zmq_ctx, ZMQ_REP);
    if (!z->sock || cr_wire_socket_caps(z->sock, max_msg) != 0 ||
        zmq_bind(z->sock, S_ZAP_ENDPOINT) != 0) {
        snprintf(err, errlen, "ZAP socket: %s", zmq_strerror(zmq_errno()));
        goto fail;
    }
    if (pthread_create(&z->thread, NULL, s_thread, z) != 0) {
        snprintf(err, errlen, "ZAP thread: cannot start");
        goto fail;
    }
    z->started = 1;
    cr_info("zap: %zu client key%s, %zu worker key%s allowed", z->clients.n,
            z->clients.n == 1 ? "" : "s", z->workers.n, z->workers.n == 1 ? "" : "s");
    return z;
fail:
    cr_zap_destroy(&z);
    return NULL;
}

uint64_t cr_zap_refused(const cr_zap_t *z)
{
    return atomic_load(&((cr_zap_t *)z)->refused);
}

void cr_zap_destroy(cr_zap_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_zap_t *z = *self_p;
    atomic_store(&z->stop, 1);
    if (z->started)
        pthread_join(z->thread, NULL);
    if (z->sock)
        zmq_close(z->sock);
    free(z->clients.keys);
    free(z->workers.keys);
    free(z);
    *self_p = NULL;
}
