/* client.h — the C client library: talk to a coordinator's clients endpoint.
 *
 * One DEALER socket (docs/protocol.md, "Client ↔ coordinator"). Requests are
 * sent without waiting; every reply and streamed message (SubmitAck, Result,
 * GroupDone, BatchDone, StatusReply, CancelAck, Error) comes back through
 * cr_client_recv, in the order the coordinator sent it. Not thread-safe:
 * one client per thread.
 *
 * Also here: building what a Submit carries from folders on disk (task
 * bundles and job specs), shared by `crucible submit`, `crucible run` and
 * the tests. */
#ifndef CR_CLIENT_H
#define CR_CLIENT_H

#include "config.h"
#include "crucible.pb-c.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cr_client cr_client_t;

/* Connects a DEALER to endpoint (the connection completes in the background;
 * requests queue until it does). max_msg caps incoming messages. Returns
 * NULL (and logs why) when the socket cannot be made. Caller owns the client. */
cr_client_t *cr_client_new(const char *endpoint, size_t max_msg);

/* As cr_client_new for cfg's clients_endpoint and max_msg, with the
 * transport security of cfg (common/curve.h): CURVE with --key and
 * --server-key, else plaintext, refused (NULL, logged) on a non-loopback
 * endpoint without --insecure-force. cr_client_new is plaintext, unchecked. */
cr_client_t *cr_client_new_cfg(const cr_config_t *cfg);

/* Closes the socket and its context. Safe on NULL; nulls *self_p. */
void cr_client_destroy(cr_client_t **self_p);

/* Drops the socket and connects a new DEALER to the same endpoint: the
 * coordinator sees a new peer, so subscriptions of the old one are gone
 * (re-send Subscribe) and replies still owed to it are lost (re-send the
 * request; Submit is idempotent). For a coordinator that fell silent.
 * Returns 0, or CR_E_ZMQ with the client unchanged. */
int cr_client_reconnect(cr_client_t *c);

/* Sends Submit{batch_id, tasks, jobs, options, subscribe}. The arrays are
 * borrowed. Returns 0, CR_E_TOO_BIG when the message would exceed the
 * client's max_msg, or CR_E_ZMQ. */
int cr_client_submit(cr_client_t *c, const char *batch_id, Crucible__TaskBundle **tasks,
                     size_t ntasks, Crucible__JobSpec **jobs, size_t njobs,
                     const Crucible__JobOptions *options, int subscribe);

/* Sends Subscribe{batch_id, after_seq, follow}. 0 or CR_E_ZMQ. */
int cr_client_subscribe(cr_client_t *c, const char *batch_id, uint64_t after_seq, int follow);

/* Sends StatusRequest{batch_id} ("" or NULL = the whole cluster). 0 or CR_E_ZMQ. */
int cr_client_status(cr_client_t *c, const char *batch_id);

/* Sends Cancel{batch_id, job_id} (job_id "" or NULL = the whole batch). 0 or CR_E_ZMQ. */
int cr_client_cancel(cr_client_t *c, const char *batch_id, const char *job_id);

/* The client's DEALER socket, for zmq_poll beside other sockets or fds
 * (then cr_client_recv with timeout 0). Borrowed: it changes on
 * cr_client_reconnect. */
void *cr_client_socket(cr_client_t *c);

/* Batch job options from the config (strings borrowed from cfg). */
void cr_client_job_options(const cr_config_t *cfg, Crucible__JobOptions *o);

/* Waits up to timeout_ms (-1 = forever) for one message. Returns 0 and *out
 * (release with cr_wire_free); -EAGAIN when nothing came in time; -EINTR
 * when a signal interrupted the wait; CR_E_DECODE / CR_E_TOO_BIG /
 * CR_E_VERSION for a message that came but is bad (logged, *out NULL);
 * -ENOMEM when a record could not be handed out (it stays for the next
 * call); CR_E_ZMQ on a socket error. Submits and Subscribes ask for
 * records several a message (record_batches, docs/protocol.md) when the
 * client takes messages of 2 x CR_WIRE_BATCH_BYTES: such a Result is handed
 * out one record a call, each as Result{record}, the shape of a record
 * streamed alone, so a caller sees one record per Result either way. */
int cr_client_recv(cr_client_t *c, int timeout_ms, Crucible__Envelope **out);

/* 1 while records of a Result already received wait to be handed out:
 * cr_client_recv then returns one at once, and a poll on the socket (which
 * has nothing new) would not say so. A caller that polls the socket itself
 * calls cr_client_recv first while this is 1. */
int cr_client_pending(const cr_client_t *c);

/* ---- building submits from disk ---- */

/* Reads a task folder into a bundle: task.json, the file named by
 * "reference", the one named by "baseline" (if any); name = the task's
 * "name"; hash = hex BLAKE2b of the three texts. Every file must resolve
 * (symlinks followed) to a path inside dir and be UTF-8 text without NUL
 * bytes; one that is not is refused with err naming it. Only what the bundle needs
 * is read here: full validation is the coordinator's (INVALID_TASK) and
 * `crucible task check`'s. Returns 0 and *out (free with
 * crucible__task_bundle__free_unpacked), or a negative code with err naming
 * the file and what is wrong. */
int cr_client_task_bundle(const char *dir, Crucible__TaskBundle **out, char *err, size_t errlen);

/* Writes into b->hash (which must hold CR_HASH_HEX_LEN + 1 bytes) the hex BLAKE2b
 * of task_json, reference_source and baseline_source, as
 * cr_client_task_bundle does for a folder (inline tasks get the same). */
void cr_client_bundle_hash(Crucible__TaskBundle *b);

/* What one submit carries: the bundles and the jobs, both owned. */
typedef struct {
    Crucible__TaskBundle **tasks; /* owned, each freed with free_unpacked */
    size_t ntasks;
    char **task_dirs;             /* owned; folder each bundle came from */
    Crucible__JobSpec **jobs;     /* owned, each freed with free_unpacked */
    size_t njobs;
    size_t cap_jobs;              /* allocated slots in jobs */
} cr_jobset_t;

/* Loads tasks and candidates into an empty (zeroed) js.
 *   tasks: a task folder (holding task.json) or a folder of task folders.
 *   cands: NULL = each task's own candidates/ folder; a folder laid out
 *          <task>/<file> or <task>/candidates/<file> (<task> is the task's
 *          name or its folder name); or a JSONL manifest whose lines are
 *          {"task", "file" | "source", "job_id"?, "group_id"?,
 *          "sample_index"?, "turn"?} ("file" relative to the working
 *          directory or to the manifest's folder).
 * Job ids default to "<task>/<file name>" ("<task>/line<N>" for inline
 * sources). A candidate in a folder must resolve inside that folder and be
 * UTF-8 text without NUL bytes (err names the file); a manifest's "file"
 * is the caller's explicit choice and may lie anywhere. Candidate files are the ones ending .c .cu .cc .cpp .cxx .py.
 * Runs cr_jobset_check. Returns 0, or a negative code with err naming the
 * file (and line) at fault; js then holds what was loaded so far (release with cr_jobset_close). */
int cr_jobset_load(cr_jobset_t *js, const char *tasks, const char *cands, char *err,
                   size_t errlen);

/* Adds one job (strings copied; NULL group_id = none). Returns 0 or -ENOMEM.
 * Duplicate ids are not checked here (cr_jobset_check does it in one pass). */
int cr_jobset_add(cr_jobset_t *js, const char *job_id, const char *task, const char *source,
                  const char *group_id, uint32_t sample_index, uint32_t turn);

/* Checks that every job id is unique and every job names a task of the set.
 * Returns 0, or CR_E_DUPLICATE / CR_E_NOT_FOUND with err naming the job. */
int cr_jobset_check(const cr_jobset_t *js, char *err, size_t errlen);

/* Keeps only the tasks whose "language" is in backends (a comma list such
 * as "c,cuda"; backends are named after the languages they judge) and their
 * jobs; a task.json that does not parse is kept, for the coordinator to
 * refuse. Returns the number of jobs dropped; skipped (if not NULL) gets the
 * dropped languages, comma separated. */
size_t cr_jobset_keep_backends(cr_jobset_t *js, const char *backends, char *skipped,
                               size_t len);

/* Keeps only the tasks that need at most gpus GPUs ("gpus": N,
 * docs/multigpu.md; tasks without it need none) and their jobs; 0 drops
 * every task with "gpus". Returns the number of jobs dropped; skipped (if
 * not NULL) gets "N-GPU" for each N dropped, comma separated. */
size_t cr_jobset_keep_gpus(cr_jobset_t *js, int gpus, char *skipped, size_t len);

/* The bundle named name, or NULL. */
Crucible__TaskBundle *cr_jobset_task(const cr_jobset_t *js, const char *name);

/* Releases everything and zeroes js. */
void cr_jobset_close(cr_jobset_t *js);

#endif
