/* curve.c — see curve.h. */
#define _GNU_SOURCE
#include "curve.h"

#include "error.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

/* Writes all of text to a new file made with mode; -errno on failure. */
static int s_write_new(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = -errno;
            close(fd);
            unlink(path);
            return e;
        }
        off += (size_t)w;
    }
    /* umask may have widened nothing but can narrow; the secret must be 0600 exactly */
    if (fchmod(fd, mode) != 0 || close(fd) != 0) {
        int e = -errno;
        unlink(path);
        return e;
    }
    return 0;
}

int cr_curve_keygen(const char *prefix, char *err, size_t errlen)
{
    char pub[CR_CURVE_Z85 + 1], sec[CR_CURVE_Z85 + 1], kpath[4096], ppath[4096], text[128];
    if (!zmq_has("curve")) {
        snprintf(err, errlen, "this libzmq has no CURVE support");
        return CR_E_USAGE;
    }
    if (!prefix || !prefix[0] || snprintf(kpath, sizeof kpath, "%s.key", prefix) >= (int)sizeof kpath ||
        snprintf(ppath, sizeof ppath, "%s.pub", prefix) >= (int)sizeof ppath) {
        snprintf(err, errlen, "--out: a file prefix is needed");
        return CR_E_USAGE;
    }
    if (zmq_curve_keypair(pub, sec) != 0) {
        snprintf(err, errlen, "zmq_curve_keypair: %s", zmq_strerror(zmq_errno()));
        return CR_E_ZMQ;
    }
    snprintf(text, sizeof text, "# crucible CURVE secret key: keep it private\n%s\n", sec);
    int rc = s_write_new(kpath, text, 0600);
    if (rc == 0) {
        snprintf(text, sizeof text, "%s\n", pub);
        rc = s_write_new(ppath, text, 0644);
        if (rc != 0)
            unlink(kpath);
    }
    explicit_bzero(sec, sizeof sec);
    explicit_bzero(text, sizeof text);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", rc == -EEXIST ? "key files exist already" : "cannot write",
                 strerror(-rc));
    return rc;
}

/* Calls fn for every key of the file (comments and blank lines skipped).
 * Returns 0, or CR_E_USAGE with err naming the file and line of a bad key. */
static int s_each_key(const char *path, int (*fn)(const char *key, void *arg), void *arg,
                      char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -errno;
    }
    char line[512];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *s = line, *e;
        while (isspace((unsigned char)*s))
            s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1]))
            *--e = '\0';
        /* '#' is a z85 digit: only a line that starts with it is a comment */
        if (!*s || *s == '#')
            continue;
        uint8_t raw[32];
        if (e - s != CR_CURVE_Z85 || !zmq_z85_decode(raw, s)) {
            snprintf(err, errlen, "%s:%d: not a z85 CURVE key (40 characters)", path, lineno);
            rc = CR_E_USAGE;
            break;
        }
        rc = fn(s, arg);
        if (rc > 0) { /* fn has what it wanted */
            rc = 0;
            break;
        }
    }
    fclose(f);
    explicit_bzero(line, sizeof line);
    return rc;
}

static int s_first(const char *key, void *arg)
{
    memcpy(arg, key, CR_CURVE_Z85 + 1);
    return 1;
}

int cr_curve_read_key(const char *path, char out[CR_CURVE_Z85 + 1], char *err, size_t errlen)
{
    out[0] = '\0';
    int rc = s_each_key(path, s_first, out, err, errlen);
    if (rc == 0 && !out[0]) {
        snprintf(err, errlen, "%s: no key in the file", path);
        rc = CR_E_USAGE;
    }
    return rc;
}

typedef struct {
    char (*keys)[CR_CURVE_Z85 + 1]; /* grown array */
    size_t n, cap;                  /* used, allocated */
} s_list_t;

static int s_append(const char *key, void *arg)
{
    s_list_t *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        void *g = realloc(l->keys, cap * sizeof *l->keys);
        if (!g)
            return -ENOMEM;
        l->keys = g;
        l->cap = cap;
    }
    memcpy(l->keys[l->n++], key, CR_CURVE_Z85 + 1);
    return 0;
}

int cr_curve_read_list(const char *path, char (**keys)[CR_CURVE_Z85 + 1], size_t *n, char *err,
                       size_t errlen)
{
    s_list_t l = {0};
    int rc = s_each_key(path, s_append, &l, err, errlen);
    if (rc != 0) {
        free(l.keys);
        *keys = NULL;
        *n = 0;
        return rc;
    }
    *keys = l.keys;
    *n = l.n;
    return 0;
}

int cr_curve_is_loopback(const char *ep)
{
    if (strncmp(ep, "ipc://", 6) == 0 || strncmp(ep, "inproc://", 9) == 0)
        return 1;
    if (strncmp(ep, "tcp://", 6) != 0)
        return 0;
    const char *h = ep + 6;
    if (strchr(h, ';')) /* a source address: judge conservatively */
        return 0;
    if (strncmp(h, "localhost:", 10) == 0 || strncmp(h, "[::1]:", 6) == 0)
        return 1;
    unsigned a, b, c, d;
    char colon;
    return sscanf(h, "%u.%u.%u.%u%c", &a, &b, &c, &d, &colon) == 5 && colon == ':' && a == 127 &&
           b < 256 && c < 256 && d < 256;
}

int cr_curve_setup(const cr_config_t *cfg, int server, const char *const *endpoints, size_t n,
                   cr_curve_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->server = server;
    for (size_t i = 0; i < n; i++) {
        /* an abstract socket has no file, so no mode guards it: every local
         * user (any uid, any sandboxed child sharing the network namespace)
         * may connect */
        if (strncmp(endpoints[i], "ipc://@", 7) == 0) {
            snprintf(err, errlen, "%s: abstract ipc:// sockets are open to every local user; "
                     "use a path (ipc:///run/crucible/clients.sock), whose file is made 0600",
                     endpoints[i]);
            return CR_E_USAGE;
        }
    }
    /* Security options that contradict each other are an error, never a
     * silent choice: a key given with --insecure would otherwise be dropped
     * and the traffic sent in the clear. */
    const char *keyopt = cfg->key[0]                  ? "--key"
                         : !server && cfg->server_key[0] ? "--server-key"
                         : server && cfg->allow_clients[0] ? "--allow-clients"
                         : server && cfg->allow_workers[0] ? "--allow-workers"
                                                           : NULL;
    if (keyopt && (cfg->insecure || cfg->insecure_force)) {
        snprintf(err, errlen, "%s and %s contradict each other: CURVE keys were given, and "
                 "plaintext would drop them; give the keys or %s, not both (check "
                 "CRUCIBLE_INSECURE%s in the environment)", keyopt,
                 cfg->insecure ? "--insecure" : "--insecure-force",
                 cfg->insecure ? "--insecure" : "--insecure-force",
                 cfg->insecure ? "" : "_FORCE");
        return CR_E_USAGE;
    }
    if (server && !cfg->key[0] && keyopt) {
        snprintf(err, errlen, "%s needs --key: without the coordinator's secret key there is "
                 "no CURVE, and an allow-list would let in everyone", keyopt);
        return CR_E_USAGE;
    }
    int keyed = cfg->key[0] || (!server && cfg->server_key[0]);
    if (!keyed) {
        if (cfg->insecure_force)
            return 0;
        for (size_t i = 0; i < n; i++) {
            const char *ep = endpoints[i];
            if (strncmp(ep, "ipc://", 6) == 0 || strncmp(ep, "inproc://", 9) == 0)
                continue; /* never leaves the host; the socket file's mode guards it */
            if (!cfg->insecure) {
                snprintf(err, errlen, "%s: plain TCP needs --insecure (loopback only), or "
                         "--key%s for CURVE", ep, server ? " with --allow-clients/--allow-workers"
                                                         : " with --server-key");
                return CR_E_USAGE;
            }
            if (!cr_curve_is_loopback(endpoints[i])) {
                snprintf(err, errlen, "%s is not a loopback endpoint: plaintext is refused there; "
                         "give --key%s (CURVE), or --insecure-force to send in the clear",
                         endpoints[i], server ? " and --allow-clients/--allow-workers"
                                              : " and --server-key");
                return CR_E_USAGE;
            }
        }
        return 0;
    }
    if (!cfg->key[0]) {
        snprintf(err, errlen, "--server-key needs --key: this process's own key file");
        return CR_E_USAGE;
    }
    if (server && (!cfg->allow_clients[0] || !cfg->allow_workers[0])) {
        snprintf(err, errlen, "--key needs --allow-clients and --allow-workers: the public keys "
                 "let in");
        return CR_E_USAGE;
    }
    if (!server && !cfg->server_key[0]) {
        snprintf(err, errlen, "--key needs --server-key: the coordinator's public key file");
        return CR_E_USAGE;
    }
    if (!zmq_has("curve")) {
        snprintf(err, errlen, "--key: this libzmq has no CURVE support");
        return CR_E_USAGE;
    }
    int rc = cr_curve_read_key(cfg->key, out->secret, err, errlen);
    if (rc == 0 && !server)
        rc = cr_curve_read_key(cfg->server_key, out->server_key, err, errlen);
    if (rc == 0 && zmq_curve_public(out->public_key, out->secret) != 0) {
        snprintf(err, errlen, "%s: not a secret key", cfg->key);
        rc = CR_E_USAGE;
    }
    if (rc != 0) {
        explicit_bzero(out, sizeof *out);
        return rc;
    }
    out->on = 1;
    return 0;
}

int cr_curve_apply(void *sock, const cr_curve_t *cv)
{
    if (!cv || !cv->on)
        return 0;
    int one = 1;
    if (cv->server)
        return zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
                       zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, cv->secret, CR_CURVE_Z85) != 0
                   ? CR_E_ZMQ
                   : 0;
    return zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, cv->server_key, CR_CURVE_Z85) != 0 ||
                   zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, cv->public_key, CR_CURVE_Z85) != 0 ||
                   zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, cv->secret, CR_CURVE_Z85) != 0
               ? CR_E_ZMQ
               : 0;
}
