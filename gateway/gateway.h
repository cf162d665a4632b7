/* gateway.h — `crucible gateway`: an HTTP/JSON front door for RL trainers,
 * in front of a coordinator as one more client (docs/gateway.md).
 *
 * Native API (submit a batch, stream its records as NDJSON or server-sent
 * events resumable by seq, status, cancel, wait for a group or the whole
 * batch) and the remote-reward shapes of OpenRLHF (POST /reward/openrlhf)
 * and slime (POST /reward/slime). Bearer tokens (--token-file), required
 * off loopback; HTTPS with --tls-cert/--tls-key. */
#ifndef CR_GATEWAY_H
#define CR_GATEWAY_H

#include "config.h"

/* Loads --tasks and --token-file, connects to the coordinator, listens on
 * --listen and serves until SIGINT/SIGTERM. Prints "listening on
 * http[s]://HOST:PORT" on stdout once it serves (the port the kernel picked
 * for :0). Returns a process exit code: 0 after a signal, 1 when it could
 * not start (logged, naming the setting at fault). */
int cr_gateway_main(const cr_config_t *cfg);

/* The kernel source in a model's completion (common/extract.h, cr_extract_kernel:
 * the same rule as the rollout driver): the last fenced block (```c,
 * ```cuda, ```cpp, ... or bare) that mentions solve, else the last fenced
 * block, else the whole text; an unclosed last fence runs to the end. For a
 * C task (c_language), `extern "C"` before a declaration is dropped, as C
 * does not know it (a CUDA task keeps it: the judge takes both). Caller
 * frees the result; NULL on ENOMEM. */
char *cr_gateway_extract(const char *completion, int c_language);

#endif
