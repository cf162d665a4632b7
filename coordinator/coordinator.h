/* coordinator.h — the broker: clients on one ROUTER, workers on another, the
 * durable queue in SQLite (store.h), the worker registry (scheduler.h).
 *
 * Semantics are those of docs/protocol.md. The coordinator never stops for
 * a bad message: it answers Error{code} where it can, logs the peer, and
 * carries on. */
#ifndef CR_COORDINATOR_H
#define CR_COORDINATOR_H

#include "config.h"

typedef struct cr_coordinator cr_coordinator_t;

/* Opens the store (cfg->db), binds cfg->clients_endpoint and
 * cfg->workers_endpoint. cfg is copied. Returns NULL (after logging why)
 * when the database cannot be opened or an endpoint cannot be bound. */
cr_coordinator_t *cr_coordinator_new(const cr_config_t *cfg);

/* Runs the loop until cr_coordinator_stop or SIGINT/SIGTERM (when
 * cr_coordinator_main installed the handlers). Returns 0 on a clean stop,
 * CR_E_ZMQ when polling fails. */
int cr_coordinator_run(cr_coordinator_t *c);

/* Asks the loop to return; safe from another thread. It returns within one
 * heartbeat interval. */
void cr_coordinator_stop(cr_coordinator_t *c);

/* Closes sockets and the store; nulls *self_p. Safe on NULL. */
void cr_coordinator_destroy(cr_coordinator_t **self_p);

/* `crucible coordinator`: installs SIGINT/SIGTERM handlers (they only set a
 * flag), creates, runs, destroys. Returns 0 on clean shutdown, 1 otherwise. */
int cr_coordinator_main(const cr_config_t *cfg);

#endif
