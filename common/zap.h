/* zap.h — the coordinator's ZAP handler (ZeroMQ RFC 27): who may connect.
 *
 * A thread answers ZAP requests on inproc://zeromq.zap.01 of the given
 * context. A CURVE handshake is allowed iff the client's public key is in
 * the allow-list of the socket's ZMQ_ZAP_DOMAIN ("clients" or "workers");
 * the reply's user id is that key in z85, so every message of the
 * connection carries it as the "User-Id" property (cr_peer_t.user). Any
 * other mechanism, domain or malformed request is refused. Refusals are
 * logged with the key (a repeat of the same key at most every 10 s). */
#ifndef CR_ZAP_H
#define CR_ZAP_H

#include <stddef.h>
#include <stdint.h>

#define CR_ZAP_CLIENTS "clients" /* ZMQ_ZAP_DOMAIN of the clients socket */
#define CR_ZAP_WORKERS "workers" /* ZMQ_ZAP_DOMAIN of the workers socket */

typedef struct cr_zap cr_zap_t;

/* Reads the two allow-list files (curve.h format), binds the ZAP socket in
 * zmq_ctx (capped at max_msg like every socket) and starts the thread.
 * Must come before the CURVE sockets bind. Returns NULL with err saying why. */
cr_zap_t *cr_zap_new(void *zmq_ctx, const char *allow_clients, const char *allow_workers,
                     size_t max_msg, char *err, size_t errlen);

/* Handshakes refused so far. */
uint64_t cr_zap_refused(const cr_zap_t *z);

/* Stops and joins the thread, closes the socket (before zmq_ctx_term).
 * Safe on NULL; nulls *self_p. */
void cr_zap_destroy(cr_zap_t **self_p);

#endif
