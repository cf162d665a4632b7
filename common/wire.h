/* wire.h — the one module that encodes and decodes Crucible messages.
 *
 * Every ZeroMQ message is one Crucible__Envelope (proto/crucible.proto).
 * DEALER peers send a single frame; a ROUTER sees [identity][payload].
 * Sizes are capped twice: by ZMQ_MAXMSGSIZE on the socket (cr_wire_socket_caps)
 * and by the decoder here, so an oversized or undecodable message is an error
 * return, never a crash. Every unpacked envelope is released with
 * cr_wire_free() on every path. */
#ifndef CR_WIRE_H
#define CR_WIRE_H

#include "crucible.pb-c.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CR_PROTOCOL_VERSION 1
/* 64 MiB: a GRPO step of 4096 candidates of ~10 KiB source fits with room. */
#define CR_WIRE_MAX_MSG (64u * 1024u * 1024u)
/* Task bundles sent once (Ready.task_cache, docs/protocol.md): the
 * coordinator counts what it sent a worker since its Ready, and forgets it
 * all before a bundle that would take the count past CR_WIRE_TASK_CACHE or
 * the bytes (cr_wire_task_bytes) past CR_WIRE_TASK_CACHE_BYTES; the worker
 * keeps the bundles it received most recently within the same bounds (and
 * at least the newest), which always covers what the coordinator counts.
 * 256: a farm runs a few hundred tasks at once (KernelBench has 250);
 * 64 MiB: one message's worth. */
#define CR_WIRE_TASK_CACHE 256
#define CR_WIRE_TASK_CACHE_BYTES (64u * 1024u * 1024u)
/* Records streamed to a client that asked for record_batches (Submit,
 * Subscribe; docs/protocol.md): the most bytes of records one Result
 * carries in `records`. 8 KiB: about fifty records of a small verdict a
 * message (a few of a verdict with its profile), so a message's own cost is
 * spread thin, while a reader that does not read holds at most its queue
 * (4096 messages, the coordinator's CR_COORD_CLIENT_HWM) of them, 32 MiB,
 * what a queue of 8 KiB records held before. A client asks for batches only
 * when it takes messages of twice this. */
#define CR_WIRE_BATCH_BYTES (8u * 1024u)
/* Records a worker sends in one Result (Assign.result_batches): the
 * results it finished in one loop turn, which its credit bounds (a farm
 * keeps it in the tens); the coordinator refuses a Result of more. */
#define CR_WIRE_RESULT_BATCH 64
/* Room before a batch's first record for the envelope's head
 * (cr_wire_batch_head): version, the Result's tag and its length. */
#define CR_WIRE_BATCH_HEAD 16
/* Identity frames from ROUTER sockets: ZeroMQ caps them at 255 bytes. */
#define CR_WIRE_MAX_ID 255

typedef struct {
    unsigned char bytes[CR_WIRE_MAX_ID]; /* peer routing id */
    size_t len;
    char user[41]; /* ZAP user id of the connection (its z85 CURVE key); "" without CURVE */
} cr_peer_t;

/* Orders two routing ids (length first, then bytes; user is not compared):
 * 0 when they name the same connection. Inline: it sorts a turn's Acks. */
static inline int cr_wire_peer_cmp(const cr_peer_t *a, const cr_peer_t *b)
{
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return memcmp(a->bytes, b->bytes, a->len);
}

/* Packs env (its version is set to CR_PROTOCOL_VERSION) into a heap buffer.
 * Returns 0 and *buf (caller frees with free()) or -ENOMEM / CR_E_TOO_BIG. */
int cr_wire_pack(Crucible__Envelope *env, uint8_t **buf, size_t *len);

/* Decodes data. Returns 0 and *out (release with cr_wire_free), or
 * CR_E_TOO_BIG (len > max), CR_E_DECODE (not a valid envelope, or no body),
 * CR_E_VERSION (a newer major version); *out is then NULL. */
int cr_wire_unpack(const void *data, size_t len, size_t max, Crucible__Envelope **out);

/* Releases an envelope from cr_wire_unpack and nulls the pointer. Safe on NULL. */
void cr_wire_free(Crucible__Envelope **env_p);

/* Name of the envelope's body case, for logs ("submit", "result", ...). */
const char *cr_wire_body_name(const Crucible__Envelope *env);

/* The hard cap a socket enforces for a decoder cap of max_msg: messages up
 * to max_msg are decoded; those up to CR_WIRE_HARD_CAP(max_msg) are still
 * read, so the receiver can log the sender and answer E_TOO_BIG; above it
 * libzmq closes the connection without reading the message, which bounds
 * the memory a stranger can make us hold. */
#define CR_WIRE_HARD_CAP(max_msg) (2 * (max_msg))

/* Sets ZMQ_MAXMSGSIZE to CR_WIRE_HARD_CAP(max_msg), a linger of 0 and
 * sensible high-water marks. */
int cr_wire_socket_caps(void *sock, size_t max_msg);

/* Sends env on a DEALER socket (peer == NULL) or to peer on a ROUTER socket.
 * ZMQ_DONTWAIT: returns CR_E_ZMQ when the peer is unreachable or full, 0 on success. */
int cr_wire_send(void *sock, const cr_peer_t *peer, Crucible__Envelope *env);

/* Receives one message (non-blocking). With peer != NULL the socket is a
 * ROUTER and the identity frame is stored there. Returns:
 * peer->user is set from the message's "User-Id" property.
 *   0 and *out on success;
 *   -EAGAIN when nothing is waiting;
 *   CR_E_DECODE / CR_E_TOO_BIG / CR_E_VERSION when a message came but is bad:
 *     *out is NULL, peer (if any) is filled so the caller can reply;
 *   CR_E_ZMQ on a socket error. */
int cr_wire_recv(void *sock, cr_peer_t *peer, Crucible__Envelope **out);

/* cr_wire_recv with a decoder cap of max bytes instead of CR_WIRE_MAX_MSG:
 * a larger message returns CR_E_TOO_BIG with the peer filled. */
int cr_wire_recv_max(void *sock, cr_peer_t *peer, size_t max, Crucible__Envelope **out);

/* cr_wire_recv_max that also refuses text a C string cannot hold faithfully:
 * every string field of the envelope, at any depth, must be valid UTF-8
 * without NUL bytes (protobuf-c would cut a string at its first NUL, so
 * "a\0x" and "a\0y" would both read as "a"). Such a message returns
 * CR_E_DECODE with field set to the field's path ("submit.jobs.job_id");
 * field is "" for every other outcome. For messages from clients: worker
 * records may carry compiler output that is not UTF-8. */
/* cr_wire_recv_text that first counts the jobs of a Submit on the wire
 * (cr_wire_submit_jobs) and refuses one with more than max_jobs (0 = no
 * cap) without decoding it: CR_E_LIMIT, *out NULL, peer filled. A decoder
 * allocates per entry, so a 64 MiB Submit of empty jobs would otherwise
 * cost gigabytes and seconds before its count could be checked. */
int cr_wire_recv_submit(void *sock, cr_peer_t *peer, size_t max, size_t max_jobs,
                        Crucible__Envelope **out, char *field, size_t cap);

/* A message's parts as they came on the wire, so that the coordinator
 * stores them without packing them again. For a Submit
 * (cr_wire_recv_submit_specs) spec[i] (len[i] bytes) is the packed
 * env->submit->jobs[i], whose source the decoded envelope leaves empty; for
 * a Result (cr_wire_recv_records) it is the packed env->result->records[i],
 * or its record as entry 0. Free with cr_wire_specs_free. */
typedef struct {
    void *frame;          /* owned zmq_msg_t: the message the parts point into */
    const uint8_t **spec; /* owned array of n pointers into frame */
    size_t *len;          /* owned array of n lengths */
    size_t n;             /* jobs, or records */
} cr_wire_specs_t;

/* cr_wire_recv_submit that, for a Submit, also gives *specs (caller owns;
 * NULL when the message is not a Submit or is one of an unusual shape,
 * which is then decoded whole as before). A Submit of the plain shape is
 * decoded by a walk of its fields into one block (cr__wire_submit_walk):
 * read its parts, change none of them; cr_wire_free gives it back. */
int cr_wire_recv_submit_specs(void *sock, cr_peer_t *peer, size_t max, size_t max_jobs,
                              Crucible__Envelope **out, char *field, size_t cap,
                              cr_wire_specs_t **specs);

/* cr_wire_recv_max that, for a Result, also gives *records (caller owns):
 * its records as they came, in the decoded envelope's order. NULL when the
 * message is not a Result with records, or is one of a shape whose records
 * the decoder merges (its result, or its record, given twice), or a record
 * beside records. */
int cr_wire_recv_records(void *sock, cr_peer_t *peer, size_t max, Crucible__Envelope **out,
                         cr_wire_specs_t **records);

/* Frees *specs_p (NULL is fine) and nulls it. */
void cr_wire_specs_free(cr_wire_specs_t **specs_p);

/* cr_wire_recv_records decodes into memory of the calling thread's own, an
 * arena, given back at once by cr_wire_free (one envelope at a time lives
 * there; a second received while the first is not freed is decoded on the
 * heap). Such an envelope's parts are not the heap's: change a string field
 * with cr_wire_set_str, and give a message field new parts from
 * cr_wire_arena_alloc when cr_wire_in_arena says the field lies there
 * (common/reward.c does). */

/* 1 when p (a field's address) lies in the arena's live envelope. */
int cr_wire_in_arena(const void *p);

/* size bytes in the arena, given back with its envelope; NULL when none is
 * live or out of memory. */
void *cr_wire_arena_alloc(size_t size);

/* Sets the string *field of a decoded message to a copy of v: in the arena
 * when the field lies there, else on the heap, freeing the old value (not
 * protobuf-c's shared empty string). 0 or -ENOMEM (*field unchanged). */
int cr_wire_set_str(char **field, const char *v);

/* The walk cr_wire_recv_records decodes a worker's Result with instead of
 * protobuf-c's general unpack (common/wire.c says which shape it takes),
 * alone, for tests: data (len bytes) into *out in the arena (free it with
 * cr_wire_free). 0; 1 when the walk leaves the message to the general
 * unpack (*out NULL); -EBUSY while an envelope is live in the arena;
 * -ENOMEM. Versions are not checked here. */
int cr__wire_result_walk(const void *data, size_t len, Crucible__Envelope **out);

/* The walk cr_wire_recv_submit_specs decodes a client's Submit with
 * instead of protobuf-c's general unpack (common/wire.c says which shape it
 * takes), alone, for tests: data (len bytes, n jobs as cr_wire_submit_jobs
 * counts them) into *out, one block of the heap (free it with
 * cr_wire_free; its parts are not to be changed), each job's bytes in
 * spec[i] / slen[i] (pointers into data, n of each). 0; 1 when the walk
 * leaves the message to the general unpack (*out NULL); -ENOMEM. Versions
 * are not checked here. */
int cr__wire_submit_walk(const void *data, size_t len, size_t n, Crucible__Envelope **out,
                         const uint8_t **spec, size_t *slen);

/* Gives back the arena's memory kept between envelopes (at a thread's end;
 * a live envelope's stays until cr_wire_free). */
void cr_wire_arena_trim(void);

/* Jobs in the Submit body of a packed envelope (0 when it is not a Submit
 * or does not parse), read from the wire format without decoding. */
size_t cr_wire_submit_jobs(const void *data, size_t len);

int cr_wire_recv_text(void *sock, cr_peer_t *peer, size_t max, Crucible__Envelope **out,
                      char *field, size_t cap);

/* 1 when s[0..len) is valid UTF-8 (no overlong forms, surrogates or code
 * points above U+10FFFF) and holds no NUL byte, else 0. */
int cr_wire_utf8_ok(const char *s, size_t len);

/* Replaces, in place, every byte of s that is not part of a valid UTF-8
 * sequence with '?', so that text made from outside input (a parser's
 * message quoting it, a truncated buffer) is never sent back raw. */
void cr_wire_utf8_scrub(char *s);

/* Sends an Error envelope {code, message, batch_id} (best effort); the
 * message is scrubbed (cr_wire_utf8_scrub) on the way. */
void cr_wire_send_error(void *sock, const cr_peer_t *peer, const char *code, const char *msg,
                        const char *batch_id);

/* ---- framing for pipes (runner <-> worker) ----
 * A frame is a 4-byte little-endian length followed by that many bytes. */

/* Writes one frame to fd, retrying short writes. Returns 0 or -errno. */
int cr_wire_frame_write(int fd, const void *data, size_t len);

/* Runner <-> worker (docs/protocol.md): the worker's stdin to the runner is
 * a random token of this many bytes, then the request frame; the runner's
 * report is the same token, then the record frame. A report without the
 * token was not written by the runner's own code: candidate code, which
 * shares the runner's process and descriptors, never sees the token unless
 * it finds it in the runner's memory. */
#define CR_RUNNER_TOKEN_LEN 16
/* 16 MiB: the largest RunnerRequest a runner reads (a task.json and its
 * paths are at most a few MiB, CR_TASK_MAX_FILE); the worker refuses to
 * send a larger one. */
#define CR_RUNNER_MAX_REQUEST (16u << 20)

/* Finds the first complete frame in buf. Returns 0 with *payload and *plen set,
 * CR_E_DECODE when buf holds no complete frame, CR_E_TOO_BIG when the length
 * field exceeds max. */
int cr_wire_frame_parse(const void *buf, size_t len, size_t max, const uint8_t **payload,
                        size_t *plen);

/* ---- task bundles ---- */

/* The bytes a bundle counts for against CR_WIRE_TASK_CACHE_BYTES: its three
 * texts (not its name, which a job may give differently). */
size_t cr_wire_task_bytes(const Crucible__TaskBundle *tb);

/* ---- records ---- */

/* Packs a RewardRecord into a heap buffer (caller frees). 0 or -ENOMEM. */
int cr_wire_record_pack(const Crucible__RewardRecord *rec, uint8_t **buf, size_t *len);

/* The packed rec written around the bytes its worker sent (sent, len: a
 * packed record that decodes to rec in every field but those the
 * coordinator sets: task, group_id, sample_index, turn, attempt, seq,
 * status, message, has_reward, reward, components, worker_id, t_submitted,
 * t_assigned): sent without those fields, then rec's values of them as
 * protobuf-c writes them (left out when zero). It decodes to rec (fields in
 * any order are one message), and the rest of the record is not packed
 * again. Caller frees *buf. 0, -ENOMEM, or CR_E_DECODE when sent does not
 * parse as protobuf fields or the schema lacks one of the fields (then
 * cr_wire_record_pack it). */
int cr_wire_record_amend(const uint8_t *sent, size_t len, const Crucible__RewardRecord *rec,
                         uint8_t **buf, size_t *outlen);

/* Packs Envelope{Result{record}} around a record already packed (rec, len
 * bytes): the bytes cr_wire_pack gives for that envelope, without packing
 * the record a second time. Caller frees *buf. 0, CR_E_TOO_BIG or -ENOMEM. */
int cr_wire_pack_result(const uint8_t *rec, size_t len, uint8_t **buf, size_t *outlen);

/* Batches of records (Result.records) built from records already packed:
 * a batch is its entries, one cr_wire_batch_put each, behind a head that
 * cr_wire_batch_head writes once the batch is complete; head then entries
 * are the bytes cr_wire_pack gives for Envelope{Result{records}}.
 * cr_wire_batch_entry: the bytes cr_wire_batch_put writes for a record of
 * len bytes. cr_wire_batch_put: writes the entry of rec (len bytes) at out
 * (room for cr_wire_batch_entry(len)), returns its bytes. cr_wire_batch_head:
 * writes into head (CR_WIRE_BATCH_HEAD bytes) the head of a batch whose
 * entries take body bytes, returns its bytes (at most CR_WIRE_BATCH_HEAD).
 * Generated code without the fields a batch is made of (an older .proto)
 * makes cr_wire_batch_entry and cr_wire_batch_head return 0: no batch can
 * be made, and records go alone (cr_wire_pack_result). */
size_t cr_wire_batch_entry(size_t len);
size_t cr_wire_batch_put(uint8_t *out, const uint8_t *rec, size_t len);
size_t cr_wire_batch_head(uint8_t *head, size_t body);

/* ---- Assigns built from parts already packed ----
 * A job's spec is stored packed as it came in its Submit, a batch's options
 * and a task bundle packed once: an Assign is written around those bytes
 * (a length-delimited field is its tag, its length and the bytes), so a job
 * is not decoded and packed again each time it is handed out. */

/* One Job of an Assign, by its parts (every pointer borrowed). */
typedef struct {
    const char *batch_id;   /* Job.batch_id; "" or NULL = not written */
    const uint8_t *spec;    /* Job.spec: a packed JobSpec; NULL = not written */
    size_t spec_len;        /* its bytes */
    const uint8_t *task;    /* Job.task: a packed TaskBundle; NULL = not written */
    size_t task_len;        /* its bytes */
    const uint8_t *options; /* Job.options: a packed JobOptions; NULL = not written */
    size_t options_len;     /* its bytes */
    uint32_t attempt;       /* Job.attempt; 0 = not written */
} cr_wire_job_t;

/* The bytes job takes in an Assign (its entry in Assign.jobs: tag, length
 * and the Job), for a caller that splits jobs into messages under a cap. */
size_t cr_wire_job_bytes(const cr_wire_job_t *job);

/* Packs Envelope{Assign} whose jobs are jobs[0..n) and whose other fields
 * (tasks, acks, result_batches) are rest's (rest->n_jobs must be 0): the
 * bytes cr_wire_pack gives for that envelope with each Job's parts decoded
 * into it. Caller frees *buf. 0, CR_E_USAGE (rest has jobs, or a part is
 * not given as its length says), CR_E_TOO_BIG (over CR_WIRE_MAX_MSG) or
 * -ENOMEM; *buf is NULL on failure. */
int cr_wire_pack_assign(const cr_wire_job_t *jobs, size_t n, const Crucible__Assign *rest,
                        uint8_t **buf, size_t *len);

/* 1 when data[0..len) reads as a sequence of protobuf fields (every field
 * number above 0, every wire type known, every length in bounds), else 0:
 * what a stored message must at least be before it is sent on as it is. */
int cr_wire_fields_ok(const void *data, size_t len);

/* Sends len bytes of a packed envelope on a DEALER socket (peer NULL) or to
 * peer on a ROUTER socket, as cr_wire_send does once it has packed one:
 * ZMQ_DONTWAIT; 0 or CR_E_ZMQ. Takes buf (from malloc), sent or not: the
 * message is buf itself, freed by ZeroMQ when it is done with it. */
int cr_wire_send_taken(void *sock, const cr_peer_t *peer, uint8_t *buf, size_t len);

/* Unpacks a record; release with crucible__reward_record__free_unpacked(rec, NULL).
 * Returns 0 or CR_E_DECODE. */
int cr_wire_record_unpack(const void *data, size_t len, Crucible__RewardRecord **out);

/* Deep copy of a record through pack/unpack. Returns NULL on failure. */
Crucible__RewardRecord *cr_wire_record_dup(const Crucible__RewardRecord *rec);

#endif
