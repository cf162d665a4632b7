/* test_wire.c — the one module that packs and unpacks messages. */
#include "error.h"
#include "reward.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

static Crucible__Envelope *s_roundtrip(Crucible__Envelope *env)
{
    uint8_t *buf;
    size_t len;
    cr_assert_eq(cr_wire_pack(env, &buf, &len), 0);
    Crucible__Envelope *out = NULL;
    cr_assert_eq(cr_wire_unpack(buf, len, CR_WIRE_MAX_MSG, &out), 0);
    free(buf);
    return out;
}

Test(wire, submit_roundtrip)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Submit sub = CRUCIBLE__SUBMIT__INIT;
    Crucible__JobSpec spec = CRUCIBLE__JOB_SPEC__INIT;
    Crucible__JobSpec *specs[1] = {&spec};
    spec.job_id = "j1";
    spec.task = "vector_add";
    spec.source = "void solve(void) {}";
    spec.sample_index = 7;
    sub.batch_id = "b1";
    sub.n_jobs = 1;
    sub.jobs = specs;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
    env.submit = &sub;
    Crucible__Envelope *out = s_roundtrip(&env);
    cr_assert_eq(out->version, CR_PROTOCOL_VERSION);
    cr_assert_eq(out->body_case, CRUCIBLE__ENVELOPE__BODY_SUBMIT);
    cr_assert_str_eq(out->submit->batch_id, "b1");
    cr_assert_eq(out->submit->n_jobs, 1);
    cr_assert_str_eq(out->submit->jobs[0]->source, "void solve(void) {}");
    cr_assert_eq(out->submit->jobs[0]->sample_index, 7);
    cr_assert_str_eq(cr_wire_body_name(out), "submit");
    cr_wire_free(&out);
    cr_assert_null(out);
    cr_wire_free(&out); /* safe on NULL */
}

Test(wire, garbage_is_decode_error)
{
    const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99};
    Crucible__Envelope *out = (Crucible__Envelope *)0x1;
    cr_assert_eq(cr_wire_unpack(junk, sizeof junk, CR_WIRE_MAX_MSG, &out), CR_E_DECODE);
    cr_assert_null(out);
}

Test(wire, empty_body_is_decode_error)
{
    /* a valid protobuf with only a version: no body set */
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.version = 1;
    uint8_t buf[16];
    size_t n = crucible__envelope__pack(&env, buf);
    Crucible__Envelope *out = NULL;
    cr_assert_eq(cr_wire_unpack(buf, n, CR_WIRE_MAX_MSG, &out), CR_E_DECODE);
    cr_assert_null(out);
}

Test(wire, newer_version_refused)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Heartbeat hb = CRUCIBLE__HEARTBEAT__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    env.version = CR_PROTOCOL_VERSION + 1;
    uint8_t buf[64];
    size_t n = crucible__envelope__pack(&env, buf);
    Crucible__Envelope *out = NULL;
    cr_assert_eq(cr_wire_unpack(buf, n, CR_WIRE_MAX_MSG, &out), CR_E_VERSION);
    cr_assert_null(out);
}

Test(wire, size_cap)
{
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Error err = CRUCIBLE__ERROR__INIT;
    char big[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    err.message = big;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_ERROR;
    env.error = &err;
    uint8_t *buf;
    size_t len;
    cr_assert_eq(cr_wire_pack(&env, &buf, &len), 0);
    Crucible__Envelope *out = NULL;
    cr_assert_eq(cr_wire_unpack(buf, len, 1024, &out), CR_E_TOO_BIG);
    cr_assert_null(out);
    cr_assert_eq(cr_wire_unpack(buf, len, len, &out), 0);
    cr_wire_free(&out);
    free(buf);
}

Test(wire, frames)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(cr_wire_frame_write(p[1], "hello", 5), 0);
    close(p[1]);
    char buf[64];
    ssize_t n = read(p[0], buf, sizeof buf);
    close(p[0]);
    cr_assert_eq(n, 9);
    const uint8_t *payload;
    size_t plen;
    cr_assert_eq(cr_wire_frame_parse(buf, (size_t)n, 1024, &payload, &plen), 0);
    cr_assert_eq(plen, 5);
    cr_assert_eq(memcmp(payload, "hello", 5), 0);
    /* truncated frame and a length over the cap */
    cr_assert_eq(cr_wire_frame_parse(buf, 6, 1024, &payload, &plen), CR_E_DECODE);
    cr_assert_eq(cr_wire_frame_parse(buf, 3, 1024, &payload, &plen), CR_E_DECODE);
    cr_assert_eq(cr_wire_frame_parse(buf, (size_t)n, 4, &payload, &plen), CR_E_TOO_BIG);
}

Test(wire, record_dup)
{
    Crucible__RewardRecord rec = CRUCIBLE__REWARD_RECORD__INIT;
    char *flags[2] = {"input_mutated", "output_unwritten"};
    rec.batch_id = "b";
    rec.job_id = "j";
    rec.status = CRUCIBLE__STATUS__STATUS_HACK_DETECTED;
    rec.n_hack_flags = 2;
    rec.hack_flags = flags;
    rec.reward = 0.5;
    Crucible__RewardRecord *d = cr_wire_record_dup(&rec);
    cr_assert_not_null(d);
    cr_assert_eq(d->status, CRUCIBLE__STATUS__STATUS_HACK_DETECTED);
    cr_assert_eq(d->n_hack_flags, 2);
    cr_assert_str_eq(d->hack_flags[1], "output_unwritten");
    cr_assert_float_eq(d->reward, 0.5, 1e-12);
    crucible__reward_record__free_unpacked(d, NULL);
}

/* Real sockets: a ROUTER receives a DEALER's message with its identity, a
 * garbage frame comes back as CR_E_DECODE with the peer filled so the
 * caller can answer, and an oversized message never arrives (ZMQ_MAXMSGSIZE
 * drops the connection). */
Test(wire, sockets)
{
    char dir[] = "/tmp/cr-wire-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char ep[128];
    snprintf(ep, sizeof ep, "ipc://%s/s", dir);
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    void *dealer = zmq_socket(ctx, ZMQ_DEALER);
    cr_assert_eq(cr_wire_socket_caps(router, 4096), 0);
    cr_assert_eq(cr_wire_socket_caps(dealer, CR_WIRE_MAX_MSG), 0);
    zmq_setsockopt(dealer, ZMQ_ROUTING_ID, "d1", 2);
    cr_assert_eq(zmq_bind(router, ep), 0);
    cr_assert_eq(zmq_connect(dealer, ep), 0);

    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    Crucible__Heartbeat hb = CRUCIBLE__HEARTBEAT__INIT;
    hb.in_flight = 3;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    cr_assert_eq(cr_wire_send(dealer, NULL, &env), 0);

    zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};
    cr_assert_eq(zmq_poll(&it, 1, 2000), 1);
    cr_peer_t peer;
    Crucible__Envelope *out = NULL;
    cr_assert_eq(cr_wire_recv(router, &peer, &out), 0);
    cr_assert_eq(peer.len, 2);
    cr_assert_eq(memcmp(peer.bytes, "d1", 2), 0);
    cr_assert_eq(out->heartbeat->in_flight, 3);
    cr_wire_free(&out);

    zmq_send(dealer, "\xff\xff\xff", 3, 0);
    cr_assert_eq(zmq_poll(&it, 1, 2000), 1);
    cr_assert_eq(cr_wire_recv(router, &peer, &out), CR_E_DECODE);
    cr_assert_null(out);
    cr_assert_eq(peer.len, 2);
    cr_wire_send_error(router, &peer, "E_DECODE", "bad", "");
    zmq_pollitem_t dit = {dealer, 0, ZMQ_POLLIN, 0};
    cr_assert_eq(zmq_poll(&dit, 1, 2000), 1);
    cr_assert_eq(cr_wire_recv(dealer, NULL, &out), 0);
    cr_assert_eq(out->body_case, CRUCIBLE__ENVELOPE__BODY_ERROR);
    cr_assert_str_eq(out->error->code, "E_DECODE");
    cr_wire_free(&out);

    /* over the decoder cap but under the socket's hard cap: read, refused
     * with CR_E_TOO_BIG and the sender known, so it can be told */
    char *big = malloc(3 * 4096);
    memset(big, 1, 3 * 4096);
    zmq_send(dealer, big, 6000, 0);
    cr_assert_eq(zmq_poll(&it, 1, 2000), 1);
    cr_assert_eq(cr_wire_recv_max(router, &peer, 4096, &out), CR_E_TOO_BIG);
    cr_assert_null(out);
    cr_assert_eq(peer.len, 2);
    /* over the hard cap (2 x 4096): libzmq drops it unread */
    zmq_send(dealer, big, 3 * 4096, 0);
    free(big);
    cr_assert_eq(zmq_poll(&it, 1, 300), 0, "a message over the hard cap must not be delivered");
    cr_assert_eq(cr_wire_recv(router, &peer, &out), -EAGAIN);

    zmq_close(dealer);
    zmq_close(router);
    zmq_ctx_term(ctx);
    char path[160];
    snprintf(path, sizeof path, "%s/s", dir);
    unlink(path);
    rmdir(dir);
}

/* The Result envelope built around packed record bytes is byte for byte what
 * packing the envelope gives, and decodes to the same record. */
Test(wire, pack_result_matches_pack)
{
    Crucible__RewardRecord rec = CRUCIBLE__REWARD_RECORD__INIT;
    Crucible__CompileResult comp = CRUCIBLE__COMPILE_RESULT__INIT;
    rec.batch_id = "b";
    rec.job_id = "j1";
    rec.seq = 300; /* a two-byte varint */
    rec.status = CRUCIBLE__STATUS__STATUS_OK;
    rec.message = "";
    comp.ok = 1;
    char log[400];
    memset(log, 'x', sizeof log - 1);
    log[sizeof log - 1] = '\0';
    comp.log = log; /* a record over 127 bytes: two-byte lengths */
    rec.compile = &comp;
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    res.record = &rec;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    uint8_t *a = NULL, *r = NULL, *b = NULL;
    size_t alen = 0, rlen = 0, blen = 0;
    cr_assert_eq(cr_wire_pack(&env, &a, &alen), 0);
    cr_assert_eq(cr_wire_record_pack(&rec, &r, &rlen), 0);
    cr_assert_eq(cr_wire_pack_result(r, rlen, &b, &blen), 0);
    cr_assert_eq(blen, alen);
    cr_assert_eq(memcmp(a, b, alen), 0);
    Crucible__Envelope *back = NULL;
    cr_assert_eq(cr_wire_unpack(b, blen, CR_WIRE_MAX_MSG, &back), 0);
    cr_assert_eq(back->body_case, CRUCIBLE__ENVELOPE__BODY_RESULT);
    cr_assert_eq(back->result->record->seq, 300);
    cr_assert_str_eq(back->result->record->compile->log, log);
    cr_wire_free(&back);
    free(a);
    free(r);
    free(b);
}

/* n records of batch "b", jobs j0..j(n-1) (ids[i] their ids), status OK. */
static void s_records(Crucible__RewardRecord *recs, char (*ids)[16], int n)
{
    for (int i = 0; i < n; i++) {
        crucible__reward_record__init(&recs[i]);
        snprintf(ids[i], sizeof ids[i], "j%d", i);
        recs[i].batch_id = "b";
        recs[i].job_id = ids[i];
        recs[i].status = CRUCIBLE__STATUS__STATUS_OK;
    }
}

/* A batch made of packed records (cr_wire_batch_head + cr_wire_batch_put)
 * is byte for byte what cr_wire_pack makes of Envelope{Result{records}},
 * for records whose lengths take one and two bytes and a batch whose length
 * takes three. */
Test(wire, record_batch_is_what_pack_makes)
{
    enum { N = 120 };
    Crucible__RewardRecord recs[N], *rp[N];
    Crucible__CompileResult comp = CRUCIBLE__COMPILE_RESULT__INIT;
    char log[300];
    memset(log, 'l', sizeof log - 1);
    log[sizeof log - 1] = '\0';
    comp.log = log;
    char ids[N][16];
    s_records(recs, ids, N);
    for (int i = 0; i < N; i++) {
        recs[i].seq = (uint64_t)i + 1;
        if (i % 2)
            recs[i].compile = &comp; /* over 127 bytes: a two-byte length */
        rp[i] = &recs[i];
    }
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    res.n_records = N;
    res.records = rp;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    uint8_t *want = NULL;
    size_t wlen = 0;
    cr_assert_eq(cr_wire_pack(&env, &want, &wlen), 0);
    cr_assert_gt(wlen, 16384, "the batch's length should take three bytes");
    uint8_t *buf = malloc(CR_WIRE_BATCH_HEAD + wlen);
    cr_assert_not_null(buf);
    size_t body = 0;
    for (int i = 0; i < N; i++) {
        uint8_t *r = NULL;
        size_t rlen = 0;
        cr_assert_eq(cr_wire_record_pack(&recs[i], &r, &rlen), 0);
        size_t put = cr_wire_batch_put(buf + CR_WIRE_BATCH_HEAD + body, r, rlen);
        cr_assert_eq(put, cr_wire_batch_entry(rlen));
        body += put;
        free(r);
    }
    uint8_t head[CR_WIRE_BATCH_HEAD];
    size_t nh = cr_wire_batch_head(head, body);
    cr_assert_leq(nh, CR_WIRE_BATCH_HEAD);
    memcpy(buf + CR_WIRE_BATCH_HEAD - nh, head, nh);
    cr_assert_eq(nh + body, wlen);
    cr_assert_eq(memcmp(buf + CR_WIRE_BATCH_HEAD - nh, want, wlen), 0);
    Crucible__Envelope *back = NULL;
    cr_assert_eq(cr_wire_unpack(buf + CR_WIRE_BATCH_HEAD - nh, wlen, CR_WIRE_MAX_MSG, &back), 0);
    cr_assert_eq(back->result->n_records, N);
    cr_assert_null(back->result->record);
    cr_assert_eq(back->result->records[N - 1]->seq, N);
    cr_wire_free(&back);
    free(buf);
    free(want);
}

/* A connected pair of sockets of types ta (bound) and tb on inproc://name,
 * in a context of their own; s_unpair closes all three. */
static void *s_pair(const char *name, int ta, int tb, void **a, void **b)
{
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://%s", name);
    void *ctx = zmq_ctx_new();
    *a = zmq_socket(ctx, ta);
    *b = zmq_socket(ctx, tb);
    cr_assert_eq(zmq_bind(*a, ep), 0);
    cr_assert_eq(zmq_connect(*b, ep), 0);
    return ctx;
}

static void s_unpair(void *ctx, void *a, void *b)
{
    zmq_close(a);
    zmq_close(b);
    zmq_ctx_term(ctx);
}

/* The next message on the ROUTER a, received as the coordinator receives a
 * worker's (cr_wire_recv_records), waiting for it. Its rc. */
static int s_recv_worker(void *a, Crucible__Envelope **out, cr_wire_specs_t **sp)
{
    cr_peer_t peer;
    int rc;
    while ((rc = cr_wire_recv_records(a, &peer, CR_WIRE_MAX_MSG, out, sp)) == -EAGAIN)
        usleep(1000);
    return rc;
}

/* A Submit read with its specs: the envelope's jobs carry every field but
 * the source, and each spec is that job packed as sent, source included. */
Test(wire, submit_specs_keep_the_sent_jobs)
{
    void *a, *b;
    void *ctx = s_pair("specs", ZMQ_PAIR, ZMQ_PAIR, &a, &b);
    Crucible__TaskBundle tb = CRUCIBLE__TASK_BUNDLE__INIT;
    Crucible__TaskBundle *tbs[1] = {&tb};
    tb.name = "t";
    tb.task_json = "{}";
    Crucible__JobSpec j[3], *jp[3];
    char src[3][300];
    for (int i = 0; i < 3; i++) {
        crucible__job_spec__init(&j[i]);
        jp[i] = &j[i];
        memset(src[i], 'a' + i, sizeof src[i] - 1);
        src[i][sizeof src[i] - 1] = '\0';
        j[i].job_id = i == 0 ? "j0" : i == 1 ? "j1" : "j2";
        j[i].task = "t";
        j[i].group_id = i == 2 ? "g" : "";
        j[i].source = i == 1 ? "" : src[i]; /* one without a source */
        j[i].sample_index = (uint32_t)i * 200; /* two-byte varints too */
        j[i].turn = 3;
    }
    Crucible__Submit sub = CRUCIBLE__SUBMIT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    sub.batch_id = "b";
    sub.n_tasks = 1;
    sub.tasks = tbs;
    sub.n_jobs = 3;
    sub.jobs = jp;
    sub.subscribe = 1;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
    env.submit = &sub;
    cr_assert_eq(cr_wire_send(b, NULL, &env), 0);
    Crucible__Envelope *out = NULL;
    cr_wire_specs_t *sp = NULL;
    char field[64];
    int rc;
    while ((rc = cr_wire_recv_submit_specs(a, NULL, CR_WIRE_MAX_MSG, 10, &out, field,
                                           sizeof field, &sp)) == -EAGAIN)
        usleep(1000);
    cr_assert_eq(rc, 0);
    cr_assert_not_null(sp);
    cr_assert_eq(sp->n, 3);
    cr_assert_eq(out->submit->n_jobs, 3);
    cr_assert_str_eq(out->submit->batch_id, "b");
    cr_assert_eq(out->submit->subscribe, 1);
    cr_assert_eq(out->submit->n_tasks, 1);
    cr_assert_str_eq(out->submit->tasks[0]->task_json, "{}");
    for (int i = 0; i < 3; i++) {
        Crucible__JobSpec *g = out->submit->jobs[i];
        cr_assert_str_eq(g->job_id, j[i].job_id);
        cr_assert_str_eq(g->group_id, j[i].group_id);
        cr_assert_eq(g->sample_index, j[i].sample_index);
        cr_assert_eq(g->turn, 3);
        cr_assert_str_eq(g->source, ""); /* left out of the decode */
        Crucible__JobSpec *back = crucible__job_spec__unpack(NULL, sp->len[i], sp->spec[i]);
        cr_assert_not_null(back);
        cr_assert_str_eq(back->job_id, j[i].job_id);
        cr_assert_str_eq(back->source, j[i].source);
        crucible__job_spec__free_unpacked(back, NULL);
    }
    cr_wire_specs_free(&sp);
    cr_assert_null(sp);
    cr_wire_free(&out);
    s_unpair(ctx, a, b);
}

/* An Assign written around packed parts (cr_wire_pack_assign) is byte for
 * byte what cr_wire_pack makes of the same Assign decoded: jobs with every
 * part and with parts left out (no batch id, no attempt), a spec whose
 * length takes two bytes and one whose length takes three, and the rest of
 * the Assign (bundles, Acks, result_batches) after the jobs. */
Test(wire, assign_is_what_pack_makes)
{
    enum { N = 4 };
    static char big[20000], mid[300];
    memset(big, 's', sizeof big - 1);
    memset(mid, 'm', sizeof mid - 1);
    Crucible__JobSpec specs[N];
    Crucible__TaskBundle named[N];
    Crucible__JobOptions opts = CRUCIBLE__JOB_OPTIONS__INIT;
    opts.max_attempts = 3;
    opts.time_budget_s = 0.5;
    Crucible__Job jobs[N], *jp[N];
    cr_wire_job_t wj[N];
    uint8_t *packed[N][2];
    uint8_t *opack = NULL;
    size_t olen = crucible__job_options__get_packed_size(&opts);
    cr_assert_not_null(opack = malloc(olen));
    crucible__job_options__pack(&opts, opack);
    char ids[N][8];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "j%d", i);
        crucible__job_spec__init(&specs[i]);
        specs[i].job_id = ids[i];
        specs[i].task = "vector_add";
        specs[i].source = i == 1 ? big : i == 2 ? mid : "int main;";
        specs[i].sample_index = (uint32_t)i;
        crucible__task_bundle__init(&named[i]);
        named[i].name = "vector_add";
        named[i].hash = "abc123";
        crucible__job__init(&jobs[i]);
        jobs[i].batch_id = i == 3 ? "" : "b1";
        jobs[i].spec = &specs[i];
        jobs[i].task = &named[i];
        jobs[i].options = i == 2 ? NULL : &opts;
        jobs[i].attempt = i == 3 ? 0 : (uint32_t)i + 1;
        jp[i] = &jobs[i];
        size_t sl = crucible__job_spec__get_packed_size(&specs[i]);
        size_t tl = crucible__task_bundle__get_packed_size(&named[i]);
        cr_assert_not_null(packed[i][0] = malloc(sl));
        cr_assert_not_null(packed[i][1] = malloc(tl));
        crucible__job_spec__pack(&specs[i], packed[i][0]);
        crucible__task_bundle__pack(&named[i], packed[i][1]);
        wj[i] = (cr_wire_job_t){.batch_id = jobs[i].batch_id,
                                .spec = packed[i][0],
                                .spec_len = sl,
                                .task = packed[i][1],
                                .task_len = tl,
                                .options = jobs[i].options ? opack : NULL,
                                .options_len = jobs[i].options ? olen : 0,
                                .attempt = jobs[i].attempt};
        cr_assert_eq(cr_wire_job_bytes(&wj[i]),
                     crucible__job__get_packed_size(&jobs[i]) + 1 + (i == 1 ? 3 : i == 2 ? 2 : 1),
                     "job %d: its entry is a tag, a length and the Job", i);
    }
    Crucible__TaskBundle tb = CRUCIBLE__TASK_BUNDLE__INIT;
    tb.name = "vector_add";
    tb.task_json = "{}";
    tb.hash = "abc123";
    Crucible__TaskBundle *tbp[1] = {&tb};
    Crucible__Ack ack = CRUCIBLE__ACK__INIT;
    ack.batch_id = "b0";
    ack.job_id = "j9";
    ack.attempt = 2;
    Crucible__Ack *ackp[1] = {&ack};
    Crucible__Assign rest = CRUCIBLE__ASSIGN__INIT;
    rest.n_tasks = 1;
    rest.tasks = tbp;
    rest.n_acks = 1;
    rest.acks = ackp;
    rest.result_batches = 1;
    Crucible__Assign whole = rest;
    whole.n_jobs = N;
    whole.jobs = jp;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_ASSIGN;
    env.assign = &whole;
    uint8_t *want = NULL, *got = NULL;
    size_t wlen = 0, glen = 0;
    cr_assert_eq(cr_wire_pack(&env, &want, &wlen), 0);
    cr_assert_eq(cr_wire_pack_assign(wj, N, &rest, &got, &glen), 0);
    cr_assert_eq(glen, wlen);
    cr_assert_eq(memcmp(got, want, wlen), 0);
    Crucible__Envelope *back = NULL;
    cr_assert_eq(cr_wire_unpack(got, glen, CR_WIRE_MAX_MSG, &back), 0);
    cr_assert_eq(back->assign->n_jobs, N);
    cr_assert_str_eq(back->assign->jobs[1]->spec->source, big);
    cr_assert_eq(back->assign->jobs[2]->attempt, 3);
    cr_assert_null(back->assign->jobs[2]->options);
    cr_assert_eq(back->assign->jobs[0]->options->max_attempts, 3);
    cr_assert_str_eq(back->assign->acks[0]->job_id, "j9");
    cr_wire_free(&back);
    /* an Assign given with jobs in rest, or a part without its bytes, is refused */
    free(got);
    cr_assert_eq(cr_wire_pack_assign(wj, N, &whole, &got, &glen), CR_E_USAGE);
    cr_assert_null(got);
    cr_wire_job_t bad = wj[0];
    bad.spec = NULL;
    cr_assert_eq(cr_wire_pack_assign(&bad, 1, &rest, &got, &glen), CR_E_USAGE);
    free(want);
    free(opack);
    for (int i = 0; i < N; i++) {
        free(packed[i][0]);
        free(packed[i][1]);
    }
}

/* cr_wire_fields_ok: a packed message reads as fields; a length past the
 * end, an unknown wire type, a field numbered 0 or a cut varint does not. */
Test(wire, fields_ok_knows_protobuf_from_other_bytes)
{
    Crucible__JobSpec spec = CRUCIBLE__JOB_SPEC__INIT;
    spec.job_id = "j1";
    spec.source = "int x;";
    spec.turn = 7;
    uint8_t buf[64];
    size_t n = crucible__job_spec__pack(&spec, buf);
    cr_assert(cr_wire_fields_ok(buf, n));
    cr_assert(cr_wire_fields_ok(buf, 0), "no fields is a message (every field unset)");
    cr_assert_not(cr_wire_fields_ok(buf, n - 1), "cut inside the last field");
    const uint8_t past[] = {0x0a, 0x05, 'a'};      /* job_id of 5 bytes, 1 there */
    const uint8_t group[] = {0x0b, 0x0c};          /* wire type 3 (a group) */
    const uint8_t zero[] = {0x02, 0x00};           /* field 0 */
    const uint8_t cut[] = {0x30, 0x80};            /* turn, its varint cut */
    cr_assert_not(cr_wire_fields_ok(past, sizeof past));
    cr_assert_not(cr_wire_fields_ok(group, sizeof group));
    cr_assert_not(cr_wire_fields_ok(zero, sizeof zero));
    cr_assert_not(cr_wire_fields_ok(cut, sizeof cut));
}

/* A worker's record with the coordinator's fields set on its decode
 * (cr_wire_record_amend) decodes to exactly what packing that decode would
 * store: the worker's other fields as they came (a profile, hack flags,
 * kernelbench, a field this schema does not know), its values of the
 * coordinator's fields gone whether the new ones are set or zero (a
 * sample_index and a message the coordinator leaves empty, components
 * merged by a decoder if both were kept), and a negative double, a
 * ten-byte status and a three-byte seq among the new ones. */
Test(wire, record_amend_decodes_as_packed)
{
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    Crucible__CompileResult cres = CRUCIBLE__COMPILE_RESULT__INIT;
    Crucible__ProfileResult prof = CRUCIBLE__PROFILE_RESULT__INIT;
    Crucible__KernelBenchResult kb = CRUCIBLE__KERNEL_BENCH_RESULT__INIT;
    Crucible__RewardComponents wc = CRUCIBLE__REWARD_COMPONENTS__INIT;
    char *flags[2] = {"timing", "copy"};
    r.batch_id = "b";
    r.job_id = "j7";
    r.task = "the worker's";
    r.group_id = "g-worker";
    r.sample_index = 3;
    r.turn = 2;
    r.attempt = 0;
    r.seq = 99;
    r.status = CRUCIBLE__STATUS__STATUS_OK;
    r.message = "worker message";
    cres.ok = 1;
    cres.seconds = 0.25;
    cres.log = "compiled";
    r.compile = &cres;
    prof.speedup_geomean = 1.5;
    r.profile = &prof;
    r.n_hack_flags = 2;
    r.hack_flags = flags;
    kb.compiled = 1;
    kb.runtime = 0.5;
    r.kernelbench = &kb;
    wc.formula = "forged";
    wc.penalty = 5;
    r.components = &wc;
    r.has_reward = 1;
    r.reward = 7;
    r.worker_id = "liar";
    r.host = "node7";
    r.t_submitted = 1;
    r.t_assigned = 2;
    r.t_finished = 1764000000123;
    uint8_t *packed = NULL;
    size_t plen = 0;
    cr_assert_eq(cr_wire_record_pack(&r, &packed, &plen), 0);
    /* a field this schema does not know, after the rest */
    uint8_t sent[4096];
    cr_assert_lt(plen + 3, sizeof sent);
    memcpy(sent, packed, plen);
    sent[plen] = (uint8_t)(1000 << 3 & 0x7f) | 0x80;
    sent[plen + 1] = (uint8_t)(1000 >> 4);
    sent[plen + 2] = 0x05;
    size_t slen = plen + 3;
    free(packed);

    Crucible__RewardRecord *rec = crucible__reward_record__unpack(NULL, slen, sent);
    cr_assert_not_null(rec);
    cr_assert_eq(rec->base.n_unknown_fields, 1);
    /* what the coordinator and the store set */
    Crucible__RewardComponents *nc = calloc(1, sizeof *nc);
    crucible__reward_components__init(nc);
    nc->formula = strdup("default@1");
    nc->correct = 1;
    nc->speed = -0.25;
    crucible__reward_components__free_unpacked(rec->components, NULL);
    rec->components = nc;
    free(rec->task);
    rec->task = strdup("t");
    free(rec->group_id);
    rec->group_id = strdup(""); /* empty: the worker's must not come back */
    rec->sample_index = 0;
    rec->turn = 4;
    rec->attempt = 1;
    rec->seq = 20000;
    rec->status = (Crucible__Status)-1;
    free(rec->message);
    rec->message = strdup("");
    rec->has_reward = 1;
    rec->reward = -0.25;
    free(rec->worker_id);
    rec->worker_id = strdup("w3@node7");
    rec->t_submitted = 1764000000000;
    rec->t_assigned = 0;

    uint8_t *want = NULL, *got = NULL;
    size_t wlen = 0, glen = 0;
    cr_assert_eq(cr_wire_record_pack(rec, &want, &wlen), 0);
    cr_assert_eq(cr_wire_record_amend(sent, slen, rec, &got, &glen), 0);
    Crucible__RewardRecord *back = crucible__reward_record__unpack(NULL, glen, got);
    cr_assert_not_null(back);
    uint8_t *again = NULL;
    size_t alen = 0;
    cr_assert_eq(cr_wire_record_pack(back, &again, &alen), 0);
    cr_assert_eq(alen, wlen);
    cr_assert_eq(memcmp(again, want, wlen), 0);
    cr_assert_str_eq(back->components->formula, "default@1");
    cr_assert_eq(back->components->penalty, 0); /* not the worker's 5 */
    cr_assert_str_eq(back->group_id, "");
    cr_assert_eq(back->sample_index, 0);
    cr_assert_str_eq(back->message, "");
    cr_assert_eq(back->t_assigned, 0);
    cr_assert_eq((int)back->status, -1);
    cr_assert_str_eq(back->host, "node7");
    cr_assert_eq(back->n_hack_flags, 2);
    cr_assert_eq(back->profile->speedup_geomean, 1.5);
    cr_assert_eq(back->base.n_unknown_fields, 1);
    /* the worker's fields are the bytes it sent: the amended record starts
     * with its keys as they came */
    cr_assert_eq(memcmp(got, sent, 2 + strlen("b") + 2 + strlen("j7")), 0);
    crucible__reward_record__free_unpacked(back, NULL);
    crucible__reward_record__free_unpacked(rec, NULL);
    free(want);
    free(got);
    free(again);

    /* bytes that are not protobuf fields are refused, not copied */
    const uint8_t junk[] = {0x0a, 0x7f, 'x'};
    Crucible__RewardRecord empty = CRUCIBLE__REWARD_RECORD__INIT;
    got = NULL;
    cr_assert_eq(cr_wire_record_amend(junk, sizeof junk, &empty, &got, &glen), CR_E_DECODE);
    cr_assert_null(got);
}

/* cr_wire_recv_records gives a Result's records as they came, each the
 * bytes packing it makes, in order: records, or a record alone; nothing for
 * a message that is not a Result, and nothing for a Result whose record is
 * given twice (the decoder merges the two: neither is the decoded one). */
Test(wire, recv_records_gives_each_as_sent)
{
    void *a, *b;
    void *ctx = s_pair("records", ZMQ_ROUTER, ZMQ_DEALER, &a, &b);
    Crucible__RewardRecord r[3], *rp[3];
    Crucible__CompileResult cres = CRUCIBLE__COMPILE_RESULT__INIT;
    cres.log = "a log";
    char ids[3][16];
    s_records(r, ids, 3);
    for (int i = 0; i < 3; i++) {
        r[i].attempt = (uint32_t)i + 1;
        r[i].compile = i == 1 ? &cres : NULL;
        rp[i] = &r[i];
    }
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    res.n_records = 3;
    res.records = rp;
    cr_assert_eq(cr_wire_send(b, NULL, &env), 0);
    res.n_records = 0;
    res.records = NULL;
    res.record = &r[2];
    cr_assert_eq(cr_wire_send(b, NULL, &env), 0);
    Crucible__Heartbeat hb = CRUCIBLE__HEARTBEAT__INIT;
    Crucible__Envelope henv = CRUCIBLE__ENVELOPE__INIT;
    henv.body_case = CRUCIBLE__ENVELOPE__BODY_HEARTBEAT;
    henv.heartbeat = &hb;
    cr_assert_eq(cr_wire_send(b, NULL, &henv), 0);
    /* Result{record, record}: the same bytes twice over */
    uint8_t *one = NULL;
    size_t olen = 0;
    cr_assert_eq(cr_wire_pack(&env, &one, &olen), 0);
    uint8_t twice[512];
    cr_assert_lt(2 * olen, sizeof twice);
    memcpy(twice, one, olen);
    memcpy(twice + olen, one, olen);
    cr_assert_eq(zmq_send(b, twice, 2 * olen, 0), (int)(2 * olen));
    free(one);

    for (int msg = 0; msg < 4; msg++) {
        Crucible__Envelope *out = NULL;
        cr_wire_specs_t *sp = NULL;
        cr_assert_eq(s_recv_worker(a, &out, &sp), 0, "message %d", msg);
        if (msg >= 2) {
            cr_assert_null(sp, "message %d", msg);
            cr_wire_free(&out);
            continue;
        }
        cr_assert_not_null(sp);
        size_t n = msg == 0 ? 3 : 1;
        cr_assert_eq(sp->n, n);
        for (size_t i = 0; i < n; i++) {
            Crucible__RewardRecord *want = msg == 0 ? &r[i] : &r[2];
            uint8_t *p = NULL;
            size_t plen = 0;
            cr_assert_eq(cr_wire_record_pack(want, &p, &plen), 0);
            cr_assert_eq(sp->len[i], plen);
            cr_assert_eq(memcmp(sp->spec[i], p, plen), 0);
            free(p);
        }
        cr_wire_specs_free(&sp);
        cr_assert_null(sp);
        cr_wire_free(&out);
    }
    s_unpair(ctx, a, b);
}

/* A worker's message received with cr_wire_recv_records lives in the
 * decode arena until cr_wire_free: its strings set with cr_wire_set_str and
 * the reward's components go there too (nothing of the heap to leak or
 * free twice); a second message received while the first is live is
 * decoded on the heap, and both free as any envelope. */
Test(wire, worker_messages_decode_into_the_arena)
{
    void *a, *b;
    void *ctx = s_pair("arena", ZMQ_ROUTER, ZMQ_DEALER, &a, &b);
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    Crucible__RewardComponents wc = CRUCIBLE__REWARD_COMPONENTS__INIT;
    wc.formula = "forged";
    r.batch_id = "b";
    r.job_id = "j";
    r.status = CRUCIBLE__STATUS__STATUS_OK;
    r.message = "the worker's";
    r.components = &wc;
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    res.record = &r;
    cr_assert_eq(cr_wire_send(b, NULL, &env), 0);
    cr_assert_eq(cr_wire_send(b, NULL, &env), 0);

    Crucible__Envelope *one = NULL, *two = NULL;
    cr_wire_specs_t *sp1 = NULL, *sp2 = NULL;
    cr_peer_t peer;
    int rc;
    while ((rc = cr_wire_recv_records(a, &peer, CR_WIRE_MAX_MSG, &one, &sp1)) == -EAGAIN)
        usleep(1000);
    cr_assert_eq(rc, 0);
    Crucible__RewardRecord *rec = one->result->record;
    cr_assert(cr_wire_in_arena(one));
    cr_assert(cr_wire_in_arena(&rec->message));
    cr_assert_eq(cr_wire_set_str(&rec->message, "the coordinator's"), 0);
    cr_assert(cr_wire_in_arena(rec->message));
    cr_assert_str_eq(rec->message, "the coordinator's");
    cr_assert_eq(cr_wire_set_str(&rec->worker_id, "w1"), 0); /* was the shared "" */
    cr_assert(cr_wire_in_arena(rec->worker_id));
    cr_assert_eq(cr_reward_apply(rec, "default"), 0);
    cr_assert(cr_wire_in_arena(rec->components));
    cr_assert(cr_wire_in_arena(rec->components->formula));
    cr_assert_str_eq(rec->components->formula, "default@1");

    /* the second, while the first is live: the heap's */
    while ((rc = cr_wire_recv_records(a, &peer, CR_WIRE_MAX_MSG, &two, &sp2)) == -EAGAIN)
        usleep(1000);
    cr_assert_eq(rc, 0);
    cr_assert_not(cr_wire_in_arena(two));
    Crucible__RewardRecord *rec2 = two->result->record;
    cr_assert_eq(cr_wire_set_str(&rec2->message, "heap"), 0);
    cr_assert_not(cr_wire_in_arena(rec2->message));
    cr_assert_eq(cr_reward_apply(rec2, "default"), 0);
    cr_assert_not(cr_wire_in_arena(rec2->components));

    cr_wire_free(&one);
    cr_assert_null(one);
    cr_assert_not(cr_wire_in_arena(rec)); /* given back */
    cr_wire_free(&two);
    cr_wire_specs_free(&sp1);
    cr_wire_specs_free(&sp2);
    /* and a heap record is what it was: strings replaced and freed */
    Crucible__RewardRecord *h = cr_wire_record_dup(&r);
    cr_assert_not_null(h);
    cr_assert_not(cr_wire_in_arena(&h->message));
    cr_assert_eq(cr_wire_set_str(&h->message, "m"), 0);
    cr_assert_str_eq(h->message, "m");
    crucible__reward_record__free_unpacked(h, NULL);
    cr_wire_arena_trim();
    s_unpair(ctx, a, b);
}

/* ---- the walk that decodes a worker's Result (cr__wire_result_walk) ---- */

static size_t s_tw_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            p[n] |= 0x80;
        n++;
    } while (v);
    return n;
}

static size_t s_tw_key(uint8_t *p, uint32_t num, int wt)
{
    return s_tw_varint(p, (uint64_t)num << 3 | (uint64_t)wt);
}

/* An envelope {version 1, result {record: the len bytes of rec}} in out. */
static size_t s_tw_wrap(uint8_t *out, const uint8_t *rec, size_t len)
{
    uint8_t res[1024];
    size_t r = s_tw_key(res, 1, 2);
    r += s_tw_varint(res + r, len);
    memcpy(res + r, rec, len);
    r += len;
    size_t o = s_tw_key(out, 1, 0);
    o += s_tw_varint(out + o, 1);
    o += s_tw_key(out + o, CRUCIBLE__ENVELOPE__BODY_RESULT, 2);
    o += s_tw_varint(out + o, r);
    memcpy(out + o, res, r);
    return o + r;
}

/* a and b pack to the same bytes (what says otherwise). */
static void s_packs_alike(const ProtobufCMessage *a, const ProtobufCMessage *b, const char *what)
{
    size_t al = protobuf_c_message_get_packed_size(a);
    cr_assert_eq(al, protobuf_c_message_get_packed_size(b), "%s", what);
    uint8_t *ab = malloc(al + 1), *bb = malloc(al + 1);
    protobuf_c_message_pack(a, ab);
    protobuf_c_message_pack(b, bb);
    cr_assert_eq(memcmp(ab, bb, al), 0, "%s", what);
    free(ab);
    free(bb);
}

/* A walk's rc and envelope w on data: NULL when it left the message (rc 1,
 * w NULL), else protobuf-c's decode of the same bytes, which must exist
 * (caller frees). */
static Crucible__Envelope *s_walk_taken(int rc, const Crucible__Envelope *w, const uint8_t *data,
                                        size_t len)
{
    cr_assert(rc == 0 || rc == 1, "walk rc %d", rc);
    if (rc != 0) {
        cr_assert_null(w);
        return NULL;
    }
    Crucible__Envelope *pc = crucible__envelope__unpack(NULL, len, data);
    cr_assert_not_null(pc, "the walk took bytes protobuf-c refuses");
    return pc;
}

/* The walk's verdict on data, checked against protobuf-c's decode of the
 * same bytes: when the walk takes a message, protobuf-c decodes it too and
 * the two envelopes pack to the same bytes. Returns the walk's rc. */
static int s_tw_check(const uint8_t *data, size_t len)
{
    Crucible__Envelope *w = NULL;
    int rc = cr__wire_result_walk(data, len, &w);
    Crucible__Envelope *pc = s_walk_taken(rc, w, data, len);
    if (!pc)
        return rc;
    s_packs_alike(&w->base, &pc->base, "the walk decoded other values than protobuf-c");
    crucible__envelope__free_unpacked(pc, NULL);
    cr_wire_free(&w);
    return 0;
}

/* A record with every kind of field the walk reads set. */
static void s_tw_rich(Crucible__RewardRecord *r, Crucible__CompileResult *cr_,
                      Crucible__ProfileResult *pr, Crucible__RewardComponents *rc_,
                      Crucible__KernelBenchResult *kb, Crucible__VerifyResult *vr, char **flags)
{
    crucible__reward_record__init(r);
    crucible__compile_result__init(cr_);
    crucible__profile_result__init(pr);
    crucible__reward_components__init(rc_);
    crucible__kernel_bench_result__init(kb);
    crucible__verify_result__init(vr);
    r->batch_id = "batch-7";
    r->job_id = "job-42";
    r->task = "vector_add";
    r->group_id = "g1";
    r->sample_index = 3;
    r->turn = 2;
    r->attempt = 4294967295u;
    r->seq = UINT64_MAX;
    r->status = CRUCIBLE__STATUS__STATUS_HACK_DETECTED;
    r->message = "a message";
    cr_->ok = 1;
    cr_->log = "compiled";
    cr_->seconds = 0.5;
    cr_->cache_hit = 1;
    r->compile = cr_;
    vr->ok = 1;
    r->verify = vr;
    pr->speedup_geomean = 1.75;
    pr->clock_policy = "locked";
    r->profile = pr;
    r->n_hack_flags = 3;
    r->hack_flags = flags;
    r->has_reward = 1;
    r->reward = -0.25;
    rc_->formula = "forged";
    rc_->correct = 1;
    r->components = rc_;
    r->worker_id = "w-forged";
    r->host = "node7";
    r->device = "cpu:test";
    r->backend = "c";
    r->t_submitted = -1;
    r->t_assigned = INT64_MIN;
    r->t_compiled = 3;
    r->t_verified = 4;
    r->t_finished = INT64_MAX;
    r->advantage = 1e300;
    r->sandboxed_net = 1;
    kb->runtime = 2.5;
    kb->correctness_trials = "(5 / 5)";
    r->kernelbench = kb;
}

/* Every field the walk reads decodes as protobuf-c decodes it: a record
 * alone, records, an empty Result. */
Test(wire, result_walk_decodes_as_protobuf_c)
{
    Crucible__RewardRecord r[2], *rp[2];
    Crucible__CompileResult cres[2];
    Crucible__ProfileResult pr[2];
    Crucible__RewardComponents rc[2];
    Crucible__KernelBenchResult kb[2];
    Crucible__VerifyResult vr[2];
    char *flags[] = {"timing_mismatch", "", "output_reuse"};
    for (int i = 0; i < 2; i++) {
        s_tw_rich(&r[i], &cres[i], &pr[i], &rc[i], &kb[i], &vr[i], flags);
        rp[i] = &r[i];
    }
    r[1].job_id = "job-43";
    r[1].n_hack_flags = 0;
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    for (int shape = 0; shape < 3; shape++) {
        res.record = shape == 0 ? &r[0] : NULL;
        res.n_records = shape == 1 ? 2 : 0;
        res.records = shape == 1 ? rp : NULL;
        uint8_t *b = NULL;
        size_t len = 0;
        cr_assert_eq(cr_wire_pack(&env, &b, &len), 0);
        cr_assert_eq(s_tw_check(b, len), 0, "shape %d", shape);
        Crucible__Envelope *w = NULL;
        cr_assert_eq(cr__wire_result_walk(b, len, &w), 0);
        cr_assert(cr_wire_in_arena(w));
        if (shape == 0) {
            Crucible__RewardRecord *d = w->result->record;
            cr_assert_str_eq(d->job_id, "job-42");
            cr_assert_eq(d->n_hack_flags, 3);
            cr_assert_str_eq(d->hack_flags[2], "output_reuse");
            cr_assert_eq(d->t_assigned, INT64_MIN);
            cr_assert_eq(d->seq, UINT64_MAX);
            cr_assert(d->profile && d->profile->speedup_geomean == 1.75);
            cr_assert(cr_wire_in_arena(d->profile));
        }
        if (shape == 1)
            cr_assert_str_eq(w->result->records[1]->job_id, "job-43");
        if (shape == 2)
            cr_assert(!w->result->record && w->result->n_records == 0);
        /* busy while it lives: one envelope at a time in the arena */
        Crucible__Envelope *w2 = NULL;
        cr_assert_eq(cr__wire_result_walk(b, len, &w2), -EBUSY);
        cr_wire_free(&w);
        free(b);
    }
    cr_wire_arena_trim();
}

/* One case of a walk's attack test: the n bytes of body as wrap puts them
 * into env (len set), and check's verdict on them expected. */
#define S_WALK_CASE(wrap, check, body, expect)                                              \
    do {                                                                                    \
        len = wrap(env, body, n);                                                           \
        cr_assert_eq(check(env, len), (expect), "case at line %d", __LINE__);               \
    } while (0)

/* The string field str "a" and the varint num 1, then "b" and 7, in m:
 * each given twice, the last to win. Returns the bytes. */
static size_t s_given_twice(uint8_t *m, uint32_t str, uint32_t num)
{
    size_t n = 0;
    for (int i = 0; i < 2; i++) {
        n += s_tw_key(m + n, str, 2);
        m[n++] = 1, m[n++] = i ? 'b' : 'a';
        n += s_tw_key(m + n, num, 0);
        m[n++] = i ? 7 : 1;
    }
    return n;
}

/* Field num in m with wire type wt and a value of that type (bytes "x",
 * a zero fixed32 or fixed64, a varint 1). Returns the bytes. */
static size_t s_typed_field(uint8_t *m, uint32_t num, int wt)
{
    size_t n = s_tw_key(m, num, wt);
    if (wt == 2)
        m[n++] = 1, m[n++] = 'x';
    else if (wt == 5)
        memset(m + n, 0, 4), n += 4;
    else if (wt == 1)
        memset(m + n, 0, 8), n += 8;
    else
        m[n++] = 1;
    return n;
}

/* The malformed encodings a walk leaves to protobuf-c (check returns 1),
 * each as the one message that wrap puts into an envelope: a length past
 * the end, one of 2^32, a varint of 11 bytes (protobuf-c refuses the three),
 * an unknown field, a field numbered 0 (protobuf-c keeps or refuses them).
 * str and num name a string and a varint field of that message. */
static void s_malformed_left(size_t (*wrap)(uint8_t *, const uint8_t *, size_t),
                             int (*check)(const uint8_t *, size_t), uint32_t str, uint32_t num)
{
    uint8_t m[5][32], env[1024];
    size_t n[5];
    n[0] = s_tw_key(m[0], str, 2);
    m[0][n[0]++] = 100, m[0][n[0]++] = 'x';
    n[1] = s_tw_key(m[1], str, 2);
    n[1] += s_tw_varint(m[1] + n[1], (uint64_t)1 << 32);
    n[2] = s_tw_key(m[2], num, 0);
    memset(m[2] + n[2], 0xff, 10), n[2] += 10;
    m[2][n[2]++] = 1;
    n[3] = s_tw_key(m[3], 99, 0);
    m[3][n[3]++] = 5;
    n[4] = 0;
    m[4][n[4]++] = 0x80, m[4][n[4]++] = 0x00, m[4][n[4]++] = 1; /* field 0, padded tag */
    for (int i = 0; i < 5; i++) {
        size_t len = wrap(env, m[i], n[i]);
        cr_assert_eq(check(env, len), 1, "malformed case %d", i);
        if (i < 3)
            cr_assert_null(crucible__envelope__unpack(NULL, len, env), "malformed case %d", i);
    }
}

/* Hostile bytes: whatever the walk does not take whole is left to
 * protobuf-c (1), never half-decoded; the last of a scalar or string given
 * twice wins, as in protobuf-c. */
Test(wire, result_walk_attacked)
{
    uint8_t rec[512], env[1024];
    size_t n, len;
    Crucible__Envelope *w = NULL;
#define S_TW(expect) S_WALK_CASE(s_tw_wrap, s_tw_check, rec, expect)
    /* duplicates: job_id "a" then "b", attempt 1 then 7: the last wins */
    n = s_given_twice(rec, 2, 7);
    S_TW(0);
    cr_assert_eq(cr__wire_result_walk(env, len, &w), 0);
    cr_assert_str_eq(w->result->record->job_id, "b");
    cr_assert_eq(w->result->record->attempt, 7);
    cr_wire_free(&w);
    /* a sub-message given twice (protobuf-c merges): left to it */
    n = 0;
    for (int i = 0; i < 2; i++) {
        n += s_tw_key(rec + n, 11, 2);
        rec[n++] = 2;
        n += s_tw_key(rec + n, 1, 0);
        rec[n++] = 1;
    }
    S_TW(1);
    /* wrong wire types on known fields: a string as a varint, a varint as
     * bytes, a double as fixed32, a sub-message as a varint */
    const int wrong[][2] = {{1, 0}, {7, 2}, {16, 5}, {11, 0}, {14, 0}, {9, 1}};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        n = s_typed_field(rec, (uint32_t)wrong[i][0], wrong[i][1]);
        S_TW(1);
        cr_assert_null(crucible__envelope__unpack(NULL, len, env), "field %d", wrong[i][0]);
    }
    /* inside the CompileResult the walk reads too: its log as a varint,
     * an unknown field in it */
    for (int i = 0; i < 2; i++) {
        n = s_tw_key(rec, 11, 2);
        rec[n++] = 2;
        n += s_tw_key(rec + n, i == 0 ? 2 : 9, 0);
        rec[n++] = 1;
        S_TW(1);
        if (i == 0)
            cr_assert_null(crucible__envelope__unpack(NULL, len, env));
    }
    s_malformed_left(s_tw_wrap, s_tw_check, 1, 7);
    /* out of range, as protobuf-c reads them: a uint32 of 2^40 keeps its low
     * 32 bits, status -1 (10 bytes), a bool of 2 */
    n = s_tw_key(rec, 7, 0);
    n += s_tw_varint(rec + n, ((uint64_t)1 << 40) | 9);
    n += s_tw_key(rec + n, 9, 0);
    n += s_tw_varint(rec + n, (uint64_t)-1);
    n += s_tw_key(rec + n, 15, 0);
    rec[n++] = 2;
    S_TW(0);
    cr_assert_eq(cr__wire_result_walk(env, len, &w), 0);
    cr_assert_eq(w->result->record->attempt, 9);
    cr_assert_eq((int)w->result->record->status, -1);
    cr_assert(w->result->record->has_reward);
    cr_wire_free(&w);
    /* every prefix of a good message, truncated anywhere */
    n = s_tw_key(rec, 1, 2);
    rec[n++] = 2, rec[n++] = 'b', rec[n++] = '1';
    n += s_tw_key(rec + n, 16, 1);
    memset(rec + n, 0x3f, 8), n += 8;
    n += s_tw_key(rec + n, 11, 2);
    rec[n++] = 2;
    n += s_tw_key(rec + n, 1, 0);
    rec[n++] = 1;
    len = s_tw_wrap(env, rec, n);
    cr_assert_eq(s_tw_check(env, len), 0);
    for (size_t cut = 0; cut < len; cut++)
        s_tw_check(env, cut); /* taken only when protobuf-c agrees */
    /* envelopes of another shape: a Result given twice, a record beside
     * records, another body, an unknown envelope field */
    n = 0;
    uint8_t two[2048];
    size_t tl = s_tw_wrap(two, rec, 0);
    memcpy(two + tl, two + 2, tl - 2); /* the result field again */
    cr_assert_eq(s_tw_check(two, tl + tl - 2), 1);
    uint8_t res[64];
    size_t rl = s_tw_key(res, 1, 2);
    res[rl++] = 0;
    rl += s_tw_key(res + rl, 40, 2);
    res[rl++] = 0;
    len = s_tw_key(env, CRUCIBLE__ENVELOPE__BODY_RESULT, 2);
    env[len++] = (uint8_t)rl;
    memcpy(env + len, res, rl);
    len += rl;
    cr_assert_eq(s_tw_check(env, len), 1);
    len = s_tw_key(env, CRUCIBLE__ENVELOPE__BODY_HEARTBEAT, 2);
    env[len++] = 0;
    cr_assert_eq(s_tw_check(env, len), 1);
    len = s_tw_wrap(env, rec, 0);
    len += s_tw_key(env + len, 77, 0);
    env[len++] = 1;
    cr_assert_eq(s_tw_check(env, len), 1);
#undef S_TW
    cr_wire_arena_trim();
}

/* A copy of the len bytes of b in m (room for len + 8) with one to three
 * random edits: a byte flipped, the rest cut, a byte inserted. Returns the
 * copy's length. */
static size_t s_damage(uint8_t *m, const uint8_t *b, size_t len, unsigned *seed)
{
    memcpy(m, b, len);
    size_t ml = len;
    int edits = 1 + (int)(rand_r(seed) % 3);
    for (int e = 0; e < edits; e++) {
        size_t at = (size_t)rand_r(seed) % ml;
        switch (rand_r(seed) % 3) {
        case 0: m[at] = (uint8_t)rand_r(seed); break;
        case 1: ml = at + 1; break;
        default:
            if (ml < len + 8) {
                memmove(m + at + 1, m + at, ml - at);
                m[at] = (uint8_t)rand_r(seed);
                ml++;
            }
            break;
        }
    }
    return ml;
}

/* Random damage to a rich Result (bytes flipped, cut, inserted): whatever
 * the walk takes, protobuf-c decodes to the same envelope. */
Test(wire, result_walk_matches_protobuf_c_on_damaged_bytes)
{
    Crucible__RewardRecord r;
    Crucible__CompileResult cres;
    Crucible__ProfileResult pr;
    Crucible__RewardComponents rc;
    Crucible__KernelBenchResult kb;
    Crucible__VerifyResult vr;
    char *flags[] = {"timing_mismatch", "x", "output_reuse"};
    s_tw_rich(&r, &cres, &pr, &rc, &kb, &vr, flags);
    Crucible__RewardRecord *rp[2] = {&r, &r};
    Crucible__Result res = CRUCIBLE__RESULT__INIT;
    res.n_records = 2;
    res.records = rp;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_RESULT;
    env.result = &res;
    uint8_t *b = NULL;
    size_t len = 0;
    cr_assert_eq(cr_wire_pack(&env, &b, &len), 0);
    uint8_t *m = malloc(len + 8);
    unsigned seed = 20;
    int taken = 0;
    for (int i = 0; i < 20000; i++) {
        size_t ml = s_damage(m, b, len, &seed);
        taken += s_tw_check(m, ml) == 0;
    }
    cr_assert_gt(taken, 100); /* damage in a string's bytes still parses */
    free(m);
    free(b);
    cr_wire_arena_trim();
}

/* Through the receive: a damaged worker message is refused and the next
 * one on the same socket decodes (one bad message stops nothing else). */
Test(wire, recv_records_refuses_damaged_and_goes_on)
{
    void *a, *b;
    void *ctx = s_pair("walkdamage", ZMQ_ROUTER, ZMQ_DEALER, &a, &b);
    uint8_t rec[64], env[256];
    size_t n = s_tw_key(rec, 1, 2);
    rec[n++] = 1, rec[n++] = 'b';
    n += s_tw_key(rec + n, 2, 2);
    rec[n++] = 1, rec[n++] = 'j';
    size_t len = s_tw_wrap(env, rec, n);
    cr_assert_eq(zmq_send(b, env, len - 1, 0), (int)len - 1); /* cut */
    cr_assert_eq(zmq_send(b, env, len, 0), (int)len);
    Crucible__Envelope *out = NULL;
    cr_wire_specs_t *sp = NULL;
    cr_assert_eq(s_recv_worker(a, &out, &sp), CR_E_DECODE);
    cr_assert_null(out);
    cr_assert_null(sp);
    cr_assert_eq(s_recv_worker(a, &out, &sp), 0);
    cr_assert_str_eq(out->result->record->job_id, "j");
    cr_assert(cr_wire_in_arena(out));
    cr_assert_not_null(sp);
    cr_assert_eq(sp->n, 1);
    cr_assert_eq(sp->len[0], n);
    cr_assert_eq(memcmp(sp->spec[0], rec, n), 0);
    cr_wire_specs_free(&sp);
    cr_wire_free(&out);
    cr_wire_arena_trim();
    s_unpair(ctx, a, b);
}

/* A message of up to 33 bytes lives inside its zmq_msg_t (ZeroMQ's VSM):
 * the parts a receive gives must point into the frame it keeps, not into
 * the zmq_msg_t it received into. A tiny Submit's spec and a tiny Result's
 * record read back as sent after the receive returns. */
Test(wire, tiny_messages_keep_their_parts)
{
    void *a, *b;
    void *ctx = s_pair("tiny", ZMQ_ROUTER, ZMQ_DEALER, &a, &b);
    Crucible__JobSpec j = CRUCIBLE__JOB_SPEC__INIT, *jp = &j;
    j.job_id = "j";
    j.task = "t";
    j.source = "s";
    Crucible__Submit sub = CRUCIBLE__SUBMIT__INIT;
    sub.batch_id = "b";
    sub.n_jobs = 1;
    sub.jobs = &jp;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
    env.submit = &sub;
    uint8_t *packed = NULL;
    size_t plen = 0;
    cr_assert_eq(cr_wire_pack(&env, &packed, &plen), 0);
    cr_assert_leq(plen, 33);
    /* copied, as a tcp or ipc receive makes it (inproc keeps the sender's
     * zero-copy message whatever its size) */
    cr_assert_eq(zmq_send(b, packed, plen, 0), (int)plen);
    free(packed);
    Crucible__Envelope *out = NULL;
    cr_wire_specs_t *sp = NULL;
    cr_peer_t peer;
    char field[64];
    int rc;
    while ((rc = cr_wire_recv_submit_specs(a, &peer, CR_WIRE_MAX_MSG, 10, &out, field,
                                           sizeof field, &sp)) == -EAGAIN)
        usleep(1000);
    cr_assert_eq(rc, 0);
    cr_assert_not_null(sp);
    uint8_t want[32];
    size_t wlen = crucible__job_spec__pack(&j, want);
    cr_assert_eq(sp->len[0], wlen);
    cr_assert_eq(memcmp(sp->spec[0], want, wlen), 0);
    const uint8_t *sd = zmq_msg_data(sp->frame);
    cr_assert(sp->spec[0] >= sd && sp->spec[0] + sp->len[0] <= sd + zmq_msg_size(sp->frame));
    cr_wire_specs_free(&sp);
    cr_wire_free(&out);

    uint8_t rec[16], e[64];
    size_t n = s_tw_key(rec, 2, 2);
    rec[n++] = 1, rec[n++] = 'j';
    size_t len = s_tw_wrap(e, rec, n);
    cr_assert_eq(zmq_send(b, e, len, 0), (int)len);
    cr_assert_eq(s_recv_worker(a, &out, &sp), 0);
    cr_assert_not_null(sp);
    const uint8_t *fd = zmq_msg_data(sp->frame);
    cr_assert(sp->spec[0] >= fd && sp->spec[0] + sp->len[0] <= fd + zmq_msg_size(sp->frame));
    cr_assert_eq(memcmp(sp->spec[0], rec, n), 0);
    cr_wire_specs_free(&sp);
    cr_wire_free(&out);
    cr_wire_arena_trim();
    s_unpair(ctx, a, b);
}

/* ---- the walk that decodes a client's Submit (cr__wire_submit_walk) ---- */

/* The walk's verdict on data, checked against protobuf-c's decode of the
 * same bytes: when the walk takes a message, protobuf-c decodes it too, the
 * two envelopes pack to the same bytes once protobuf-c's sources are left
 * out (the walk leaves them out), and each job's bytes the walk gives
 * decode to protobuf-c's job, source included. Returns the walk's rc. */
static int s_sw_check(const uint8_t *data, size_t len)
{
    size_t n = cr_wire_submit_jobs(data, len);
    const uint8_t *spec[16];
    size_t slen[16];
    cr_assert_leq(n, 16);
    Crucible__Envelope *w = NULL;
    int rc = cr__wire_submit_walk(data, len, n, &w, spec, slen);
    Crucible__Envelope *pc = s_walk_taken(rc, w, data, len);
    if (!pc)
        return rc;
    cr_assert_eq(pc->body_case, CRUCIBLE__ENVELOPE__BODY_SUBMIT);
    cr_assert_eq(w->submit->n_jobs, pc->submit->n_jobs);
    for (size_t i = 0; i < n; i++) {
        Crucible__JobSpec *back = crucible__job_spec__unpack(NULL, slen[i], spec[i]);
        cr_assert_not_null(back);
        Crucible__JobSpec *want = pc->submit->jobs[i];
        s_packs_alike(&back->base, &want->base, "a job's bytes are not protobuf-c's job");
        crucible__job_spec__free_unpacked(back, NULL);
        if (want->source != protobuf_c_empty_string)
            free(want->source);
        want->source = (char *)protobuf_c_empty_string;
    }
    s_packs_alike(&w->base, &pc->base, "the walk decoded other values than protobuf-c");
    crucible__envelope__free_unpacked(pc, NULL);
    cr_wire_free(&w);
    cr_assert_null(w);
    return 0;
}

/* A Submit with every field the walk reads set, packed into *b. */
static void s_sw_rich(uint8_t **b, size_t *len)
{
    static Crucible__TaskBundle tb[2];
    static Crucible__TaskBundle *tbs[2];
    static Crucible__JobSpec j[3];
    static Crucible__JobSpec *jp[3];
    static Crucible__JobOptions o;
    for (int i = 0; i < 2; i++) {
        crucible__task_bundle__init(&tb[i]);
        tb[i].name = i ? "scan" : "vector_add";
        tb[i].task_json = "{\"name\": \"x\"}";
        tb[i].reference_source = "int main(void) { return 0; }";
        tb[i].hash = "abc123";
        tbs[i] = &tb[i];
    }
    for (int i = 0; i < 3; i++) {
        crucible__job_spec__init(&j[i]);
        j[i].job_id = i == 0 ? "j0" : i == 1 ? "job-with-a-longer-id" : "j2";
        j[i].task = i == 1 ? "scan" : "vector_add";
        j[i].source = i == 1 ? "" : "__global__ void k() {}";
        j[i].group_id = i == 2 ? "" : "g1";
        j[i].sample_index = i == 0 ? UINT32_MAX : (uint32_t)i * 300;
        j[i].turn = (uint32_t)i;
        jp[i] = &j[i];
    }
    crucible__job_options__init(&o);
    o.time_budget_s = 0.5;
    o.reward = "speedup";
    o.max_attempts = 3;
    Crucible__Submit sub = CRUCIBLE__SUBMIT__INIT;
    sub.batch_id = "batch-9";
    sub.n_tasks = 2;
    sub.tasks = tbs;
    sub.n_jobs = 3;
    sub.jobs = jp;
    sub.options = &o;
    sub.subscribe = 1;
    sub.record_batches = 1;
    Crucible__Envelope env = CRUCIBLE__ENVELOPE__INIT;
    env.body_case = CRUCIBLE__ENVELOPE__BODY_SUBMIT;
    env.submit = &sub;
    cr_assert_eq(cr_wire_pack(&env, b, len), 0);
}

/* An envelope {version 1, submit {the len bytes of body}} in out. */
static size_t s_sw_wrap(uint8_t *out, const uint8_t *body, size_t len)
{
    size_t o = s_tw_key(out, 1, 0);
    o += s_tw_varint(out + o, 1);
    o += s_tw_key(out + o, CRUCIBLE__ENVELOPE__BODY_SUBMIT, 2);
    o += s_tw_varint(out + o, len);
    memcpy(out + o, body, len);
    return o + len;
}

/* A Submit {batch_id "b", jobs {the len bytes of job}} in out. */
static size_t s_sw_one_job(uint8_t *out, const uint8_t *job, size_t len)
{
    uint8_t sub[512];
    size_t s = s_tw_key(sub, 1, 2);
    sub[s++] = 1, sub[s++] = 'b';
    s += s_tw_key(sub + s, 3, 2);
    s += s_tw_varint(sub + s, len);
    memcpy(sub + s, job, len);
    return s_sw_wrap(out, sub, s + len);
}

/* Every field the walk reads decodes as protobuf-c decodes it, each job's
 * bytes are the job as sent, and the decoded Submit is one block that
 * cr_wire_free gives back (the ASan build checks that nothing is left). */
Test(wire, submit_walk_decodes_as_protobuf_c)
{
    uint8_t *b = NULL;
    size_t len = 0;
    s_sw_rich(&b, &len);
    cr_assert_eq(s_sw_check(b, len), 0);
    const uint8_t *spec[3];
    size_t slen[3];
    Crucible__Envelope *w = NULL;
    cr_assert_eq(cr__wire_submit_walk(b, len, 3, &w, spec, slen), 0);
    Crucible__Submit *s = w->submit;
    cr_assert_str_eq(s->batch_id, "batch-9");
    cr_assert_eq(s->n_tasks, 2);
    cr_assert_str_eq(s->tasks[1]->name, "scan");
    cr_assert_str_eq(s->jobs[1]->job_id, "job-with-a-longer-id");
    cr_assert_eq(s->jobs[0]->sample_index, UINT32_MAX);
    cr_assert_str_eq(s->jobs[0]->group_id, "g1");
    cr_assert_str_eq(s->jobs[2]->group_id, "");
    cr_assert_str_eq(s->jobs[0]->source, ""); /* left out */
    cr_assert(s->options && s->options->max_attempts == 3);
    cr_assert_str_eq(s->options->reward, "speedup");
    cr_assert(s->subscribe && s->record_batches);
    cr_assert(!cr_wire_in_arena(w));
    cr_wire_free(&w);
    /* the count must be the Submit's: one job more or less is left */
    cr_assert_eq(cr__wire_submit_walk(b, len, 2, &w, spec, slen), 1);
    cr_assert_null(w);
    cr_assert_eq(cr__wire_submit_walk(b, len, 4, &w, spec, slen), 1);
    cr_assert_null(w);
    /* several live at once, freed in any order */
    Crucible__Envelope *ws[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cr__wire_submit_walk(b, len, 3, &ws[i], spec, slen), 0);
    cr_wire_free(&ws[1]);
    cr_wire_free(&ws[0]);
    cr_wire_free(&ws[2]);
    free(b);
}

/* Hostile bytes: whatever the walk does not take whole is left to
 * protobuf-c (1), never half-decoded; the last of a scalar or string given
 * twice wins, as in protobuf-c. */
Test(wire, submit_walk_attacked)
{
    uint8_t job[256], env[1024];
    size_t n, len;
    Crucible__Envelope *w = NULL;
    const uint8_t *spec[4];
    size_t slen[4];
#define S_SW(expect) S_WALK_CASE(s_sw_one_job, s_sw_check, job, expect)
    /* duplicates: job_id "a" then "b", turn 1 then 7: the last wins */
    n = s_given_twice(job, 1, 6);
    S_SW(0);
    cr_assert_eq(cr__wire_submit_walk(env, len, 1, &w, spec, slen), 0);
    cr_assert_str_eq(w->submit->jobs[0]->job_id, "b");
    cr_assert_eq(w->submit->jobs[0]->turn, 7);
    cr_wire_free(&w);
    /* a NUL inside a string ends the C string there, for both */
    n = s_tw_key(job, 1, 2);
    job[n++] = 3, job[n++] = 'a', job[n++] = 0, job[n++] = 'b';
    S_SW(0);
    /* a source given twice (s_strip_sources refuses it too), and as a varint */
    n = 0;
    for (int i = 0; i < 2; i++) {
        n += s_tw_key(job + n, 3, 2);
        job[n++] = 1, job[n++] = 'x';
    }
    S_SW(1);
    n = s_tw_key(job, 3, 0);
    job[n++] = 1;
    S_SW(1);
    cr_assert_null(crucible__envelope__unpack(NULL, len, env));
    /* wrong wire types on the job's known fields */
    const int wrong[][2] = {{1, 0}, {2, 5}, {4, 1}, {5, 2}, {6, 1}};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        n = s_typed_field(job, (uint32_t)wrong[i][0], wrong[i][1]);
        S_SW(1);
        cr_assert_null(crucible__envelope__unpack(NULL, len, env), "field %d", wrong[i][0]);
    }
    s_malformed_left(s_sw_one_job, s_sw_check, 1, 5);
    /* out of range, as protobuf-c reads it: a uint32 of 2^40 keeps its low
     * 32 bits */
    n = s_tw_key(job, 5, 0);
    n += s_tw_varint(job + n, ((uint64_t)1 << 40) | 9);
    S_SW(0);
    cr_assert_eq(cr__wire_submit_walk(env, len, 1, &w, spec, slen), 0);
    cr_assert_eq(w->submit->jobs[0]->sample_index, 9);
    cr_wire_free(&w);
    /* every prefix of a rich Submit, truncated anywhere */
    uint8_t *b = NULL;
    size_t bl = 0;
    s_sw_rich(&b, &bl);
    cr_assert_eq(s_sw_check(b, bl), 0);
    for (size_t cut = 0; cut < bl; cut++)
        s_sw_check(b, cut); /* taken only when protobuf-c agrees */
    free(b);
    /* the Submit's own fields: options given twice (protobuf-c merges),
     * a task of bytes that are not a TaskBundle, a bool of 2, an unknown
     * Submit field, batch_id as a varint */
    uint8_t sub[256];
    size_t s = 0;
    for (int i = 0; i < 2; i++) { /* {max_attempts 3}, then {reward "x"} */
        s += s_tw_key(sub + s, 4, 2);
        sub[s++] = i ? 3 : 2;
        s += s_tw_key(sub + s, i ? 5 : 8, i ? 2 : 0);
        if (i)
            sub[s++] = 1, sub[s++] = 'x';
        else
            sub[s++] = 3;
    }
    len = s_sw_wrap(env, sub, s);
    cr_assert_eq(s_sw_check(env, len), 1);
    s = s_tw_key(sub, 2, 2);
    sub[s++] = 2, sub[s++] = 0x0a, sub[s++] = 9; /* a name longer than its task */
    len = s_sw_wrap(env, sub, s);
    cr_assert_eq(s_sw_check(env, len), 1);
    cr_assert_null(crucible__envelope__unpack(NULL, len, env));
    s = s_tw_key(sub, 5, 0);
    sub[s++] = 2;
    len = s_sw_wrap(env, sub, s);
    cr_assert_eq(s_sw_check(env, len), 0);
    cr_assert_eq(cr__wire_submit_walk(env, len, 0, &w, spec, slen), 0);
    cr_assert(w->submit->subscribe);
    cr_wire_free(&w);
    s = s_tw_key(sub, 77, 0);
    sub[s++] = 1;
    len = s_sw_wrap(env, sub, s);
    cr_assert_eq(s_sw_check(env, len), 1);
    s = s_tw_key(sub, 1, 0);
    sub[s++] = 1;
    len = s_sw_wrap(env, sub, s);
    cr_assert_eq(s_sw_check(env, len), 1);
    /* envelopes of another shape: a Submit given twice, another body, an
     * unknown envelope field, the version as bytes */
    n = s_tw_key(job, 1, 2);
    job[n++] = 1, job[n++] = 'a';
    len = s_sw_one_job(env, job, n);
    memcpy(env + len, env + 2, len - 2); /* the submit field again */
    cr_assert_eq(s_sw_check(env, len + len - 2), 1);
    len = s_tw_key(env, CRUCIBLE__ENVELOPE__BODY_HEARTBEAT, 2);
    env[len++] = 0;
    cr_assert_eq(s_sw_check(env, len), 1);
    len = s_sw_one_job(env, job, n);
    len += s_tw_key(env + len, 77, 0);
    env[len++] = 1;
    cr_assert_eq(s_sw_check(env, len), 1);
    uint8_t good[256];
    size_t gl = s_sw_one_job(good, job, n);
    len = s_tw_key(env, 1, 2);
    env[len++] = 0;
    memcpy(env + len, good + 2, gl - 2); /* the good one's fields after its version */
    len += gl - 2;
    cr_assert_eq(s_sw_check(env, len), 1);
    cr_assert_eq(s_sw_check(good, gl), 0);
#undef S_SW
}

/* Random damage to a rich Submit (bytes flipped, cut, inserted): whatever
 * the walk takes, protobuf-c decodes to the same envelope. */
Test(wire, submit_walk_matches_protobuf_c_on_damaged_bytes)
{
    uint8_t *b = NULL;
    size_t len = 0;
    s_sw_rich(&b, &len);
    uint8_t *m = malloc(len + 8);
    unsigned seed = 10;
    int taken = 0;
    for (int i = 0; i < 20000; i++) {
        size_t ml = s_damage(m, b, len, &seed);
        if (cr_wire_submit_jobs(m, ml) > 16)
            continue;
        taken += s_sw_check(m, ml) == 0;
    }
    cr_assert_gt(taken, 100); /* damage in a string's bytes still parses */
    free(m);
    free(b);
}
