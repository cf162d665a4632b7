/* worker.h — the worker process: one per device.
 *
 * A DEALER socket (routing id = worker id) talks to the coordinator's
 * workers endpoint (docs/protocol.md "Worker ↔ coordinator"). Assigned jobs
 * go to the compile pool (compile.h), then to the runner supervisor
 * (supervisor.h); finished records come back to the main loop, are sent as
 * Result and kept until the coordinator acknowledges them.
 *
 * Connection states (each transition names the function that makes it):
 *
 *   DOWN --s_connect--> UP --(liveness × heartbeat_ms of silence)--> s_disconnect --> DOWN
 *     ^                  |                                                            |
 *     |                  +-- Disconnect from the coordinator: s_hello (Ready + resend)|
 *     +---------- after the backoff (100 ms, doubling to 5 s) ------------------------+
 *
 * Entering UP sends Ready and every unacknowledged result. */
#ifndef CR_WORKER_H
#define CR_WORKER_H

#include "config.h"

typedef struct cr_worker cr_worker_t;

/* Creates a worker from cfg (copied): identity, compile pool, supervisor,
 * ZeroMQ context. Nothing is connected yet. Returns NULL with a log line when
 * the work dir, the backends or the threads cannot be set up. Caller owns
 * the worker (cr_worker_destroy). */
cr_worker_t *cr_worker_new(const cr_config_t *cfg);

/* Runs the main loop until cr_worker_stop (or SIGTERM/SIGINT under
 * cr_worker_main). Returns 0 after a requested stop, CR_E_ZMQ when the
 * socket cannot be made. */
int cr_worker_run(cr_worker_t *w);

/* Asks the loop to stop at its next turn. Safe from any thread. */
void cr_worker_stop(cr_worker_t *w);

/* The worker id in use (cfg->worker_id or <hostname>-<pid>). */
const char *cr_worker_id(const cr_worker_t *w);

/* Kills running compilers and the runner, joins the threads, closes the
 * socket and the context. Safe on NULL; nulls *self_p. */
void cr_worker_destroy(cr_worker_t **self_p);

/* The `crucible worker` command: new, run until SIGTERM/SIGINT, destroy.
 * Returns a process exit code (0 on a clean stop). */
int cr_worker_main(const cr_config_t *cfg);

/* `crucible worker --gpus all|0,2,...`: one worker process per GPU, each
 * `exe worker --gpu <i> --worker-id <id>-g<i>` with every other setting of
 * cfg passed on the command line (and cuda added to --backends), where <id>
 * is cfg->worker_id or <host>-<pid>. "all" counts the GPUs through NVML.
 * SIGTERM/SIGINT are forwarded to the children; returns once all have
 * exited: 0 when each stopped cleanly (or by the forwarded signal), 1 when
 * any failed or could not start, 2 (usage) for an index NVML does not know
 * or "all" without NVML. */
int cr_worker_main_gpus(const cr_config_t *cfg, const char *exe);

#endif
