/* wire.c — see wire.h. */
#include "wire.h"

#include "error.h"
#include "log.h"
#include "text.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

int cr_wire_pack(Crucible__Envelope *env, uint8_t **buf, size_t *len)
{
    env->version = CR_PROTOCOL_VERSION;
    size_t n = crucible__envelope__get_packed_size(env);
    if (n > CR_WIRE_MAX_MSG)
        return CR_E_TOO_BIG;
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return -ENOMEM;
    crucible__envelope__pack(env, b);
    *buf = b;
    *len = n;
    return 0;
}

/* 1 when m or a message inside it kept an unknown field numbered 0.
 * protobuf-c accepts field 0 when its tag is spelled as a padded varint
 * (0x81 0x00) and keeps it as unknown, but re-packs it as 0x01, which its own
 * decoder then refuses: a Result carrying one would be stored and then fail
 * every read of its batch. Found by tests/fuzz/fuzz_envelope. */
static int s_has_field_zero(const ProtobufCMessage *m)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++)
        if (m->unknown_fields[i].tag == 0)
            return 1;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *base = (const char *)m;
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *a = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t k = 0; k < n; k++)
                if (a[k] && s_has_field_zero(a[k]))
                    return 1;
            continue;
        }
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(base + f->quantifier_offset) != f->id)
            continue; /* another member of the oneof is set */
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)(base + f->offset);
        if (sub && s_has_field_zero(sub))
            return 1;
    }
    return 0;
}

/* ---- the decode arena (cr_wire_recv_records) ----
 *
 * A worker's message is decoded into memory of this thread's own, taken in
 * order from chunks and given back all at once when the envelope is freed:
 * a Result of a few records is some forty allocations, each freed again a
 * moment later, and malloc, free and protobuf-c's walk to free them were a
 * fifth of the coordinator loop's time (bench/RESULTS.md, issue 20 session
 * 8). One envelope at a time lives in it (s_arena.env); a second decode
 * while one is live goes to the heap. */
#define S_ARENA_CHUNK ((size_t)64 << 10) /* a Result of 64 small records fits */
#define S_ARENA_ALIGN 16                  /* malloc's, for any member */

typedef struct s_chunk {
    struct s_chunk *next; /* the older chunk */
    size_t used, cap;     /* bytes of data */
    _Alignas(S_ARENA_ALIGN) unsigned char data[];
} s_chunk_t;

static _Thread_local struct {
    s_chunk_t *head;         /* owned chunks, newest first; the oldest is kept when reset */
    Crucible__Envelope *env; /* the envelope decoded into it, or NULL */
} s_arena;

static void *s_arena_alloc(void *data, size_t size)
{
    (void)data;
    size = (size + S_ARENA_ALIGN - 1) & ~(size_t)(S_ARENA_ALIGN - 1);
    s_chunk_t *c = s_arena.head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > S_ARENA_CHUNK ? size : S_ARENA_CHUNK;
        if (!(c = malloc(sizeof *c + cap)))
            return NULL;
        c->next = s_arena.head;
        c->used = 0;
        c->cap = cap;
        s_arena.head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    return p;
}

static void s_arena_free(void *data, void *p)
{
    (void)data, (void)p; /* all of it at once: s_arena_reset */
}

static ProtobufCAllocator s_arena_allocator = {s_arena_alloc, s_arena_free, NULL};

/* Gives back what the envelope in the arena held: the chunks but the
 * oldest, which is emptied for the next one. */
static void s_arena_reset(void)
{
    while (s_arena.head && s_arena.head->next) {
        s_chunk_t *c = s_arena.head;
        s_arena.head = c->next;
        free(c);
    }
    if (s_arena.head)
        s_arena.head->used = 0;
    s_arena.env = NULL;
}

int cr_wire_in_arena(const void *p)
{
    const unsigned char *b = p;
    for (const s_chunk_t *c = s_arena.env ? s_arena.head : NULL; c; c = c->next)
        if (b >= c->data && b < c->data + c->cap)
            return 1;
    return 0;
}

void *cr_wire_arena_alloc(size_t size)
{
    return s_arena.env ? s_arena_alloc(NULL, size) : NULL;
}

int cr_wire_set_str(char **field, const char *v)
{
    size_t n = strlen(v) + 1;
    char *d = cr_wire_in_arena(field) ? s_arena_alloc(NULL, n) : malloc(n);
    if (!d)
        return -ENOMEM;
    memcpy(d, v, n);
    if (!cr_wire_in_arena(field) && *field && *field != protobuf_c_empty_string)
        free(*field);
    *field = d;
    return 0;
}

void cr_wire_arena_trim(void)
{
    if (s_arena.env)
        return;
    s_arena_reset();
    free(s_arena.head);
    s_arena.head = NULL;
}

static int s_fast_result(const uint8_t *data, size_t len, Crucible__Envelope **out);

/* Where cr_wire_unpack decodes: the arena (cr_wire_recv_records), or the
 * heap (NULL). Set only for that call. */
static _Thread_local int s_use_arena;

static void s_env_free(Crucible__Envelope *env, ProtobufCAllocator *a)
{
    if (a)
        s_arena_reset();
    else
        crucible__envelope__free_unpacked(env, NULL);
}

int cr_wire_unpack(const void *data, size_t len, size_t max, Crucible__Envelope **out)
{
    *out = NULL;
    if (len > max)
        return CR_E_TOO_BIG;
    ProtobufCAllocator *a = s_use_arena && !s_arena.env ? &s_arena_allocator : NULL;
    Crucible__Envelope *env = NULL;
    int fast = a ? s_fast_result(data, len, &env) : 1;
    if (fast != 0) {
        if (a)
            s_arena_reset(); /* what the walk took before it gave up */
        if (fast < 0)
            return fast;
        env = crucible__envelope__unpack(a, len, data);
    }
    if (!env) {
        if (a)
            s_arena_reset();
        return CR_E_DECODE;
    }
    if (a)
        s_arena.env = env;
    if (fast != 0 && s_has_field_zero(&env->base)) { /* the walk checked its own */
        s_env_free(env, a);
        return CR_E_DECODE;
    }
    if (env->body_case == CRUCIBLE__ENVELOPE__BODY__NOT_SET) {
        s_env_free(env, a);
        return CR_E_DECODE;
    }
    if (env->version == 0 || env->version > CR_PROTOCOL_VERSION) {
        s_env_free(env, a);
        return CR_E_VERSION;
    }
    *out = env;
    return 0;
}

static int s_walked_release(Crucible__Envelope *env);

void cr_wire_free(Crucible__Envelope **env_p)
{
    if (env_p && *env_p) {
        if (*env_p == s_arena.env)
            s_arena_reset();
        else if ((*env_p)->body_case != CRUCIBLE__ENVELOPE__BODY_SUBMIT ||
                 !s_walked_release(*env_p))
            crucible__envelope__free_unpacked(*env_p, NULL);
        *env_p = NULL;
    }
}

const char *cr_wire_body_name(const Crucible__Envelope *env)
{
    switch (env->body_case) {
    case CRUCIBLE__ENVELOPE__BODY_READY: return "ready";
    case CRUCIBLE__ENVELOPE__BODY_HEARTBEAT: return "heartbeat";
    case CRUCIBLE__ENVELOPE__BODY_ASSIGN: return "assign";
    case CRUCIBLE__ENVELOPE__BODY_RESULT: return "result";
    case CRUCIBLE__ENVELOPE__BODY_ACK: return "ack";
    case CRUCIBLE__ENVELOPE__BODY_DISCONNECT: return "disconnect";
    case CRUCIBLE__ENVELOPE__BODY_SUBMIT: return "submit";
    case CRUCIBLE__ENVELOPE__BODY_SUBMIT_ACK: return "submit_ack";
    case CRUCIBLE__ENVELOPE__BODY_SUBSCRIBE: return "subscribe";
    case CRUCIBLE__ENVELOPE__BODY_GROUP_DONE: return "group_done";
    case CRUCIBLE__ENVELOPE__BODY_BATCH_DONE: return "batch_done";
    case CRUCIBLE__ENVELOPE__BODY_STATUS_REQUEST: return "status_request";
    case CRUCIBLE__ENVELOPE__BODY_STATUS_REPLY: return "status_reply";
    case CRUCIBLE__ENVELOPE__BODY_CANCEL: return "cancel";
    case CRUCIBLE__ENVELOPE__BODY_CANCEL_ACK: return "cancel_ack";
    case CRUCIBLE__ENVELOPE__BODY_ERROR: return "error";
    default: return "unknown";
    }
}

int cr_wire_socket_caps(void *sock, size_t max_msg)
{
    int64_t maxsz = (int64_t)CR_WIRE_HARD_CAP(max_msg);
    int linger = 0;
    int hwm = 100000; /* messages; a ROUTER drops beyond it, so keep it far above credit */
    if (zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxsz, sizeof maxsz) != 0 ||
        zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0 ||
        zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0)
        return CR_E_ZMQ;
    return 0;
}

static void s_free_sent(void *data, void *hint)
{
    (void)hint;
    free(data);
}

int cr_wire_send_taken(void *sock, const cr_peer_t *peer, uint8_t *buf, size_t len)
{
    if (peer && zmq_send(sock, peer->bytes, peer->len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        free(buf);
        return CR_E_ZMQ;
    }
    /* the message is buf itself, freed by ZeroMQ once sent (from its I/O
     * thread: free is thread-safe), not a copy of it */
    zmq_msg_t m;
    if (zmq_msg_init_data(&m, buf, len, s_free_sent, NULL) != 0) {
        free(buf);
        return CR_E_ZMQ;
    }
    if (zmq_msg_send(&m, sock, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&m); /* frees buf */
        return CR_E_ZMQ;
    }
    return 0;
}

int cr_wire_send(void *sock, const cr_peer_t *peer, Crucible__Envelope *env)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = cr_wire_pack(env, &buf, &len);
    return rc == 0 ? cr_wire_send_taken(sock, peer, buf, len) : rc;
}

/* Drops whatever frames remain of a multipart message. */
static void s_drain_more(void *sock)
{
    int more = 0;
    size_t sz = sizeof more;
    while (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz) == 0 && more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        zmq_msg_recv(&m, sock, ZMQ_DONTWAIT);
        zmq_msg_close(&m);
    }
}

int cr_wire_utf8_ok(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < len;) {
        /* eight bytes at a time while they are ASCII without NUL: source
         * text mostly is, and a Submit can carry 64 MiB of it */
        while (len - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if ((w & 0x8080808080808080ull) ||
                ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull))
                break;
            i += 8;
        }
        if (i >= len)
            break;
        unsigned c = s[i];
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned cp, min;
        if (c >= 0xc2 && c <= 0xdf)
            n = 1, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
            n = 2, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
            n = 3, cp = c & 0x07, min = 0x10000;
        else
            return 0;
        if (len - i <= n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += n + 1;
    }
    return 1;
}

void cr_wire_utf8_scrub(char *str)
{
    size_t len = strlen(str);
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)str[i];
        size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                                : c >= 0xf0 && c <= 0xf4                 ? 4
                                                                         : 0;
        if (n && i + n <= len && cr_wire_utf8_ok(str + i, n)) {
            i += n;
            continue;
        }
        str[i++] = '?';
    }
}

/* Reads a base-128 varint at *p (< end); 0, or -1 when it runs off the end. */
static int s_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* 32 levels: the schema nests 4 deep; anything deeper is not ours to judge. */
#define S_TEXT_DEPTH 32

/* Walks the encoding of one message of descriptor d and checks the bytes of
 * every string field. Returns 1 and the field's path in path (from off) at
 * the first bad one, else 0: an encoding that does not parse is left for
 * the decoder to refuse. With cap 0 no path is written: the caller walks
 * again for it only when a field is bad, so a good message costs no
 * formatting. */
static int s_text_walk(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                       int depth, char *path, size_t cap, size_t off)
{
    while (p < end) {
        uint64_t tag, v;
        if (s_varint(&p, end, &tag) != 0)
            return 0;
        switch (tag & 7) {
        case 0:
            if (s_varint(&p, end, &v) != 0)
                return 0;
            continue;
        case 1:
            if (end - p < 8)
                return 0;
            p += 8;
            continue;
        case 5:
            if (end - p < 4)
                return 0;
            p += 4;
            continue;
        case 2:
            break;
        default:
            return 0;
        }
        if (s_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p))
            return 0;
        const uint8_t *body = p;
        p += v;
        const ProtobufCFieldDescriptor *f =
            tag >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3))
                                   : NULL;
        if (!f)
            continue;
        size_t here = off;
        if (cap && (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE)) {
            int w = snprintf(path + off, cap > off ? cap - off : 0, "%s%s", off ? "." : "",
                             f->name);
            here = w > 0 && off + (size_t)w < cap ? off + (size_t)w : off;
        }
        if (f->type == PROTOBUF_C_TYPE_STRING && !cr_wire_utf8_ok((const char *)body, v))
            return 1;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE && depth < S_TEXT_DEPTH &&
            s_text_walk(body, body + v, f->descriptor, depth + 1, path, cap, here))
            return 1;
        if (off < cap)
            path[off] = '\0';
    }
    return 0;
}

int cr_wire_recv(void *sock, cr_peer_t *peer, Crucible__Envelope **out)
{
    return cr_wire_recv_max(sock, peer, CR_WIRE_MAX_MSG, out);
}

int cr_wire_recv_max(void *sock, cr_peer_t *peer, size_t max, Crucible__Envelope **out)
{
    return cr_wire_recv_text(sock, peer, max, out, NULL, 0);
}

/* Submits of more jobs than this are refused undecoded (cr_wire_recv_text
 * calls from cr_wire_recv_submit); 0 = no cap. Set only for that call. */
static _Thread_local size_t s_max_jobs;

/* Where cr_wire_recv_text puts a Submit's specs (cr_wire_recv_submit_specs);
 * NULL = decode it whole. Set only for that call. */
static _Thread_local cr_wire_specs_t **s_specs_out;

/* Where cr_wire_recv_text puts a Result's records as they came
 * (cr_wire_recv_records); NULL = none wanted. Set only for that call. */
static _Thread_local cr_wire_specs_t **s_records_out;

int cr_wire_recv_submit(void *sock, cr_peer_t *peer, size_t max, size_t max_jobs,
                        Crucible__Envelope **out, char *field, size_t cap)
{
    return cr_wire_recv_submit_specs(sock, peer, max, max_jobs, out, field, cap, NULL);
}

int cr_wire_recv_submit_specs(void *sock, cr_peer_t *peer, size_t max, size_t max_jobs,
                              Crucible__Envelope **out, char *field, size_t cap,
                              cr_wire_specs_t **specs)
{
    if (specs)
        *specs = NULL;
    s_max_jobs = max_jobs;
    s_specs_out = specs;
    int rc = cr_wire_recv_text(sock, peer, max, out, field, cap);
    s_max_jobs = 0;
    s_specs_out = NULL;
    return rc;
}

int cr_wire_recv_records(void *sock, cr_peer_t *peer, size_t max, Crucible__Envelope **out,
                         cr_wire_specs_t **records)
{
    *records = NULL;
    s_records_out = records;
    s_use_arena = 1;
    int rc = cr_wire_recv_text(sock, peer, max, out, NULL, 0);
    s_use_arena = 0;
    s_records_out = NULL;
    return rc;
}

void cr_wire_specs_free(cr_wire_specs_t **specs_p)
{
    if (!specs_p || !*specs_p)
        return;
    cr_wire_specs_t *sp = *specs_p;
    if (sp->frame) {
        zmq_msg_close(sp->frame);
        free(sp->frame);
    }
    free(sp->spec);
    free(sp->len);
    free(sp);
    *specs_p = NULL;
}

/* One field of a protobuf encoding at *p: its number, wire type, and for a
 * length-delimited one its payload; *p moves past it. -1 when the bytes do
 * not parse. */
static int s_field(const uint8_t **p, const uint8_t *end, uint32_t *num, int *wt,
                   const uint8_t **val, size_t *vlen)
{
    uint64_t key, v;
    if (s_varint(p, end, &key) != 0 || key >> 3 > UINT32_MAX)
        return -1;
    *num = (uint32_t)(key >> 3);
    *wt = (int)(key & 7);
    *val = NULL;
    *vlen = 0;
    switch (*wt) {
    case 0:
        return s_varint(p, end, &v);
    case 1:
    case 5: {
        size_t n = *wt == 1 ? 8 : 4;
        if ((size_t)(end - *p) < n)
            return -1;
        *p += n;
        return 0;
    }
    case 2:
        if (s_varint(p, end, &v) != 0 || v > (uint64_t)(end - *p))
            return -1;
        *val = *p;
        *vlen = (size_t)v;
        *p += v;
        return 0;
    default:
        return -1;
    }
}

/* ---- a worker's Result decoded by a walk of its fields ----
 *
 * protobuf-c's general unpack counts and scans every field through the
 * descriptor before it parses one, and a worker's record was two such
 * unpacks (the record and its CompileResult) besides its share of the
 * envelope's and the Result's (bench/RESULTS.md, issue 20 session 9). A
 * worker's Result has one plain shape, which this walk decodes into the
 * arena: an envelope of version and result, a Result of record or
 * records, each record's scalars and strings as protobuf-c decodes them
 * (the last of a field given twice wins, as the protobuf spec says), its
 * CompileResult (in every record) by the same walk, its other sub-messages
 * by protobuf-c's unpack of that message. Anything else (an
 * unknown or zero field number, a wire type that is not the field's, a
 * sub-message given twice, which the decoder merges, a record given both
 * ways) is left to the general unpack, which decodes it or refuses it:
 * the walk decides nothing about a message it does not take. */

/* Copies a string field's bytes into the arena, NUL-terminated, as
 * protobuf-c does (a NUL inside ends the C string there, for both). */
static int s_fast_str(char **field, const uint8_t *val, size_t vlen)
{
    char *d = s_arena_alloc(NULL, vlen + 1);
    if (!d)
        return -ENOMEM;
    memcpy(d, val, vlen);
    d[vlen] = '\0';
    *field = d;
    return 0;
}

/* One field as the walk reads it (s_field_value). */
typedef struct {
    uint32_t num;       /* field number */
    int wt;             /* wire type */
    const uint8_t *val; /* a length-delimited payload (into the message), or NULL */
    size_t vlen;        /* its bytes */
    uint64_t v;         /* a varint's value, else 0 */
    double d;           /* a fixed64's, else 0 */
} s_fv_t;

/* s_field, with the scalar's value. -1 when the bytes do not parse. */
static int s_field_value(const uint8_t **p, const uint8_t *end, s_fv_t *f)
{
    const uint8_t *at = *p;
    uint64_t key;
    f->v = 0;
    f->d = 0;
    if (s_field(p, end, &f->num, &f->wt, &f->val, &f->vlen) != 0)
        return -1;
    if (f->wt == 0 && (s_varint(&at, end, &key) != 0 || s_varint(&at, end, &f->v) != 0))
        return -1;
    if (f->wt == 1)
        memcpy(&f->d, *p - 8, 8); /* little-endian, as protobuf's fixed64 */
    return 0;
}

/* A record's CompileResult (in every record a worker sends) by the same
 * walk: 0, 1 (not of the plain shape) or -ENOMEM. */
static int s_fast_compile(const uint8_t *p, size_t len, Crucible__CompileResult **out)
{
    Crucible__CompileResult *m = s_arena_alloc(NULL, sizeof *m);
    if (!m)
        return -ENOMEM;
    crucible__compile_result__init(m);
    const uint8_t *end = p + len;
    while (p < end) {
        s_fv_t f;
        if (s_field_value(&p, end, &f) != 0)
            return 1;
        if ((f.num == 1 || f.num == 4) && f.wt == 0)
            *(f.num == 1 ? &m->ok : &m->cache_hit) = f.v != 0;
        else if (f.num == 3 && f.wt == 1)
            m->seconds = f.d;
        else if (f.num == 2 && f.wt == 2) {
            if (s_fast_str(&m->log, f.val, f.vlen) != 0)
                return -ENOMEM;
        } else
            return 1;
    }
    *out = m;
    return 0;
}

/* A sub-message field: decoded by protobuf-c into the arena, once. */
#define S_FAST_SUB(member, fn)                                                              \
    do {                                                                                    \
        if (f.wt != 2 || r->member)                                                         \
            return 1;                                                                       \
        if (!(r->member = fn(&s_arena_allocator, f.vlen, f.val)) ||                         \
            s_has_field_zero(&r->member->base))                                             \
            return 1;                                                                       \
    } while (0)

/* One RewardRecord's bytes into *out (the arena). 0, 1 (not of the plain
 * shape: the caller unpacks the whole message), or -ENOMEM. */
static int s_fast_record(const uint8_t *p, size_t len, Crucible__RewardRecord **out)
{
    Crucible__RewardRecord *r = s_arena_alloc(NULL, sizeof *r);
    if (!r)
        return -ENOMEM;
    crucible__reward_record__init(r);
    size_t cap_flags = 0;
    const uint8_t *end = p + len;
    while (p < end) {
        s_fv_t f;
        if (s_field_value(&p, end, &f) != 0)
            return 1;
        char **str = NULL;
        switch (f.num) {
        case 1: str = &r->batch_id; break;
        case 2: str = &r->job_id; break;
        case 3: str = &r->task; break;
        case 4: str = &r->group_id; break;
        case 10: str = &r->message; break;
        case 18: str = &r->worker_id; break;
        case 19: str = &r->host; break;
        case 20: str = &r->device; break;
        case 21: str = &r->backend; break;
        case 14: {
            if (f.wt != 2)
                return 1;
            if (r->n_hack_flags == cap_flags) {
                cap_flags = cap_flags ? 2 * cap_flags : 4;
                char **a = s_arena_alloc(NULL, cap_flags * sizeof *a);
                if (!a)
                    return -ENOMEM;
                if (r->n_hack_flags)
                    memcpy(a, r->hack_flags, r->n_hack_flags * sizeof *a);
                r->hack_flags = a;
            }
            if (s_fast_str(&r->hack_flags[r->n_hack_flags], f.val, f.vlen) != 0)
                return -ENOMEM;
            r->n_hack_flags++;
            continue;
        }
        case 5: case 6: case 7: case 8: case 9: case 15: case 22: case 23: case 24: case 25:
        case 26: case 28:
            if (f.wt != 0)
                return 1;
            switch (f.num) {
            case 5: r->sample_index = (uint32_t)f.v; break;
            case 6: r->turn = (uint32_t)f.v; break;
            case 7: r->attempt = (uint32_t)f.v; break;
            case 8: r->seq = f.v; break;
            case 9: r->status = (Crucible__Status)(int32_t)(uint32_t)f.v; break;
            case 15: r->has_reward = f.v != 0; break;
            case 22: r->t_submitted = (int64_t)f.v; break;
            case 23: r->t_assigned = (int64_t)f.v; break;
            case 24: r->t_compiled = (int64_t)f.v; break;
            case 25: r->t_verified = (int64_t)f.v; break;
            case 26: r->t_finished = (int64_t)f.v; break;
            default: r->sandboxed_net = f.v != 0; break;
            }
            continue;
        case 16: case 27:
            if (f.wt != 1)
                return 1;
            *(f.num == 16 ? &r->reward : &r->advantage) = f.d;
            continue;
        case 11: {
            if (f.wt != 2 || r->compile)
                return 1;
            int rc = s_fast_compile(f.val, f.vlen, &r->compile);
            if (rc != 0)
                return rc;
            continue;
        }
        case 12: S_FAST_SUB(verify, crucible__verify_result__unpack); continue;
        case 13: S_FAST_SUB(profile, crucible__profile_result__unpack); continue;
        case 17: S_FAST_SUB(components, crucible__reward_components__unpack); continue;
        case 29: S_FAST_SUB(kernelbench, crucible__kernel_bench_result__unpack); continue;
        default:
            return 1; /* unknown, or 0: the general unpack keeps or refuses it */
        }
        if (f.wt != 2)
            return 1;
        if (s_fast_str(str, f.val, f.vlen) != 0)
            return -ENOMEM;
    }
    *out = r;
    return 0;
}

/* A worker's Result envelope in data (len bytes) into *out, in the arena
 * (cr_wire_unpack's caller checks version and body). 0, 1 (not of the
 * plain shape, or not a Result: unpack it whole; the arena is as it was
 * found, empty), or -ENOMEM. */
static int s_fast_result(const uint8_t *data, size_t len, Crucible__Envelope **out)
{
    const uint32_t f_version = 1, f_result = CRUCIBLE__ENVELOPE__BODY_RESULT, f_record = 1,
                   f_records = 40;
    const uint8_t *p = data, *end = data + len, *res = NULL, *val;
    size_t reslen = 0, vlen, n = 0;
    uint32_t num, version = 0;
    int wt;
    while (p < end) {
        s_fv_t f;
        if (s_field_value(&p, end, &f) != 0)
            return 1;
        num = f.num, wt = f.wt, val = f.val, vlen = f.vlen;
        if (num == f_version && wt == 0) {
            version = (uint32_t)f.v;
        } else if (num == f_result && wt == 2 && !res) {
            res = val;
            reslen = vlen;
        } else {
            return 1;
        }
    }
    if (!res)
        return 1;
    /* the records: one `record`, or `records` only */
    int single = 0;
    for (p = res, end = res + reslen; p < end;) {
        if (s_field(&p, end, &num, &wt, &val, &vlen) != 0 || wt != 2 ||
            (num != f_record && num != f_records))
            return 1;
        single += num == f_record;
        n++;
        if (single && n > 1)
            return 1;
    }
    Crucible__Envelope *env = s_arena_alloc(NULL, sizeof *env);
    Crucible__Result *r = s_arena_alloc(NULL, sizeof *r);
    Crucible__RewardRecord **recs = n && !single ? s_arena_alloc(NULL, n * sizeof *recs) : NULL;
    if (!env || !r || (n && !single && !recs))
        return -ENOMEM;
    crucible__envelope__init(env);
    crucible__result__init(r);
    env->version = version;
    env->body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env->result = r;
    size_t k = 0;
    for (p = res, end = res + reslen; p < end;) {
        s_field(&p, end, &num, &wt, &val, &vlen); /* parsed above */
        int rc = s_fast_record(val, vlen, single ? &r->record : &recs[k++]);
        if (rc != 0)
            return rc;
    }
    r->n_records = single ? 0 : n;
    r->records = recs;
    *out = env;
    return 0;
}

int cr__wire_result_walk(const void *data, size_t len, Crucible__Envelope **out)
{
    *out = NULL;
    if (s_arena.env)
        return -EBUSY;
    int rc = s_fast_result(data, len, out);
    if (rc != 0) {
        s_arena_reset();
        *out = NULL;
        return rc;
    }
    s_arena.env = *out;
    return 0;
}

static size_t s_put_varint(uint8_t *p, uint64_t v);

/* The envelope in data with every Submit.jobs[i].source left out, written
 * to out (at least len bytes), and each job's packed JobSpec in spec/slen
 * (pointers into data, n of them, counted beforehand). Returns the bytes
 * written, or 0 when the message is not of the plain shape this handles
 * (one Submit body; each job once, its source once and length-delimited):
 * the caller then decodes it whole. */
static size_t s_strip_sources(const uint8_t *data, size_t len, uint8_t *out, size_t n,
                              const uint8_t **spec, size_t *slen)
{
    const uint32_t f_submit = CRUCIBLE__ENVELOPE__BODY_SUBMIT, f_jobs = 3, f_source = 3;
    const uint8_t *p = data, *end = data + len, *sub = NULL;
    size_t sublen = 0, o = 0, k = 0;
    uint32_t num;
    int wt;
    const uint8_t *val;
    size_t vlen;
    /* the envelope's other fields as they are; the Submit's at the end */
    while (p < end) {
        const uint8_t *at = p;
        if (s_field(&p, end, &num, &wt, &val, &vlen) != 0)
            return 0;
        if (num == f_submit) {
            if (wt != 2 || sub)
                return 0;
            sub = val;
            sublen = vlen;
            continue;
        }
        memcpy(out + o, at, (size_t)(p - at));
        o += (size_t)(p - at);
    }
    if (!sub)
        return 0;
    /* the stripped Submit is no longer than the original: built after a
     * gap for its tag and length, then moved into place */
    uint8_t *body = out + o + 20;
    size_t b = 0;
    for (p = sub, end = sub + sublen; p < end;) {
        const uint8_t *at = p;
        if (s_field(&p, end, &num, &wt, &val, &vlen) != 0)
            return 0;
        if (num != f_jobs) {
            memcpy(body + b, at, (size_t)(p - at));
            b += (size_t)(p - at);
            continue;
        }
        if (wt != 2 || k >= n)
            return 0;
        spec[k] = val;
        slen[k++] = vlen;
        /* the job without its source, after room for its tag and length */
        uint8_t *job = body + b + 12;
        size_t jb = 0;
        int sources = 0;
        for (const uint8_t *q = val, *qend = val + vlen; q < qend;) {
            const uint8_t *fat = q;
            const uint8_t *fv;
            size_t fl;
            if (s_field(&q, qend, &num, &wt, &fv, &fl) != 0)
                return 0;
            if (num == f_source) {
                if (wt != 2 || sources++)
                    return 0;
                continue;
            }
            memcpy(job + jb, fat, (size_t)(q - fat));
            jb += (size_t)(q - fat);
        }
        uint8_t hdr[12];
        size_t h = s_put_varint(hdr, (uint64_t)f_jobs << 3 | 2);
        h += s_put_varint(hdr + h, jb);
        memmove(body + b + h, job, jb);
        memcpy(body + b, hdr, h);
        b += h + jb;
    }
    if (k != n)
        return 0;
    uint8_t hdr[20];
    size_t h = s_put_varint(hdr, (uint64_t)f_submit << 3 | 2);
    h += s_put_varint(hdr + h, b);
    memmove(out + o + h, body, b);
    memcpy(out + o, hdr, h);
    return o + h + b;
}

/* ---- a client's Submit decoded by a walk of its fields ----
 *
 * protobuf-c's general unpack of a Submit is a descriptor scan and some
 * four mallocs a JobSpec, and its free_unpacked a walk that frees them one
 * by one (bench/RESULTS.md, issue 20 session 10). A Submit has one plain
 * shape, which this walk decodes into one block of the heap: the envelope,
 * the Submit, its JobSpecs and their strings; the tasks and the options,
 * few a Submit, are unpacked by protobuf-c on the heap as before. A
 * JobSpec's source is left out (empty), as s_strip_sources leaves it, and
 * the job's bytes given in spec/slen. Anything else (an unknown field or
 * one numbered 0, a wire type that is not the field's, a sub-message or a
 * source given twice) is left to s_strip_sources and protobuf-c, which
 * decode or refuse it: the walk decides nothing about a message it does not
 * take. cr_wire_free knows a walked Submit by its envelope's address
 * (s_walked, a list guarded by s_walked_mu: the intake keeps a few). */

typedef struct s_walked {
    struct s_walked *next;     /* s_walked's list */
    Crucible__Envelope env;    /* what the caller is given */
    Crucible__Submit sub;      /* env.submit */
} s_walked_t;

static s_walked_t *s_walked;
static pthread_mutex_t s_walked_mu = PTHREAD_MUTEX_INITIALIZER;

/* Frees what a walked Submit holds of protobuf-c's, then its block. */
static void s_walked_free(s_walked_t *w)
{
    for (size_t i = 0; i < w->sub.n_tasks; i++)
        if (w->sub.tasks[i])
            crucible__task_bundle__free_unpacked(w->sub.tasks[i], NULL);
    if (w->sub.options)
        crucible__job_options__free_unpacked(w->sub.options, NULL);
    free(w);
}

/* 1 and *env_p freed when it is a walked Submit's envelope. */
static int s_walked_release(Crucible__Envelope *env)
{
    s_walked_t *w = NULL;
    pthread_mutex_lock(&s_walked_mu);
    for (s_walked_t **pp = &s_walked; *pp; pp = &(*pp)->next)
        if (&(*pp)->env == env) {
            w = *pp;
            *pp = w->next;
            break;
        }
    pthread_mutex_unlock(&s_walked_mu);
    if (w)
        s_walked_free(w);
    return w != NULL;
}

/* A string field's copy into the block at *at, NUL-terminated, as
 * protobuf-c makes it (a NUL inside ends the C string there, for both). */
static char *s_walk_str(char **at, const uint8_t *val, size_t vlen)
{
    char *d = *at;
    memcpy(d, val, vlen);
    d[vlen] = '\0';
    *at += vlen + 1;
    return d;
}

/* One JobSpec's fields: counted (js NULL: its strings' bytes added to
 * *bytes), or decoded into js with its strings at *at. 0, or 1 when it is
 * not of the plain shape. */
static int s_walk_job(const uint8_t *p, size_t len, Crucible__JobSpec *js, size_t *bytes,
                      char **at)
{
    const uint8_t *end = p + len;
    int sources = 0;
    while (p < end) {
        s_fv_t f;
        if (s_field_value(&p, end, &f) != 0)
            return 1;
        char **str = NULL;
        switch (f.num) {
        case 1: str = js ? &js->job_id : NULL; break;
        case 2: str = js ? &js->task : NULL; break;
        case 4: str = js ? &js->group_id : NULL; break;
        case 3: /* the source: kept in the job's bytes, left out here */
            if (f.wt != 2 || sources++)
                return 1;
            continue;
        case 5: case 6:
            if (f.wt != 0)
                return 1;
            if (js)
                *(f.num == 5 ? &js->sample_index : &js->turn) = (uint32_t)f.v;
            continue;
        default:
            return 1; /* unknown, or 0: the general unpack keeps or refuses it */
        }
        if (f.wt != 2)
            return 1;
        if (js)
            *str = s_walk_str(at, f.val, f.vlen);
        else
            *bytes += f.vlen + 1;
    }
    return 0;
}

/* The Submit envelope in data (len bytes, n jobs counted beforehand) into
 * *out, one block of the heap, and each job's bytes in spec/slen (pointers
 * into data). 0, 1 (not of the plain shape, or not a Submit of n jobs:
 * nothing is left allocated), or -ENOMEM. Versions are checked by the
 * caller. */
static int s_walk_submit(const uint8_t *data, size_t len, size_t n, Crucible__Envelope **out,
                         const uint8_t **spec, size_t *slen)
{
    const uint32_t f_version = 1, f_submit = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
    const uint8_t *p = data, *end = data + len, *sub = NULL, *opts = NULL;
    size_t sublen = 0, ntasks = 0, k = 0, bytes = 0;
    uint32_t version = 0;
    *out = NULL;
    while (p < end) {
        s_fv_t f;
        if (s_field_value(&p, end, &f) != 0)
            return 1;
        if (f.num == f_version && f.wt == 0)
            version = (uint32_t)f.v;
        else if (f.num == f_submit && f.wt == 2 && !sub)
            sub = f.val, sublen = f.vlen;
        else
            return 1;
    }
    if (!sub)
        return 1;
    /* first the counts: tasks, jobs and the strings' bytes */
    for (p = sub, end = sub + sublen; p < end;) {
        s_fv_t f;
        if (s_field_value(&p, end, &f) != 0)
            return 1;
        switch (f.num) {
        case 1: /* batch_id */
            if (f.wt != 2)
                return 1;
            bytes += f.vlen + 1;
            break;
        case 2: /* tasks */
            if (f.wt != 2)
                return 1;
            ntasks++;
            break;
        case 3: /* jobs */
            if (f.wt != 2 || k >= n || s_walk_job(f.val, f.vlen, NULL, &bytes, NULL) != 0)
                return 1;
            spec[k] = f.val;
            slen[k++] = f.vlen;
            break;
        case 4: /* options: given twice, protobuf-c merges them */
            if (f.wt != 2 || opts)
                return 1;
            opts = f.val;
            break;
        case 5: case 40: /* subscribe, record_batches */
            if (f.wt != 0)
                return 1;
            break;
        default:
            return 1;
        }
    }
    if (k != n)
        return 1;
    size_t size = sizeof(s_walked_t) + n * (sizeof(Crucible__JobSpec *) + sizeof(Crucible__JobSpec)) +
                  ntasks * sizeof(Crucible__TaskBundle *) + bytes;
    s_walked_t *w = malloc(size);
    if (!w)
        return -ENOMEM;
    crucible__envelope__init(&w->env);
    crucible__submit__init(&w->sub);
    Crucible__JobSpec **jobs = (Crucible__JobSpec **)(w + 1);
    Crucible__TaskBundle **tasks = (Crucible__TaskBundle **)(jobs + n);
    Crucible__JobSpec *js = (Crucible__JobSpec *)(tasks + ntasks);
    char *at = (char *)(js + n);
    w->env.version = version;
    w->env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
    w->env.submit = &w->sub;
    w->sub.jobs = n ? jobs : NULL;
    w->sub.tasks = ntasks ? tasks : NULL;
    int rc = 0;
    k = 0;
    for (p = sub, end = sub + sublen; p < end && rc == 0;) {
        s_fv_t f;
        s_field_value(&p, end, &f); /* parsed above */
        switch (f.num) {
        case 1: w->sub.batch_id = s_walk_str(&at, f.val, f.vlen); break;
        case 2:
            tasks[w->sub.n_tasks] = crucible__task_bundle__unpack(NULL, f.vlen, f.val);
            if (!tasks[w->sub.n_tasks] || s_has_field_zero(&tasks[w->sub.n_tasks]->base))
                rc = 1; /* the general unpack refuses it too */
            w->sub.n_tasks += tasks[w->sub.n_tasks] != NULL;
            break;
        case 3:
            crucible__job_spec__init(&js[k]);
            jobs[k] = &js[k];
            s_walk_job(f.val, f.vlen, &js[k++], NULL, &at);
            break;
        case 4:
            w->sub.options = crucible__job_options__unpack(NULL, f.vlen, f.val);
            if (!w->sub.options || s_has_field_zero(&w->sub.options->base))
                rc = 1;
            break;
        case 5: w->sub.subscribe = f.v != 0; break;
        default: w->sub.record_batches = f.v != 0; break;
        }
    }
    w->sub.n_jobs = k;
    if (rc != 0) {
        s_walked_free(w);
        return rc;
    }
    pthread_mutex_lock(&s_walked_mu);
    w->next = s_walked;
    s_walked = w;
    pthread_mutex_unlock(&s_walked_mu);
    *out = &w->env;
    return 0;
}

int cr__wire_submit_walk(const void *data, size_t len, size_t n, Crucible__Envelope **out,
                         const uint8_t **spec, size_t *slen)
{
    return s_walk_submit(data, len, n, out, spec, slen);
}

/* Moves the frame m into sp->frame, the parts found in it following: a
 * message of up to 33 bytes (ZeroMQ's VSM) lives inside its zmq_msg_t, so
 * a move changes where its bytes are, and pointers taken before it would
 * point into the old zmq_msg_t (a stack variable of cr_wire_recv_text). */
static void s_take_frame(cr_wire_specs_t *sp, zmq_msg_t *m)
{
    const uint8_t *old = zmq_msg_data(m);
    zmq_msg_init(sp->frame);
    zmq_msg_move(sp->frame, m);
    const uint8_t *now = zmq_msg_data(sp->frame);
    for (size_t i = 0; i < sp->n; i++)
        sp->spec[i] = now + (sp->spec[i] - old);
}

/* Decodes the Submit in m with its sources left out and gives its specs
 * (cr_wire_recv_submit_specs); takes m when it returns 0 with *specs set.
 * 1: not of the shape s_strip_sources handles, m untouched. */
static int s_recv_specs(zmq_msg_t *m, size_t max, size_t n, Crucible__Envelope **out,
                        cr_wire_specs_t **specs)
{
    const uint8_t *data = zmq_msg_data(m);
    size_t len = zmq_msg_size(m);
    cr_wire_specs_t *sp = calloc(1, sizeof *sp);
    uint8_t *buf = NULL;
    if (sp) {
        sp->spec = calloc(n ? n : 1, sizeof *sp->spec);
        sp->len = calloc(n ? n : 1, sizeof *sp->len);
        sp->frame = malloc(sizeof(zmq_msg_t));
    }
    int rc = 1;
    if (sp && sp->spec && sp->len && sp->frame) {
        /* the walk first; what it leaves, sources stripped and unpacked */
        rc = len <= max ? s_walk_submit(data, len, n, out, sp->spec, sp->len) : 1;
        if (rc == 0 && ((*out)->version == 0 || (*out)->version > CR_PROTOCOL_VERSION)) {
            cr_wire_free(out); /* the general unpack answers it */
            rc = 1;
        }
        size_t blen = 0;
        if (rc != 0 && (buf = malloc(len + 64)) &&
            (blen = s_strip_sources(data, len, buf, n, sp->spec, sp->len))) {
            rc = cr_wire_unpack(buf, blen, max, out);
            if (rc == 0 && ((*out)->body_case != CRUCIBLE__ENVELOPE__BODY_SUBMIT ||
                            !(*out)->submit || (*out)->submit->n_jobs != n)) {
                cr_wire_free(out);
                rc = 1;
            }
        }
        free(buf);
    }
    if (rc == 0) {
        sp->n = n;
        s_take_frame(sp, m);
        *specs = sp;
        return 0;
    }
    cr_wire_free(out);
    if (sp) {
        free(sp->spec);
        free(sp->len);
        free(sp->frame);
    }
    free(sp);
    return 1;
}

/* The fields cr_wire_pack_result writes, looked up by name once (a lookup
 * is a few strcmp, and it runs for every record streamed). */
static const ProtobufCFieldDescriptor *s_fv, *s_fr, *s_fc, *s_fs;
static pthread_once_t s_result_fields_once = PTHREAD_ONCE_INIT;

static void s_result_fields(void)
{
    s_fv = protobuf_c_message_descriptor_get_field_by_name(&crucible__envelope__descriptor,
                                                           "version");
    s_fr = protobuf_c_message_descriptor_get_field_by_name(&crucible__envelope__descriptor,
                                                           "result");
    s_fc = protobuf_c_message_descriptor_get_field_by_name(&crucible__result__descriptor,
                                                           "record");
    s_fs = protobuf_c_message_descriptor_get_field_by_name(&crucible__result__descriptor,
                                                           "records");
}

/* The records of the Result in data (len bytes) as they came: n of them, in
 * order, into rec/rlen. 0, or -1 when the message is not of the plain shape
 * (one result field; record once, or records only): the decoder merges a
 * field given twice, so no part of the bytes is then one decoded record. */
static int s_result_spans(const uint8_t *data, size_t len, size_t n, const uint8_t **rec,
                          size_t *rlen)
{
    pthread_once(&s_result_fields_once, s_result_fields);
    if (!s_fr || !s_fc || !s_fs)
        return -1;
    const uint8_t *p = data, *end = data + len, *res = NULL, *val;
    size_t reslen = 0, vlen, k = 0, singles = 0;
    uint32_t num;
    int wt;
    while (p < end) {
        if (s_field(&p, end, &num, &wt, &val, &vlen) != 0)
            return -1;
        if (num == s_fr->id) {
            if (wt != 2 || res)
                return -1;
            res = val;
            reslen = vlen;
        }
    }
    for (p = res, end = res ? res + reslen : NULL; p && p < end;) {
        if (s_field(&p, end, &num, &wt, &val, &vlen) != 0)
            return -1;
        if (num != s_fc->id && num != s_fs->id)
            continue;
        singles += num == s_fc->id;
        if (wt != 2 || k >= n || (singles && k > 0))
            return -1;
        rec[k] = val;
        rlen[k++] = vlen;
    }
    return k == n && n > 0 ? 0 : -1;
}

/* Keeps the frame m of the decoded Result env, and where its records lie,
 * in *records (taking m) when it is of the plain shape; else leaves both. */
static void s_keep_records(zmq_msg_t *m, const Crucible__Envelope *env,
                           cr_wire_specs_t **records)
{
    if (env->body_case != CRUCIBLE__ENVELOPE__BODY_RESULT || !env->result)
        return;
    size_t n = env->result->record ? 1 + env->result->n_records : env->result->n_records;
    if (n == 0)
        return;
    cr_wire_specs_t *sp = calloc(1, sizeof *sp);
    if (sp) {
        sp->spec = calloc(n, sizeof *sp->spec);
        sp->len = calloc(n, sizeof *sp->len);
        sp->frame = malloc(sizeof(zmq_msg_t));
    }
    if (!sp || !sp->spec || !sp->len || !sp->frame ||
        s_result_spans(zmq_msg_data(m), zmq_msg_size(m), n, sp->spec, sp->len) != 0) {
        if (sp) {
            free(sp->spec);
            free(sp->len);
            free(sp->frame);
        }
        free(sp);
        return;
    }
    sp->n = n;
    s_take_frame(sp, m);
    *records = sp;
}

int cr_wire_recv_text(void *sock, cr_peer_t *peer, size_t max, Crucible__Envelope **out,
                      char *field, size_t cap)
{
    if (field && cap)
        field[0] = '\0';
    *out = NULL;
    zmq_msg_t m;
    if (peer) {
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) < 0) {
            int e = zmq_errno();
            zmq_msg_close(&m);
            return e == EAGAIN ? -EAGAIN : CR_E_ZMQ;
        }
        size_t n = zmq_msg_size(&m);
        peer->len = n > CR_WIRE_MAX_ID ? CR_WIRE_MAX_ID : n;
        memcpy(peer->bytes, zmq_msg_data(&m), peer->len);
        int more = zmq_msg_more(&m);
        zmq_msg_close(&m);
        if (!more)
            return CR_E_DECODE;
    }
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, sock, peer ? 0 : ZMQ_DONTWAIT) < 0) {
        int e = zmq_errno();
        zmq_msg_close(&m);
        return e == EAGAIN ? -EAGAIN : CR_E_ZMQ;
    }
    if (peer) {
        /* set by the ZAP handler: the authenticated key, not a claim of the
         * peer. Read from the payload frame: the identity frame a ROUTER
         * makes up does not always carry the connection's metadata. */
        const char *user = zmq_msg_gets(&m, "User-Id");
        cr_text_copy(peer->user, sizeof peer->user, user);
    }
    int more = zmq_msg_more(&m);
    int rc;
    size_t njobs = s_max_jobs || s_specs_out
                       ? cr_wire_submit_jobs(zmq_msg_data(&m), zmq_msg_size(&m))
                       : 0;
    if (s_max_jobs && zmq_msg_size(&m) <= max && njobs > s_max_jobs)
        rc = CR_E_LIMIT; /* refused before decoding: the decoder's memory is per entry */
    else if (s_specs_out && njobs && zmq_msg_size(&m) <= max &&
             s_recv_specs(&m, max, njobs, out, s_specs_out) == 0)
        rc = 0; /* m is now (*s_specs_out)->frame: the checks below read it there */
    else
        rc = cr_wire_unpack(zmq_msg_data(&m), zmq_msg_size(&m), max, out);
    if (rc == 0 && s_records_out && !more)
        s_keep_records(&m, *out, s_records_out);
    zmq_msg_t *frame = s_specs_out && *s_specs_out ? (zmq_msg_t *)(*s_specs_out)->frame : &m;
    if (rc == 0 && field && cap) {
        const uint8_t *data = zmq_msg_data(frame);
        const uint8_t *end = data + zmq_msg_size(frame);
        if (s_text_walk(data, end, &crucible__envelope__descriptor, 0, field, 0, 0)) {
            /* again, writing the bad field's path this time */
            s_text_walk(data, end, &crucible__envelope__descriptor, 0, field, cap, 0);
            cr_wire_free(out);
            rc = CR_E_DECODE;
        } else {
            field[0] = '\0';
        }
    }
    zmq_msg_close(&m); /* empty when moved */
    if (more || rc != 0) {
        if (more)
            s_drain_more(sock);
        if (s_specs_out)
            cr_wire_specs_free(s_specs_out);
        if (s_records_out)
            cr_wire_specs_free(s_records_out);
        if (more) {
            cr_wire_free(out);
            return CR_E_DECODE;
        }
    }
    return rc;
}

/* Walks one message's fields without decoding: counts the length-delimited
 * fields numbered `want` and gives the first length-delimited field numbered
 * `find` in *sub. -1 when the bytes are not protobuf. */
static int s_scan(const uint8_t *p, const uint8_t *end, uint32_t find, const uint8_t **sub,
                  size_t *sublen, uint32_t want, size_t *count)
{
    while (p < end) {
        uint64_t key, v;
        if (s_varint(&p, end, &key) != 0)
            return -1;
        switch (key & 7) {
        case 0:
            if (s_varint(&p, end, &v) != 0)
                return -1;
            break;
        case 1:
            if (end - p < 8)
                return -1;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return -1;
            p += 4;
            break;
        case 2:
            if (s_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p))
                return -1;
            if (sub && (key >> 3) == find && !*sub) {
                *sub = p;
                *sublen = (size_t)v;
            }
            if (count && (key >> 3) == want)
                (*count)++;
            p += v;
            break;
        default:
            return -1;
        }
    }
    return 0;
}

size_t cr_wire_submit_jobs(const void *data, size_t len)
{
    const uint8_t *p = data, *sub = NULL;
    size_t sublen = 0, n = 0;
    if (s_scan(p, p + len, CRUCIBLE__ENVELOPE__BODY_SUBMIT, &sub, &sublen, 0, NULL) != 0 || !sub)
        return 0;
    /* Submit.jobs is field 3 */
    if (s_scan(sub, sub + sublen, 0, NULL, NULL, 3, &n) != 0)
        return 0;
    return n;
}

void cr_wire_send_error(void *sock, const cr_peer_t *peer, const char *code, const char *msg,
                        const char *batch_id)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Error err = CRUCIBLE__ERROR__INIT;
    char *clean = strdup(msg ? msg : "");
    if (clean)
        cr_wire_utf8_scrub(clean);
    err.code = (char *)code;
    err.message = clean ? clean : (char *)"(out of memory)";
    err.batch_id = (char *)(batch_id ? batch_id : "");
    env.body_case = CRUCIBLE__ENVELOPE__BODY_ERROR;
    env.error = &err;
    if (cr_wire_send(sock, peer, &env) != 0)
        cr_debug("could not send error %s: %s", code, err.message);
    free(clean);
}

int cr_wire_frame_write(int fd, const void *data, size_t len)
{
    unsigned char hdr[4] = {(unsigned char)(len & 0xff), (unsigned char)((len >> 8) & 0xff),
                            (unsigned char)((len >> 16) & 0xff),
                            (unsigned char)((len >> 24) & 0xff)};
    const unsigned char *parts[2] = {hdr, data};
    size_t lens[2] = {4, len};
    for (int i = 0; i < 2; i++) {
        size_t off = 0;
        while (off < lens[i]) {
            ssize_t w = write(fd, parts[i] + off, lens[i] - off);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                return -errno;
            }
            off += (size_t)w;
        }
    }
    return 0;
}

int cr_wire_frame_parse(const void *buf, size_t len, size_t max, const uint8_t **payload,
                        size_t *plen)
{
    const uint8_t *b = buf;
    if (len < 4)
        return CR_E_DECODE;
    size_t n = (size_t)b[0] | ((size_t)b[1] << 8) | ((size_t)b[2] << 16) | ((size_t)b[3] << 24);
    if (n > max)
        return CR_E_TOO_BIG;
    if (len - 4 < n)
        return CR_E_DECODE;
    *payload = b + 4;
    *plen = n;
    return 0;
}

int cr_wire_record_pack(const Crucible__RewardRecord *rec, uint8_t **buf, size_t *len)
{
    size_t n = crucible__reward_record__get_packed_size(rec);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return -ENOMEM;
    crucible__reward_record__pack(rec, b);
    *buf = b;
    *len = n;
    return 0;
}

/* The fields of a record the coordinator sets (cr_wire_record_amend), in
 * the order it writes them: numbers and types as proto/crucible.proto gives
 * them, checked against the generated descriptor once (s_set_fields).
 * s_set_mask has bit id set for each, or is 0 when the schema disagrees
 * (then records are packed whole). */
enum {
    S_TASK, S_GROUP, S_SAMPLE, S_TURN, S_ATTEMPT, S_SEQ, S_STATUS, S_MESSAGE, S_HAS_REWARD,
    S_REWARD, S_COMPONENTS, S_WORKER, S_T_SUBMITTED, S_T_ASSIGNED, S_NSET
};
static const struct {
    const char *name; /* as the schema names it */
    uint32_t id;      /* field number */
    ProtobufCType type;
} s_set[S_NSET] = {
    [S_TASK] = {"task", 3, PROTOBUF_C_TYPE_STRING},
    [S_GROUP] = {"group_id", 4, PROTOBUF_C_TYPE_STRING},
    [S_SAMPLE] = {"sample_index", 5, PROTOBUF_C_TYPE_UINT32},
    [S_TURN] = {"turn", 6, PROTOBUF_C_TYPE_UINT32},
    [S_ATTEMPT] = {"attempt", 7, PROTOBUF_C_TYPE_UINT32},
    [S_SEQ] = {"seq", 8, PROTOBUF_C_TYPE_UINT64},
    [S_STATUS] = {"status", 9, PROTOBUF_C_TYPE_ENUM},
    [S_MESSAGE] = {"message", 10, PROTOBUF_C_TYPE_STRING},
    [S_HAS_REWARD] = {"has_reward", 15, PROTOBUF_C_TYPE_BOOL},
    [S_REWARD] = {"reward", 16, PROTOBUF_C_TYPE_DOUBLE},
    [S_COMPONENTS] = {"components", 17, PROTOBUF_C_TYPE_MESSAGE},
    [S_WORKER] = {"worker_id", 18, PROTOBUF_C_TYPE_STRING},
    [S_T_SUBMITTED] = {"t_submitted", 22, PROTOBUF_C_TYPE_INT64},
    [S_T_ASSIGNED] = {"t_assigned", 23, PROTOBUF_C_TYPE_INT64},
};
static uint64_t s_set_mask;
static pthread_once_t s_set_once = PTHREAD_ONCE_INIT;

static void s_set_fields(void)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < S_NSET; i++) {
        const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field_by_name(
            &crucible__reward_record__descriptor, s_set[i].name);
        if (!fd || fd->id != s_set[i].id || fd->type != s_set[i].type ||
            fd->label != PROTOBUF_C_LABEL_NONE)
            return; /* s_set_mask stays 0 */
        mask |= 1ull << fd->id;
    }
    s_set_mask = mask;
}

/* Field k of s_set at p as protobuf-c packs a proto3 field: nothing when
 * it is zero or empty. Each returns the bytes written. */
static size_t s_put_uint(uint8_t *p, int k, uint64_t v)
{
    if (!v)
        return 0;
    size_t n = s_put_varint(p, (uint64_t)s_set[k].id << 3 | 0);
    return n + s_put_varint(p + n, v);
}

static size_t s_put_bytes(uint8_t *p, int k, const void *v, size_t len)
{
    if (!len)
        return 0;
    size_t n = s_put_varint(p, (uint64_t)s_set[k].id << 3 | 2);
    n += s_put_varint(p + n, len);
    memcpy(p + n, v, len);
    return n + len;
}

static size_t s_put_double(uint8_t *p, int k, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    if (!v)
        return 0; /* +0.0 is left out; -0.0 is not, as protobuf-c does */
    size_t n = s_put_varint(p, (uint64_t)s_set[k].id << 3 | 1);
    for (int i = 0; i < 8; i++)
        p[n++] = (uint8_t)(v >> (8 * i)); /* little-endian, as the wire is */
    return n;
}

static size_t s_len0(const char *str)
{
    return str ? strlen(str) : 0;
}

int cr_wire_record_amend(const uint8_t *sent, size_t len, const Crucible__RewardRecord *rec,
                         uint8_t **buf, size_t *outlen)
{
    pthread_once(&s_set_once, s_set_fields);
    if (!s_set_mask)
        return CR_E_DECODE;
    size_t lt = s_len0(rec->task), lg = s_len0(rec->group_id), lm = s_len0(rec->message),
           lw = s_len0(rec->worker_id);
    size_t lc = rec->components ? crucible__reward_components__get_packed_size(rec->components)
                                : 0;
    /* each field's key and length take at most 20 bytes */
    uint8_t *b = malloc(len + lt + lg + lm + lw + lc + 20 * S_NSET);
    if (!b)
        return -ENOMEM;
    const uint8_t *p = sent, *end = sent + len, *val;
    size_t o = 0, vlen;
    uint32_t num;
    int wt;
    while (p < end) {
        const uint8_t *at = p;
        if (s_field(&p, end, &num, &wt, &val, &vlen) != 0) {
            free(b);
            return CR_E_DECODE;
        }
        if (num < 64 && (s_set_mask >> num & 1))
            continue; /* the coordinator's, written below */
        memcpy(b + o, at, (size_t)(p - at));
        o += (size_t)(p - at);
    }
    o += s_put_bytes(b + o, S_TASK, rec->task, lt);
    o += s_put_bytes(b + o, S_GROUP, rec->group_id, lg);
    o += s_put_uint(b + o, S_SAMPLE, rec->sample_index);
    o += s_put_uint(b + o, S_TURN, rec->turn);
    o += s_put_uint(b + o, S_ATTEMPT, rec->attempt);
    o += s_put_uint(b + o, S_SEQ, rec->seq);
    /* an enum is an int32 on the wire: a negative one takes ten bytes */
    o += s_put_uint(b + o, S_STATUS, (uint64_t)(int64_t)rec->status);
    o += s_put_bytes(b + o, S_MESSAGE, rec->message, lm);
    o += s_put_uint(b + o, S_HAS_REWARD, rec->has_reward != 0);
    o += s_put_double(b + o, S_REWARD, rec->reward);
    if (rec->components) { /* present, even when empty, as protobuf-c packs it */
        o += s_put_varint(b + o, (uint64_t)s_set[S_COMPONENTS].id << 3 | 2);
        o += s_put_varint(b + o, lc);
        o += crucible__reward_components__pack(rec->components, b + o);
    }
    o += s_put_bytes(b + o, S_WORKER, rec->worker_id, lw);
    o += s_put_uint(b + o, S_T_SUBMITTED, (uint64_t)rec->t_submitted);
    o += s_put_uint(b + o, S_T_ASSIGNED, (uint64_t)rec->t_assigned);
    *buf = b;
    *outlen = o;
    return 0;
}

static size_t s_put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static size_t s_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v > 0x7f) {
        v >>= 7;
        n++;
    }
    return n;
}

/* The tag of Result.records, from the descriptor as cr_wire_pack_result's
 * (0 if the generated code has no such field: then no batch is made). */
static uint64_t s_records_tag(void)
{
    pthread_once(&s_result_fields_once, s_result_fields);
    return s_fs ? (uint64_t)s_fs->id << 3 | 2 : 0;
}

size_t cr_wire_batch_entry(size_t len)
{
    uint64_t tag = s_records_tag();
    return tag ? s_varint_len(tag) + s_varint_len(len) + len : 0;
}

size_t cr_wire_batch_put(uint8_t *out, const uint8_t *rec, size_t len)
{
    size_t n = s_put_varint(out, s_records_tag());
    n += s_put_varint(out + n, len);
    memcpy(out + n, rec, len);
    return n + len;
}

size_t cr_wire_batch_head(uint8_t *head, size_t body)
{
    pthread_once(&s_result_fields_once, s_result_fields);
    if (!s_fv || !s_fr)
        return 0;
    size_t n = s_put_varint(head, (uint64_t)s_fv->id << 3 | 0);
    n += s_put_varint(head + n, CR_PROTOCOL_VERSION);
    n += s_put_varint(head + n, (uint64_t)s_fr->id << 3 | 2);
    n += s_put_varint(head + n, body);
    return n;
}

/* The fields an Assign from packed parts is made of (cr_wire_pack_assign),
 * looked up by name once, like the Result's above. */
static const ProtobufCFieldDescriptor *s_fa, *s_fj, *s_fjb, *s_fjs, *s_fjt, *s_fjo, *s_fjn;
static pthread_once_t s_assign_fields_once = PTHREAD_ONCE_INIT;

static void s_assign_fields(void)
{
    const ProtobufCMessageDescriptor *e = &crucible__envelope__descriptor;
    const ProtobufCMessageDescriptor *a = &crucible__assign__descriptor;
    const ProtobufCMessageDescriptor *j = &crucible__job__descriptor;
    s_fa = protobuf_c_message_descriptor_get_field_by_name(e, "assign");
    s_fj = protobuf_c_message_descriptor_get_field_by_name(a, "jobs");
    s_fjb = protobuf_c_message_descriptor_get_field_by_name(j, "batch_id");
    s_fjs = protobuf_c_message_descriptor_get_field_by_name(j, "spec");
    s_fjt = protobuf_c_message_descriptor_get_field_by_name(j, "task");
    s_fjo = protobuf_c_message_descriptor_get_field_by_name(j, "options");
    s_fjn = protobuf_c_message_descriptor_get_field_by_name(j, "attempt");
}

static size_t s_delim_len(const ProtobufCFieldDescriptor *f, size_t len)
{
    return s_varint_len((uint64_t)f->id << 3 | 2) + s_varint_len(len) + len;
}

static size_t s_put_delim(uint8_t *out, const ProtobufCFieldDescriptor *f, const void *data,
                          size_t len)
{
    size_t n = s_put_varint(out, (uint64_t)f->id << 3 | 2);
    n += s_put_varint(out + n, len);
    if (len)
        memcpy(out + n, data, len);
    return n + len;
}

/* The bytes of the Job itself (without its tag and length), written in
 * field-number order and left out when unset, as protobuf-c packs it. */
static size_t s_job_body(const cr_wire_job_t *j)
{
    size_t n = 0;
    if (j->batch_id && j->batch_id[0])
        n += s_delim_len(s_fjb, strlen(j->batch_id));
    if (j->spec)
        n += s_delim_len(s_fjs, j->spec_len);
    if (j->task)
        n += s_delim_len(s_fjt, j->task_len);
    if (j->options)
        n += s_delim_len(s_fjo, j->options_len);
    if (j->attempt)
        n += s_varint_len((uint64_t)s_fjn->id << 3) + s_varint_len(j->attempt);
    return n;
}

static int s_assign_ready(void)
{
    pthread_once(&s_result_fields_once, s_result_fields);
    pthread_once(&s_assign_fields_once, s_assign_fields);
    return s_fv && s_fa && s_fj && s_fjb && s_fjs && s_fjt && s_fjo && s_fjn;
}

size_t cr_wire_job_bytes(const cr_wire_job_t *job)
{
    return s_assign_ready() ? s_delim_len(s_fj, s_job_body(job)) : 0;
}

int cr_wire_pack_assign(const cr_wire_job_t *jobs, size_t n, const Crucible__Assign *rest,
                        uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (!s_assign_ready() || rest->n_jobs)
        return CR_E_USAGE;
    size_t body = crucible__assign__get_packed_size(rest);
    for (size_t i = 0; i < n; i++) {
        if ((!jobs[i].spec && jobs[i].spec_len) || (!jobs[i].task && jobs[i].task_len) ||
            (!jobs[i].options && jobs[i].options_len))
            return CR_E_USAGE;
        body += s_delim_len(s_fj, s_job_body(&jobs[i]));
        if (body > CR_WIRE_MAX_MSG)
            return CR_E_TOO_BIG;
    }
    size_t total = s_varint_len((uint64_t)s_fv->id << 3) + s_varint_len(CR_PROTOCOL_VERSION) +
                   s_delim_len(s_fa, body);
    if (total > CR_WIRE_MAX_MSG)
        return CR_E_TOO_BIG;
    uint8_t *b = malloc(total);
    if (!b)
        return -ENOMEM;
    /* Envelope: version, then the Assign: its jobs (field 1) first, then
     * the rest as protobuf-c packs it, which is in field-number order */
    size_t o = s_put_varint(b, (uint64_t)s_fv->id << 3);
    o += s_put_varint(b + o, CR_PROTOCOL_VERSION);
    o += s_put_varint(b + o, (uint64_t)s_fa->id << 3 | 2);
    o += s_put_varint(b + o, body);
    for (size_t i = 0; i < n; i++) {
        const cr_wire_job_t *j = &jobs[i];
        o += s_put_varint(b + o, (uint64_t)s_fj->id << 3 | 2);
        o += s_put_varint(b + o, s_job_body(j));
        if (j->batch_id && j->batch_id[0])
            o += s_put_delim(b + o, s_fjb, j->batch_id, strlen(j->batch_id));
        if (j->spec)
            o += s_put_delim(b + o, s_fjs, j->spec, j->spec_len);
        if (j->task)
            o += s_put_delim(b + o, s_fjt, j->task, j->task_len);
        if (j->options)
            o += s_put_delim(b + o, s_fjo, j->options, j->options_len);
        if (j->attempt) {
            o += s_put_varint(b + o, (uint64_t)s_fjn->id << 3);
            o += s_put_varint(b + o, j->attempt);
        }
    }
    o += crucible__assign__pack(rest, b + o);
    if (o != total) { /* an internal invariant: the sizes above are what was written */
        free(b);
        return CR_E_USAGE;
    }
    *buf = b;
    *len = total;
    return 0;
}

int cr_wire_fields_ok(const void *data, size_t len)
{
    const uint8_t *p = data, *end = p + len, *val;
    uint32_t num;
    int wt;
    size_t vlen;
    while (p < end)
        if (s_field(&p, end, &num, &wt, &val, &vlen) != 0 || num == 0)
            return 0;
    return 1;
}

int cr_wire_pack_result(const uint8_t *rec, size_t len, uint8_t **buf, size_t *outlen)
{
    /* field numbers from the descriptors, so a renumbered .proto cannot
     * make these bytes disagree with cr_wire_pack's */
    pthread_once(&s_result_fields_once, s_result_fields);
    const ProtobufCFieldDescriptor *fv = s_fv, *fr = s_fr, *fc = s_fc;
    if (!fv || !fr || !fc)
        return CR_E_DECODE;
    uint8_t head[40], inner[12];
    size_t ni = s_put_varint(inner, (uint64_t)fc->id << 3 | 2);
    ni += s_put_varint(inner + ni, len);
    size_t nh = s_put_varint(head, (uint64_t)fv->id << 3 | 0);
    nh += s_put_varint(head + nh, CR_PROTOCOL_VERSION);
    nh += s_put_varint(head + nh, (uint64_t)fr->id << 3 | 2);
    nh += s_put_varint(head + nh, ni + len);
    if (nh + ni + len > CR_WIRE_MAX_MSG)
        return CR_E_TOO_BIG;
    uint8_t *b = malloc(nh + ni + len);
    if (!b)
        return -ENOMEM;
    memcpy(b, head, nh);
    memcpy(b + nh, inner, ni);
    memcpy(b + nh + ni, rec, len);
    *buf = b;
    *outlen = nh + ni + len;
    return 0;
}

int cr_wire_record_unpack(const void *data, size_t len, Crucible__RewardRecord **out)
{
    *out = crucible__reward_record__unpack(NULL, len, data);
    if (*out && s_has_field_zero(&(*out)->base)) { /* would not read back: see above */
        crucible__reward_record__free_unpacked(*out, NULL);
        *out = NULL;
    }
    return *out ? 0 : CR_E_DECODE;
}

Crucible__RewardRecord *cr_wire_record_dup(const Crucible__RewardRecord *rec)
{
    uint8_t *buf;
    size_t len;
    if (cr_wire_record_pack(rec, &buf, &len) != 0)
        return NULL;
    Crucible__RewardRecord *out = NULL;
    cr_wire_record_unpack(buf, len, &out);
    free(buf);
    return out;
}

size_t cr_wire_task_bytes(const Crucible__TaskBundle *tb)
{
    return (tb->task_json ? strlen(tb->task_json) : 0) +
           (tb->reference_source ? strlen(tb->reference_source) : 0) +
           (tb->baseline_source ? strlen(tb->baseline_source) : 0);
}
