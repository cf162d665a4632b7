/* curve.h — CURVE keys and the transport security policy of every process.
 *
 * Key files hold z85 text (40 characters): PREFIX.key the secret key (mode
 * 0600), PREFIX.pub the public key. Lists of keys (--allow-clients,
 * --allow-workers) hold one z85 key per line; a line starting with '#' is a
 * comment ('#' is also a z85 digit, so never a comment inside a line).
 *
 * Policy (cr_curve_setup): a process with keys speaks CURVE; one without
 * speaks plain TCP, which needs --insecure and is allowed only when every
 * endpoint is loopback (tcp://127.x.x.x, tcp://localhost, tcp://[::1],
 * ipc://, inproc://) unless --insecure-force is given too. Keys together
 * with --insecure or --insecure-force are an error (never a silent
 * downgrade), as are abstract ipc://@name endpoints (no file mode guards
 * them: every local user may connect). */
#ifndef CR_CURVE_H
#define CR_CURVE_H

#include "config.h"

#include <stddef.h>

#define CR_CURVE_Z85 40 /* characters of a z85 key */

typedef struct {
    int on;                           /* 1 = CURVE, 0 = plaintext */
    int server;                       /* 1 = the coordinator's side */
    char secret[CR_CURVE_Z85 + 1];    /* own secret key, z85 */
    char public_key[CR_CURVE_Z85 + 1]; /* own public key, z85 (derived from secret) */
    char server_key[CR_CURVE_Z85 + 1]; /* clients and workers: the coordinator's public key */
} cr_curve_t;

/* Writes a new key pair: prefix.key (secret, 0600, refused if it exists)
 * and prefix.pub. Returns 0, or a negative code with err saying why. */
int cr_curve_keygen(const char *prefix, char *err, size_t errlen);

/* Reads the first z85 key of a key file into out. 0, or a negative code with err. */
int cr_curve_read_key(const char *path, char out[CR_CURVE_Z85 + 1], char *err, size_t errlen);

/* Reads every key of an allow-list file into *keys (caller frees; *n keys,
 * possibly 0). 0, or a negative code with err naming the file and line. */
int cr_curve_read_list(const char *path, char (**keys)[CR_CURVE_Z85 + 1], size_t *n, char *err,
                       size_t errlen);

/* 1 when endpoint is loopback, ipc:// or inproc://. */
int cr_curve_is_loopback(const char *endpoint);

/* Decides a process's security from cfg (server = the coordinator) and
 * checks it against its endpoints (n of them). Returns 0 and *out, or
 * CR_E_USAGE with err saying which setting is missing, which two contradict
 * each other, or why plaintext or an endpoint is refused (naming --key and
 * --insecure-force). */
int cr_curve_setup(const cr_config_t *cfg, int server, const char *const *endpoints, size_t n,
                   cr_curve_t *out, char *err, size_t errlen);

/* Sets the CURVE options on sock (before bind/connect); nothing when
 * cv->on is 0. 0 or CR_E_ZMQ. */
int cr_curve_apply(void *sock, const cr_curve_t *cv);

#endif
