/* test_store.c — the coordinator's SQLite store: every transition of the
 * job state machine, first record wins, seq contiguity, retries, cancel, a
 * restart, and the invariant checker after each step. Real files in a
 * temporary directory. */
#include <criterion/criterion.h>

#include "error.h"
#include "file.h"
#include "record.h"
#include "store.h"
#include "timeutil.h"
#include "wire.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_dir[64];
static char s_db[128];

static void s_setup(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cr_test_store_XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
    snprintf(s_db, sizeof s_db, "%s/crucible.db", s_dir);
}

static void s_teardown(void)
{
    cr_file_rmtree(s_dir);
}

TestSuite(store, .init = s_setup, .fini = s_teardown, .timeout = 30);

#define CHECK(st)                                                                          \
    do {                                                                                   \
        char err_[512] = "";                                                               \
        cr_assert_eq(cr_store_check((st), err_, sizeof err_), 0, "store check: %s", err_); \
    } while (0)

static cr_store_t *s_open(void)
{
    cr_store_t *st = NULL;
    cr_assert_eq(cr_store_open(s_db, &st), 0);
    cr_assert_not_null(st);
    return st;
}

/* A batch "b" of n jobs j0..j(n-1) of task "t" (language c); job i is in
 * group "g<i % groups>" when groups > 0. */
static void s_batch(cr_store_t *st, const char *batch, int n, int groups, const char *owner)
{
    Crucible__JobOptions o = CRUCIBLE__JOB_OPTIONS__INIT;
    o.reward = "default";
    o.max_attempts = 3;
    uint8_t ob[256];
    size_t olen = crucible__job_options__pack(&o, ob);
    cr_assert_eq(cr_store_add_batch(st, batch, owner, ob, olen, cr_time_now_ms(), NULL), 0);
    Crucible__TaskBundle tb = CRUCIBLE__TASK_BUNDLE__INIT;
    tb.name = "t";
    tb.task_json = "{}";
    tb.reference_source = "void solve(void) {}";
    tb.hash = "h1";
    uint8_t tbb[256];
    size_t tlen = crucible__task_bundle__pack(&tb, tbb);
    cr_assert_eq(cr_store_add_task(st, "h1", "t", tbb, tlen), 0);

    cr_store_job_in_t *jobs = calloc((size_t)n, sizeof *jobs);
    char (*ids)[16] = calloc((size_t)n, sizeof *ids);
    char (*gids)[16] = calloc((size_t)n, sizeof *gids);
    uint8_t (*specs)[128] = calloc((size_t)n, sizeof *specs);
    for (int i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "j%d", i);
        if (groups)
            snprintf(gids[i], sizeof gids[i], "g%d", i % groups);
        Crucible__JobSpec js = CRUCIBLE__JOB_SPEC__INIT;
        js.job_id = ids[i];
        js.task = "t";
        js.source = "void solve(void) {}";
        js.group_id = gids[i];
        js.sample_index = (uint32_t)i;
        jobs[i].job_id = ids[i];
        jobs[i].task_hash = "h1";
        jobs[i].language = "c";
        jobs[i].group_id = gids[i];
        jobs[i].spec = specs[i];
        jobs[i].spec_len = crucible__job_spec__pack(&js, specs[i]);
    }
    uint32_t added = 0, dup = 0;
    cr_assert_eq(cr_store_add_jobs(st, batch, jobs, (size_t)n, cr_time_now_ms(), &added, &dup),
                 0);
    free(jobs);
    free(ids);
    free(gids);
    free(specs);
}

/* A worker's verdict, heap-owned as an unpacked one is. */
static Crucible__RewardRecord *s_rec(const char *batch, const char *job, int status,
                                     const char *worker)
{
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    r.batch_id = (char *)batch;
    r.job_id = (char *)job;
    r.status = (Crucible__Status)status;
    r.worker_id = (char *)worker;
    r.message = (char *)worker;
    Crucible__RewardRecord *rec = cr_wire_record_dup(&r);
    cr_assert_not_null(rec);
    return rec;
}

static void s_free(Crucible__RewardRecord *rec)
{
    crucible__reward_record__free_unpacked(rec, NULL);
}

static cr_job_state_t s_state(cr_store_t *st, const char *batch, const char *job)
{
    cr_store_job_info_t info;
    cr_assert_eq(cr_store_job_get(st, batch, job, &info), 0);
    return info.state;
}

typedef struct {
    int n;
    uint64_t seq[256];
    char job[256][16];
    int status[256];
    char msg[256][128];
} s_seen_t;

static int s_collect(const Crucible__RewardRecord *rec, void *arg)
{
    s_seen_t *s = arg;
    s->seq[s->n] = rec->seq;
    snprintf(s->job[s->n], sizeof s->job[0], "%s", rec->job_id);
    snprintf(s->msg[s->n], sizeof s->msg[0], "%s", rec->message);
    s->status[s->n] = rec->status;
    s->n++;
    return 0;
}

Test(store, transitions)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 3, 0, "client1");
    CHECK(st);

    /* QUEUED, oldest first, only for languages asked */
    cr_store_key_t keys[8];
    size_t n = 0;
    const char *c_only[] = {"c"}, *cuda_only[] = {"cuda"};
    cr_assert_eq(cr_store_next_queued(st, cuda_only, 1, 8, keys, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(cr_store_next_queued(st, c_only, 1, 2, keys, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(keys[0].job_id, "j0");
    cr_assert_str_eq(keys[1].job_id, "j1");
    cr_assert_str_eq(keys[0].language, "c");

    /* QUEUED → ASSIGNED */
    cr_store_assigned_t a;
    cr_assert_eq(cr_store_assign(st, "b", "j0", "w1", 1000, &a), 0);
    cr_assert_eq(a.attempt, 1);
    Crucible__JobSpec *js = crucible__job_spec__unpack(NULL, a.spec_len, a.spec);
    Crucible__TaskBundle *tb = crucible__task_bundle__unpack(NULL, a.task_len, a.task);
    Crucible__JobOptions *jo = crucible__job_options__unpack(NULL, a.options_len, a.options);
    cr_assert(js && tb && jo);
    cr_assert_str_eq(js->job_id, "j0");
    cr_assert_str_eq(tb->name, "t");
    cr_assert_str_eq(jo->reward, "default");
    crucible__job_spec__free_unpacked(js, NULL);
    crucible__task_bundle__free_unpacked(tb, NULL);
    crucible__job_options__free_unpacked(jo, NULL);
    cr_store_assigned_free(&a);
    cr_assert_eq(s_state(st, "b", "j0"), CR_JOB_ASSIGNED);
    CHECK(st);
    cr_assert_eq(cr_store_assign(st, "b", "j0", "w2", 1000, NULL), CR_E_STATE);
    cr_assert_eq(cr_store_assign(st, "b", "nope", "w2", 1000, NULL), CR_E_NOT_FOUND);
    cr_assert_eq(cr_store_next_queued(st, c_only, 1, 8, keys, &n), 0);
    cr_assert_eq(n, 2, "an assigned job is not queued");

    size_t nk = 0;
    cr_store_key_t *wk = NULL;
    cr_assert_eq(cr_store_worker_jobs(st, "w1", &wk, &nk), 0);
    cr_assert_eq(nk, 1);
    cr_assert_str_eq(wk[0].job_id, "j0");
    free(wk);

    /* ASSIGNED → DONE: the store fills seq, keys and timestamps */
    Crucible__RewardRecord *r = s_rec("b", "j0", CRUCIBLE__STATUS__STATUS_OK, "w1");
    cr_store_job_info_t prev;
    cr_assert_eq(cr_store_complete(st, r, &prev), 0);
    cr_assert_eq(prev.state, CR_JOB_ASSIGNED);
    cr_assert_str_eq(prev.worker_id, "w1");
    cr_assert_eq(r->seq, 1);
    cr_assert_str_eq(r->task, "t");
    cr_assert_eq(r->attempt, 1);
    cr_assert_eq(r->t_assigned, 1000);
    cr_assert_gt(r->t_submitted, 0);
    s_free(r);
    cr_assert_eq(s_state(st, "b", "j0"), CR_JOB_DONE);
    CHECK(st);

    /* QUEUED → DONE directly (INVALID_TASK at submit takes this path) */
    r = s_rec("b", "j1", CRUCIBLE__STATUS__STATUS_INVALID_TASK, "");
    cr_assert_eq(cr_store_complete(st, r, &prev), 0);
    cr_assert_eq(prev.state, CR_JOB_QUEUED);
    cr_assert_eq(r->seq, 2);
    s_free(r);
    CHECK(st);

    /* requeue and unassign need ASSIGNED */
    cr_assert_eq(cr_store_requeue(st, "b", "j2", 3, "x", NULL), CR_E_STATE);
    cr_assert_eq(cr_store_unassign(st, "b", "j2"), CR_E_STATE);
    cr_assert_eq(cr_store_assign(st, "b", "j2", "w1", 2000, NULL), 0);
    cr_assert_eq(cr_store_unassign(st, "b", "j2"), 0);
    cr_store_job_info_t info;
    cr_assert_eq(cr_store_job_get(st, "b", "j2", &info), 0);
    cr_assert_eq(info.state, CR_JOB_QUEUED);
    cr_assert_eq(info.attempt, 1, "an Assign that never left does not count");
    cr_assert_str_eq(info.worker_id, "");
    CHECK(st);
    cr_assert_eq(cr_store_assign(st, "b", "j2", "w1", 2000, NULL), 0);
    Crucible__RewardRecord *done = (void *)1;
    cr_assert_eq(cr_store_requeue(st, "b", "j2", 3, "lost", &done), 0);
    cr_assert_null(done);
    cr_assert_eq(cr_store_job_get(st, "b", "j2", &info), 0);
    cr_assert_eq(info.state, CR_JOB_QUEUED);
    cr_assert_eq(info.attempt, 2, "a lost try counts");
    CHECK(st);

    cr_store_counts_t counts;
    cr_assert_eq(cr_store_counts(st, &counts), 0);
    cr_assert_eq(counts.queued, 1);
    cr_assert_eq(counts.assigned, 0);
    cr_assert_eq(counts.done, 2);
    cr_store_batch_t b;
    cr_assert_eq(cr_store_batch_get(st, "b", &b), 0);
    cr_assert_eq(b.total, 3);
    cr_assert_eq(b.done, 2);
    cr_assert_eq(b.last_seq, 2);
    cr_assert_str_eq(b.owner, "client1");
    cr_assert_eq(cr_store_batch_get(st, "zz", &b), CR_E_NOT_FOUND);
    cr_store_close(&st);
    cr_assert_null(st);
}

Test(store, first_record_wins)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 1, 0, "c");
    /* w1 takes it, is declared lost, w2 retries it */
    cr_assert_eq(cr_store_assign(st, "b", "j0", "w1", 10, NULL), 0);
    cr_assert_eq(cr_store_requeue(st, "b", "j0", 3, "w1 lost", NULL), 0);
    cr_assert_eq(cr_store_assign(st, "b", "j0", "w2", 20, NULL), 0);
    CHECK(st);
    /* w1's late result arrives first: it wins, and says who held the job */
    Crucible__RewardRecord *late = s_rec("b", "j0", CRUCIBLE__STATUS__STATUS_INCORRECT, "w1");
    late->attempt = 1;
    cr_store_job_info_t prev;
    cr_assert_eq(cr_store_complete(st, late, &prev), 0);
    cr_assert_eq(prev.state, CR_JOB_ASSIGNED);
    cr_assert_str_eq(prev.worker_id, "w2");
    cr_assert_eq(late->attempt, 1, "the record keeps the attempt it reports");
    s_free(late);
    /* w2's, and any resend, are duplicates that change nothing */
    for (int i = 0; i < 2; i++) {
        Crucible__RewardRecord *dup = s_rec("b", "j0", CRUCIBLE__STATUS__STATUS_OK, "w2");
        cr_assert_eq(cr_store_complete(st, dup, &prev), CR_E_DUPLICATE);
        cr_assert_eq(prev.state, CR_JOB_DONE);
        cr_assert_eq(prev.seq, 1);
        s_free(dup);
    }
    cr_assert_eq(cr_store_requeue(st, "b", "j0", 3, "x", NULL), CR_E_STATE);
    s_seen_t seen = {0};
    cr_assert_eq(cr_store_records(st, "b", 0, s_collect, &seen), 0);
    cr_assert_eq(seen.n, 1, "exactly one record per job");
    cr_assert_eq(seen.status[0], CRUCIBLE__STATUS__STATUS_INCORRECT);
    cr_assert_str_eq(seen.msg[0], "w1");
    Crucible__RewardRecord *ghost = s_rec("b", "nope", CRUCIBLE__STATUS__STATUS_OK, "w2");
    cr_assert_eq(cr_store_complete(st, ghost, NULL), CR_E_NOT_FOUND);
    s_free(ghost);
    CHECK(st);
    cr_store_close(&st);
}

Test(store, seq_contiguous)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 50, 0, "c");
    s_batch(st, "other", 5, 0, "c");
    /* complete in a scrambled order, interleaved with another batch */
    for (int k = 0; k < 50; k++) {
        char job[16];
        snprintf(job, sizeof job, "j%d", (k * 17) % 50);
        Crucible__RewardRecord *r = s_rec("b", job, CRUCIBLE__STATUS__STATUS_OK, "w");
        cr_assert_eq(cr_store_complete(st, r, NULL), 0);
        cr_assert_eq(r->seq, (uint64_t)k + 1);
        s_free(r);
        if (k % 10 == 0) {
            snprintf(job, sizeof job, "j%d", k / 10);
            r = s_rec("other", job, CRUCIBLE__STATUS__STATUS_OK, "w");
            cr_assert_eq(cr_store_complete(st, r, NULL), 0);
            cr_assert_eq(r->seq, (uint64_t)k / 10 + 1, "seqs count per batch");
            s_free(r);
        }
        CHECK(st);
    }
    s_seen_t seen = {0};
    cr_assert_eq(cr_store_records(st, "b", 0, s_collect, &seen), 0);
    cr_assert_eq(seen.n, 50);
    for (int i = 0; i < 50; i++)
        cr_assert_eq(seen.seq[i], (uint64_t)i + 1);
    cr_assert_str_eq(seen.job[1], "j17");
    memset(&seen, 0, sizeof seen);
    cr_assert_eq(cr_store_records(st, "b", 20, s_collect, &seen), 0);
    cr_assert_eq(seen.n, 30, "a resume after seq 20 gets 21..50");
    cr_assert_eq(seen.seq[0], 21);
    cr_store_close(&st);
}

Test(store, requeue_until_infra_error)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 1, 0, "c");
    Crucible__RewardRecord *done = NULL;
    for (uint32_t attempt = 1; attempt <= 2; attempt++) {
        cr_store_assigned_t a;
        cr_assert_eq(cr_store_assign(st, "b", "j0", "w1", 5, &a), 0);
        cr_assert_eq(a.attempt, attempt);
        cr_store_assigned_free(&a);
        cr_assert_eq(cr_store_requeue(st, "b", "j0", 2, "3 heartbeats missed", &done), 0);
        CHECK(st);
        if (attempt < 2)
            cr_assert_null(done);
    }
    cr_assert_not_null(done, "the last allowed attempt was lost: INFRA_ERROR");
    cr_assert_eq(done->status, CRUCIBLE__STATUS__STATUS_INFRA_ERROR);
    cr_assert_eq(done->seq, 1);
    cr_assert_eq(done->attempt, 2);
    cr_assert_eq(done->has_reward, 0);
    cr_assert_not_null(strstr(done->message, "3 heartbeats missed"), "%s", done->message);
    cr_assert_not_null(strstr(done->message, "quarantined: worker lost on 2 attempts"), "%s",
                       done->message);
    cr_assert_str_eq(done->task, "t");
    s_free(done);
    cr_assert_eq(s_state(st, "b", "j0"), CR_JOB_DONE);
    uint32_t by[CR_STORE_NSTATUS] = {0};
    cr_assert_eq(cr_store_batch_counts(st, "b", by, NULL, NULL), 0);
    cr_assert_eq(by[CRUCIBLE__STATUS__STATUS_INFRA_ERROR], 1);
    CHECK(st);
    cr_store_close(&st);
}

typedef struct {
    int n;
    char job[8][16];
    char worker[8][16];
    uint64_t seq[8];
} s_cancels_t;

static void s_on_cancel(const Crucible__RewardRecord *rec, const char *prev_worker, void *arg)
{
    s_cancels_t *c = arg;
    cr_assert_eq(rec->status, CRUCIBLE__STATUS__STATUS_CANCELLED);
    snprintf(c->job[c->n], sizeof c->job[0], "%s", rec->job_id);
    snprintf(c->worker[c->n], sizeof c->worker[0], "%s", prev_worker);
    c->seq[c->n] = rec->seq;
    c->n++;
}

Test(store, cancel)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 4, 0, "c");
    s_batch(st, "keep", 2, 0, "c");
    Crucible__RewardRecord *r = s_rec("b", "j0", CRUCIBLE__STATUS__STATUS_OK, "w1");
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    s_free(r);
    cr_assert_eq(cr_store_assign(st, "b", "j1", "w1", 5, NULL), 0);

    s_cancels_t got = {0};
    uint32_t n = 0;
    cr_assert_eq(cr_store_cancel(st, "b", "", s_on_cancel, &got, &n), 0);
    cr_assert_eq(n, 3, "the done job keeps its record");
    cr_assert_eq(got.n, 3);
    cr_assert_str_eq(got.job[0], "j1");
    cr_assert_str_eq(got.worker[0], "w1", "the holder of a running job is named");
    cr_assert_str_eq(got.worker[1], "");
    cr_assert_eq(got.seq[0], 2);
    cr_assert_eq(got.seq[2], 4);
    CHECK(st);
    cr_assert_eq(s_state(st, "keep", "j0"), CR_JOB_QUEUED, "other batches untouched");

    /* again: nothing left */
    cr_assert_eq(cr_store_cancel(st, "b", "", NULL, NULL, &n), 0);
    cr_assert_eq(n, 0);
    /* one job; unknown ones */
    cr_assert_eq(cr_store_cancel(st, "keep", "j1", NULL, NULL, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(s_state(st, "keep", "j1"), CR_JOB_DONE);
    cr_assert_eq(s_state(st, "keep", "j0"), CR_JOB_QUEUED);
    cr_assert_eq(cr_store_cancel(st, "keep", "nope", NULL, NULL, &n), CR_E_NOT_FOUND);
    cr_assert_eq(cr_store_cancel(st, "nope", "", NULL, NULL, &n), CR_E_NOT_FOUND);
    /* a cancelled job's late result is a duplicate */
    r = s_rec("b", "j1", CRUCIBLE__STATUS__STATUS_OK, "w1");
    cr_assert_eq(cr_store_complete(st, r, NULL), CR_E_DUPLICATE);
    s_free(r);
    uint32_t by[CR_STORE_NSTATUS] = {0};
    cr_assert_eq(cr_store_batch_counts(st, "b", by, NULL, NULL), 0);
    cr_assert_eq(by[CRUCIBLE__STATUS__STATUS_CANCELLED], 3);
    cr_assert_eq(by[CRUCIBLE__STATUS__STATUS_OK], 1);
    CHECK(st);
    cr_store_close(&st);
}

Test(store, restart)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 4, 0, "c");
    Crucible__RewardRecord *r = s_rec("b", "j0", CRUCIBLE__STATUS__STATUS_OK, "w1");
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    s_free(r);
    cr_assert_eq(cr_store_assign(st, "b", "j1", "w1", 5, NULL), 0);
    cr_assert_eq(cr_store_assign(st, "b", "j2", "w2", 5, NULL), 0);
    cr_assert_eq(cr_store_requeue(st, "b", "j2", 3, "lost", NULL), 0);
    cr_assert_eq(cr_store_assign(st, "b", "j2", "w2", 6, NULL), 0);
    CHECK(st);
    cr_store_close(&st);

    /* the coordinator comes back: assigned jobs are queued again, attempts
     * as they were, records and seqs intact */
    st = s_open();
    CHECK(st);
    cr_store_job_info_t info;
    cr_assert_eq(cr_store_job_get(st, "b", "j1", &info), 0);
    cr_assert_eq(info.state, CR_JOB_QUEUED);
    cr_assert_eq(info.attempt, 1);
    cr_assert_eq(cr_store_job_get(st, "b", "j2", &info), 0);
    cr_assert_eq(info.state, CR_JOB_QUEUED);
    cr_assert_eq(info.attempt, 2);
    cr_assert_eq(cr_store_job_get(st, "b", "j0", &info), 0);
    cr_assert_eq(info.state, CR_JOB_DONE);
    cr_assert_eq(info.seq, 1);
    s_seen_t seen = {0};
    cr_assert_eq(cr_store_records(st, "b", 0, s_collect, &seen), 0);
    cr_assert_eq(seen.n, 1);
    cr_assert_str_eq(seen.job[0], "j0");
    r = s_rec("b", "j3", CRUCIBLE__STATUS__STATUS_OK, "w1");
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    cr_assert_eq(r->seq, 2, "seq continues after the restart");
    s_free(r);
    uint32_t n = 1;
    cr_assert_eq(cr_store_recover(st, &n), 0);
    cr_assert_eq(n, 0);
    CHECK(st);
    cr_store_close(&st);
}

Test(store, bulk_insert_and_duplicates)
{
    cr_store_t *st = s_open();
    int64_t t0 = cr_time_mono_ms();
    s_batch(st, "big", 1000, 0, "c");
    int64_t ms = cr_time_mono_ms() - t0;
    /* one transaction: a few ms on any disk; 1000 fsyncs would take seconds */
    cr_assert_lt(ms, 1000, "1000 jobs took %lld ms", (long long)ms);
    cr_store_batch_t b;
    cr_assert_eq(cr_store_batch_get(st, "big", &b), 0);
    cr_assert_eq(b.total, 1000);

    /* resubmitting is idempotent */
    Crucible__JobSpec js = CRUCIBLE__JOB_SPEC__INIT;
    uint8_t spec[64];
    size_t len = crucible__job_spec__pack(&js, spec);
    cr_store_job_in_t jobs[3] = {
        {.job_id = "j0", .task_hash = "h1", .language = "c", .group_id = "", .spec = spec,
         .spec_len = len},
        {.job_id = "new", .task_hash = "h1", .language = "c", .group_id = "", .spec = spec,
         .spec_len = len},
        {.job_id = "j999", .task_hash = "h1", .language = "c", .group_id = "", .spec = spec,
         .spec_len = len},
    };
    uint32_t added = 0, dup = 0;
    cr_assert_eq(cr_store_add_jobs(st, "big", jobs, 3, 1, &added, &dup), 0);
    cr_assert_eq(added, 1);
    cr_assert_eq(dup, 2);
    cr_assert(!jobs[0].is_new && jobs[1].is_new && !jobs[2].is_new);
    cr_assert_eq(cr_store_batch_get(st, "big", &b), 0);
    cr_assert_eq(b.total, 1001);

    /* a bad job refuses the whole call */
    jobs[1].job_id = "other";
    jobs[2].task_hash = "no-such-task";
    cr_assert_eq(cr_store_add_jobs(st, "big", jobs, 3, 1, &added, &dup), CR_E_USAGE);
    cr_assert_eq(added, 0);
    cr_store_job_info_t info;
    cr_assert_eq(cr_store_job_get(st, "big", "other", &info), CR_E_NOT_FOUND, "rolled back");
    cr_assert_eq(cr_store_add_jobs(st, "nope", jobs, 1, 1, &added, &dup), CR_E_NOT_FOUND);

    uint64_t q = 0;
    cr_assert_eq(cr_store_queued_by_owner(st, "c", &q), 0);
    cr_assert_eq(q, 1001);
    cr_assert_eq(cr_store_queued_by_owner(st, "someone-else", &q), 0);
    cr_assert_eq(q, 0);
    CHECK(st);
    cr_store_close(&st);
}

Test(store, transaction_rollback)
{
    cr_store_t *st = s_open();
    cr_assert_eq(cr_store_begin(st), 0);
    s_batch(st, "b", 5, 0, "c");
    cr_store_rollback(st);
    cr_store_batch_t b;
    cr_assert_eq(cr_store_batch_get(st, "b", &b), CR_E_NOT_FOUND);
    cr_store_counts_t counts;
    cr_assert_eq(cr_store_counts(st, &counts), 0);
    cr_assert_eq(counts.queued, 0);
    cr_assert_eq(cr_store_begin(st), 0);
    s_batch(st, "b", 5, 0, "c");
    cr_assert_eq(cr_store_commit(st), 0);
    cr_assert_eq(cr_store_batch_get(st, "b", &b), 0);
    cr_assert_eq(b.total, 5);
    CHECK(st);
    cr_store_close(&st);
}

typedef struct {
    int n;
    char name[8][32];
    uint32_t count[8];
} s_flags_seen_t;

static void s_on_flag(const char *flag, uint32_t count, void *arg)
{
    s_flags_seen_t *f = arg;
    snprintf(f->name[f->n], sizeof f->name[0], "%s", flag);
    f->count[f->n++] = count;
}

static uint32_t s_flag(const s_flags_seen_t *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->name[i], name) == 0)
            return f->count[i];
    return 0;
}

typedef struct {
    int n;
    char group[8][16];
    uint64_t last[8];
} s_groups_seen_t;

static void s_on_group(const char *group, uint64_t last_seq, void *arg)
{
    s_groups_seen_t *g = arg;
    snprintf(g->group[g->n], sizeof g->group[0], "%s", group);
    g->last[g->n++] = last_seq;
}

static long s_sql_count(const char *sql);

Test(store, groups_flags_advantages)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 4, 2, "c"); /* g0: j0 j2; g1: j1 j3 */
    const char *flags1[] = {"input_modified", "timing_below_floor"};
    const char *flags2[] = {"timing_below_floor"};
    Crucible__RewardRecord *r = s_rec("b", "j0", CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "w");
    r->n_hack_flags = 2;
    r->hack_flags = malloc(2 * sizeof(char *));
    r->hack_flags[0] = strdup(flags1[0]);
    r->hack_flags[1] = strdup(flags1[1]);
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    cr_assert_str_eq(r->group_id, "g0", "the group comes from the stored spec");
    s_free(r);
    uint32_t members = 0, done = 0;
    uint64_t last = 0;
    cr_assert_eq(cr_store_group_state(st, "b", "g0", &members, &done, &last), 0);
    cr_assert_eq(members, 2);
    cr_assert_eq(done, 1);
    r = s_rec("b", "j2", CRUCIBLE__STATUS__STATUS_OK, "w");
    r->n_hack_flags = 1;
    r->hack_flags = malloc(sizeof(char *));
    r->hack_flags[0] = strdup(flags2[0]);
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    s_free(r);
    cr_assert_eq(cr_store_group_state(st, "b", "g0", &members, &done, &last), 0);
    cr_assert_eq(done, 2);
    cr_assert_eq(last, 2);
    r = s_rec("b", "j1", CRUCIBLE__STATUS__STATUS_OK, "w");
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    s_free(r);

    s_groups_seen_t g = {0};
    cr_assert_eq(cr_store_groups_done(st, "b", s_on_group, &g), 0);
    cr_assert_eq(g.n, 1, "g1 still has a job running");
    cr_assert_str_eq(g.group[0], "g0");
    cr_assert_eq(g.last[0], 2);

    s_seen_t seen = {0};
    cr_assert_eq(cr_store_group_records(st, "b", "g0", s_collect, &seen), 0);
    cr_assert_eq(seen.n, 2);

    s_flags_seen_t f = {0};
    uint32_t by[CR_STORE_NSTATUS] = {0};
    cr_assert_eq(cr_store_batch_counts(st, "b", by, s_on_flag, &f), 0);
    cr_assert_eq(by[CRUCIBLE__STATUS__STATUS_OK], 2);
    cr_assert_eq(by[CRUCIBLE__STATUS__STATUS_HACK_DETECTED], 1);
    cr_assert_eq(f.n, 2);
    cr_assert_eq(s_flag(&f, "timing_below_floor"), 2);
    cr_assert_eq(s_flag(&f, "input_modified"), 1);

    cr_assert_eq(cr_store_set_advantage(st, "b", "j0", -0.5), 0);
    cr_assert_eq(cr_store_set_advantage(st, "b", "j3", 1.0), CR_E_STATE);
    cr_assert_eq(cr_store_set_advantage(st, "b", "zz", 1.0), CR_E_NOT_FOUND);
    CHECK(st);
    cr_store_close(&st);
    /* the flag counts read the flagged records through their own partial
     * index, not every record of the batch (a BatchDone of a million) */
    cr_assert_eq(s_sql_count("SELECT count(*) FROM records INDEXED BY records_flagged"
                             " WHERE batch_id = 'b' AND flags <> ''"),
                 2);
    cr_assert_eq(s_sql_count("SELECT count(*) FROM records WHERE batch_id = 'b'"), 3);
}

static int s_get_adv(const Crucible__RewardRecord *rec, void *arg)
{
    if (strcmp(rec->job_id, "j0") == 0)
        *(double *)arg = rec->advantage;
    return 0;
}

Test(store, advantage_is_stored)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 2, 1, "c");
    for (int i = 0; i < 2; i++) {
        Crucible__RewardRecord *r = s_rec("b", i ? "j1" : "j0", CRUCIBLE__STATUS__STATUS_OK, "w");
        cr_assert_eq(cr_store_complete(st, r, NULL), 0);
        s_free(r);
    }
    cr_assert_eq(cr_store_set_advantage(st, "b", "j0", 0.75), 0);
    double adv = 0;
    cr_assert_eq(cr_store_records(st, "b", 0, s_get_adv, &adv), 0);
    cr_assert_float_eq(adv, 0.75, 1e-12);
    CHECK(st);
    cr_store_close(&st);
}

/* The checker must catch a broken store, or it proves nothing. */
/* Completes job of batch "b" with status (the worker's name as message). */
static void s_complete(cr_store_t *st, const char *job, int status, const char *worker)
{
    Crucible__RewardRecord *r = s_rec("b", job, status, worker);
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    s_free(r);
}

/* A count from the database by SQL, through a connection of the test's own. */
static long s_sql_count(const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(s_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    long n = (long)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

/* Records are appended to their own table, never written into the job's
 * row, and a restart finds every one of them: DONE jobs, their seqs, the
 * replay after a seq, group state, and the queue of the rest. */
Test(store, records_appended_and_recovered)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 6, 2, "c");
    cr_assert_eq(cr_store_begin(st), 0);
    const char *done[] = {"j3", "j0", "j4", "j1"};
    for (int i = 0; i < 4; i++)
        s_complete(st, done[i], CRUCIBLE__STATUS__STATUS_OK, "w1");
    cr_assert_eq(cr_store_commit(st), 0);
    CHECK(st);
    cr_assert_eq(s_sql_count("SELECT count(*) FROM records WHERE batch_id = 'b'"), 4);
    cr_assert_eq(s_sql_count("SELECT count(*) FROM jobs WHERE state <> 0 OR seq IS NOT NULL OR "
                             "record IS NOT NULL"), 0, "a record was written into its job's row");
    cr_store_close(&st);

    st = s_open();
    CHECK(st);
    for (int i = 0; i < 4; i++) {
        cr_store_job_info_t info;
        cr_assert_eq(cr_store_job_get(st, "b", done[i], &info), 0);
        cr_assert_eq(info.state, CR_JOB_DONE, "%s", done[i]);
        cr_assert_eq(info.seq, (uint64_t)i + 1, "%s", done[i]);
    }
    cr_assert_eq(s_state(st, "b", "j2"), CR_JOB_QUEUED);
    cr_assert_eq(s_state(st, "b", "j5"), CR_JOB_QUEUED);
    s_seen_t seen = {0};
    cr_assert_eq(cr_store_records(st, "b", 1, s_collect, &seen), 0);
    cr_assert_eq(seen.n, 3, "the replay after seq 1");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(seen.seq[i], (uint64_t)i + 2);
        cr_assert_str_eq(seen.job[i], done[i + 1]);
        cr_assert_str_eq(seen.msg[i], "w1");
    }
    /* j0 j2 j4 are group g0: j2 is not done; g1 (j1 j3 j5) neither */
    uint32_t members = 0, got = 0;
    uint64_t last = 0;
    cr_assert_eq(cr_store_group_state(st, "b", "g0", &members, &got, &last), 0);
    cr_assert_eq(members, 3);
    cr_assert_eq(got, 2);
    cr_assert_eq(last, 3);
    /* the rest finishes after the restart, its seqs following on */
    Crucible__RewardRecord *r = s_rec("b", "j2", CRUCIBLE__STATUS__STATUS_INCORRECT, "w2");
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    cr_assert_eq(r->seq, 5);
    s_free(r);
    cr_assert_eq(cr_store_group_state(st, "b", "g0", &members, &got, &last), 0);
    cr_assert_eq(got, 3);
    CHECK(st);
    cr_store_close(&st);
}

/* A database of the version that kept each record in its job's row: the
 * records move to their table at open, once, and nothing is lost. */
Test(store, records_of_the_old_layout_are_moved)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 3, 0, "c");
    s_complete(st, "j0", CRUCIBLE__STATUS__STATUS_OK, "w");
    s_complete(st, "j1", CRUCIBLE__STATUS__STATUS_OK, "w");
    cr_store_close(&st);
    /* make it what the older version wrote */
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(s_db, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "BEGIN; UPDATE jobs SET state = 2, seq = r.seq, status = r.status,"
                              " flags = r.flags, record = r.record, worker_id = r.worker_id,"
                              " t_assigned = r.t_assigned FROM records r WHERE r.job = jobs.rowid;"
                              " DROP TABLE records; CREATE UNIQUE INDEX jobs_seq_set ON"
                              " jobs(batch_id, seq) WHERE seq IS NOT NULL;"
                              " PRAGMA user_version = 0; COMMIT;",
                              NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    st = s_open();
    CHECK(st);
    cr_assert_eq(s_state(st, "b", "j0"), CR_JOB_DONE);
    cr_assert_eq(s_state(st, "b", "j1"), CR_JOB_DONE);
    cr_assert_eq(s_state(st, "b", "j2"), CR_JOB_QUEUED);
    s_seen_t seen = {0};
    cr_assert_eq(cr_store_records(st, "b", 0, s_collect, &seen), 0);
    cr_assert_eq(seen.n, 2);
    cr_assert_str_eq(seen.job[0], "j0");
    cr_assert_str_eq(seen.job[1], "j1");
    Crucible__RewardRecord *r = s_rec("b", "j2", CRUCIBLE__STATUS__STATUS_OK, "w");
    cr_assert_eq(cr_store_complete(st, r, NULL), 0);
    cr_assert_eq(r->seq, 3);
    s_free(r);
    CHECK(st);
    cr_store_close(&st);
    cr_assert_eq(s_sql_count("PRAGMA user_version"), 1);
    cr_assert_eq(s_sql_count("SELECT count(*) FROM records"), 3);
}

Test(store, check_catches_violations)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 3, 0, "c");
    for (int i = 0; i < 2; i++) {
        Crucible__RewardRecord *r = s_rec("b", i ? "j1" : "j0", CRUCIBLE__STATUS__STATUS_OK, "w");
        cr_assert_eq(cr_store_complete(st, r, NULL), 0);
        s_free(r);
    }
    CHECK(st);
    static const struct {
        const char *sql;
        const char *expect;
    } breaks[] = {
        /* a DONE job's record, seq and status are its row of records */
        {"UPDATE records SET seq = 5 WHERE job = (SELECT rowid FROM jobs WHERE job_id = 'j1')",
         "(7)"},
        {"UPDATE jobs SET state = 1 WHERE job_id = 'j2'", "(4)"},
        {"UPDATE records SET record = x'' WHERE job = (SELECT rowid FROM jobs WHERE job_id = "
         "'j0')", "(5)"},
        {"UPDATE jobs SET state = 2 WHERE job_id = 'j2'", "(5)"},
        {"UPDATE records SET job = 999 WHERE job = (SELECT rowid FROM jobs WHERE job_id = 'j1')",
         "(5)"},
        {"UPDATE jobs SET attempt = 0 WHERE job_id = 'j2'", "(2)"},
        {"UPDATE jobs SET worker_id = 'w' WHERE job_id = 'j2'", "(3)"},
        {"UPDATE records SET status = 8 WHERE job = (SELECT rowid FROM jobs WHERE job_id = 'j0')",
         "(5)"},
        {"UPDATE batches SET total = 7", "(6)"},
        {"DELETE FROM tasks", "(8)"},
    };
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        sqlite3 *db = NULL;
        cr_assert_eq(sqlite3_open(s_db, &db), SQLITE_OK);
        cr_assert_eq(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_exec(db, breaks[i].sql, NULL, NULL, NULL), SQLITE_OK);
        char err[512] = "";
        /* seen through the store's own connection once committed */
        cr_assert_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
        cr_assert_eq(cr_store_check(st, err, sizeof err), CR_E_STATE, "%s went unnoticed",
                     breaks[i].sql);
        cr_assert_not_null(strstr(err, breaks[i].expect), "%s: %s", breaks[i].sql, err);
        /* put it back by hand: restore from a fresh store */
        sqlite3_close(db);
        cr_store_close(&st);
        cr_file_rmtree(s_dir);
        cr_assert_eq(cr_file_mkdirs(s_dir, 0700), 0);
        st = s_open();
        s_batch(st, "b", 3, 0, "c");
        for (int k = 0; k < 2; k++) {
            Crucible__RewardRecord *r =
                s_rec("b", k ? "j1" : "j0", CRUCIBLE__STATUS__STATUS_OK, "w");
            cr_assert_eq(cr_store_complete(st, r, NULL), 0);
            s_free(r);
        }
        CHECK(st);
    }
    cr_store_close(&st);
}

/* Queue timeout: only jobs of batches that set one, only QUEUED ones, only
 * once they waited longer than it; the rest is untouched. */
static void s_on_expired(const Crucible__RewardRecord *rec, const char *prev_worker, void *arg)
{
    s_cancels_t *c = arg;
    cr_assert_str_eq(prev_worker, "");
    cr_assert_eq(rec->status, CRUCIBLE__STATUS__STATUS_INFRA_ERROR);
    cr_assert_not_null(strstr(rec->message, "without a worker (queue timeout 5 s)"), "%s",
                       rec->message);
    if (c->n < 8) {
        snprintf(c->job[c->n], sizeof c->job[0], "%s", rec->job_id);
        c->seq[c->n++] = rec->seq;
    }
}

Test(store, queue_timeout)
{
    cr_store_t *st = s_open();
    s_batch(st, "plain", 2, 0, "c"); /* no queue timeout */
    Crucible__JobOptions o = CRUCIBLE__JOB_OPTIONS__INIT;
    o.reward = "default";
    o.queue_timeout_s = 5;
    uint8_t ob[256];
    size_t olen = crucible__job_options__pack(&o, ob);
    int64_t t0 = cr_time_now_ms();
    cr_assert_eq(cr_store_add_batch(st, "b", "c", ob, olen, t0, NULL), 0);
    Crucible__JobSpec js = CRUCIBLE__JOB_SPEC__INIT;
    uint8_t spec[3][64];
    cr_store_job_in_t jobs[3];
    const char *ids[3] = {"q0", "q1", "run"};
    for (int i = 0; i < 3; i++) {
        js.job_id = (char *)ids[i];
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].job_id = ids[i];
        jobs[i].task_hash = "h1";
        jobs[i].language = "c";
        jobs[i].group_id = "";
        jobs[i].spec = spec[i];
        jobs[i].spec_len = crucible__job_spec__pack(&js, spec[i]);
    }
    uint32_t added = 0, dup = 0;
    cr_assert_eq(cr_store_add_jobs(st, "b", jobs, 3, t0, &added, &dup), 0);
    cr_assert_eq(cr_store_assign(st, "b", "run", "w1", t0 + 1000, NULL), 0);

    s_cancels_t seen = {0};
    uint32_t n = 99;
    cr_assert_eq(cr_store_expire_queued(st, t0 + 4000, s_on_expired, &seen, &n), 0);
    cr_assert_eq(n, 0, "nothing waited 5 s yet");
    cr_assert_eq(cr_store_expire_queued(st, t0 + 6000, s_on_expired, &seen, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(seen.n, 2);
    cr_assert_str_eq(seen.job[0], "q0");
    cr_assert_str_eq(seen.job[1], "q1");
    cr_assert_eq(seen.seq[0], 1);
    cr_assert_eq(seen.seq[1], 2);
    cr_assert_eq(s_state(st, "b", "run"), CR_JOB_ASSIGNED, "a running job is not expired");
    cr_assert_eq(s_state(st, "plain", "j0"), CR_JOB_QUEUED, "no timeout set: waits forever");
    /* requeued after a lost worker: it waits from its last assignment */
    cr_assert_eq(cr_store_requeue(st, "b", "run", 3, "lost", NULL), 0);
    cr_assert_eq(cr_store_expire_queued(st, t0 + 5500, s_on_expired, &seen, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(cr_store_expire_queued(st, t0 + 6500, s_on_expired, &seen, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(s_state(st, "b", "run"), CR_JOB_DONE);
    CHECK(st);
    cr_store_close(&st);
}

/* A turn's records are written together (multi-row UPDATEs at the commit):
 * hundreds in one transaction come out whole and in seq order, a rollback
 * leaves none of them, and a reader inside the transaction sees them. */
static int s_count_rec(const Crucible__RewardRecord *rec, void *arg)
{
    uint64_t *next = arg;
    cr_assert_eq(rec->seq, *next, "seq %llu, expected %llu", (unsigned long long)rec->seq,
                 (unsigned long long)*next);
    (*next)++;
    return 0;
}

Test(store, many_records_in_one_transaction)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 300, 0, "c");
    cr_assert_eq(cr_store_begin(st), 0);
    for (int i = 0; i < 150; i++) {
        char id[16];
        snprintf(id, sizeof id, "j%d", i);
        Crucible__RewardRecord *r = s_rec("b", id, CRUCIBLE__STATUS__STATUS_OK, "w");
        cr_assert_eq(cr_store_complete(st, r, NULL), 0);
        s_free(r);
    }
    uint64_t next = 1; /* a read inside the transaction sees the 150 */
    cr_assert_eq(cr_store_records(st, "b", 0, s_count_rec, &next), 0);
    cr_assert_eq(next, 151);
    for (int i = 150; i < 300; i++) {
        char id[16];
        snprintf(id, sizeof id, "j%d", i);
        Crucible__RewardRecord *r = s_rec("b", id, CRUCIBLE__STATUS__STATUS_OK, "w");
        cr_assert_eq(cr_store_complete(st, r, NULL), 0);
        s_free(r);
    }
    /* a duplicate inside the same transaction is known as one */
    Crucible__RewardRecord *r = s_rec("b", "j299", CRUCIBLE__STATUS__STATUS_OK, "w");
    cr_assert_eq(cr_store_complete(st, r, NULL), CR_E_DUPLICATE);
    s_free(r);
    cr_assert_eq(cr_store_commit(st), 0);
    CHECK(st);
    next = 1;
    cr_assert_eq(cr_store_records(st, "b", 0, s_count_rec, &next), 0);
    cr_assert_eq(next, 301);

    s_batch(st, "b2", 130, 0, "c");
    cr_assert_eq(cr_store_begin(st), 0);
    for (int i = 0; i < 130; i++) {
        char id[16];
        snprintf(id, sizeof id, "j%d", i);
        r = s_rec("b2", id, CRUCIBLE__STATUS__STATUS_OK, "w");
        cr_assert_eq(cr_store_complete(st, r, NULL), 0);
        s_free(r);
    }
    cr_store_rollback(st);
    CHECK(st);
    cr_store_batch_t b;
    cr_assert_eq(cr_store_batch_get(st, "b2", &b), 0);
    cr_assert_eq(b.done, 0, "a rollback leaves no record");
    cr_assert_eq(s_state(st, "b2", "j7"), CR_JOB_QUEUED);
    cr_store_close(&st);
    /* and the log agrees after a restart */
    st = s_open();
    CHECK(st);
    cr_assert_eq(s_state(st, "b", "j42"), CR_JOB_DONE);
    cr_assert_eq(s_state(st, "b2", "j42"), CR_JOB_QUEUED);
    cr_store_close(&st);
}

/* The live-job table grows by doubling, moved over a few buckets a job
 * (incremental rehash): across two growths every job stays found, and the
 * checker walks both tables. */
Test(store, job_table_grows_in_steps)
{
    cr_store_t *st = s_open();
    s_batch(st, "g", 8193, 0, "c"); /* grows at 4096 and at 8192: the last job is
                                     * added with 8176 buckets still to move */
    CHECK(st);
    for (int i = 0; i < 8193; i += 7) {
        char id[16];
        snprintf(id, sizeof id, "j%d", i);
        cr_assert_eq(s_state(st, "g", id), CR_JOB_QUEUED, "%s lost in the table", id);
    }
    for (int i = 0; i < 8193; i += 13) {
        char id[16];
        snprintf(id, sizeof id, "j%d", i);
        Crucible__RewardRecord *r = s_rec("g", id, CRUCIBLE__STATUS__STATUS_OK, "w");
        cr_assert_eq(cr_store_complete(st, r, NULL), 0);
        s_free(r);
    }
    CHECK(st);
    cr_store_counts_t c;
    cr_assert_eq(cr_store_counts(st, &c), 0);
    cr_assert_eq(c.queued, 8193 - (8193 + 12) / 13);
    cr_store_close(&st);
}

/* The ids of the queue of language c, oldest first, into ids (up to cap). */
static size_t s_queue_ids(cr_store_t *st, char (*ids)[16], size_t cap)
{
    const char *langs[] = {"c"};
    cr_store_key_t *keys = calloc(cap, sizeof *keys);
    size_t n = 0;
    cr_assert_eq(cr_store_next_queued(st, langs, 1, cap, keys, &n), 0);
    for (size_t i = 0; i < n; i++)
        snprintf(ids[i], sizeof ids[i], "%s", keys[i].job_id);
    free(keys);
    return n;
}

/* A Submit's jobs are written 64 to an INSERT with the rowids given: a
 * batch of 150 (two full statements and a tail), then a Submit of 130
 * mixing new ids with DONE ones, a live one and an id given twice in one
 * statement. Each job is new or a duplicate as it was one INSERT a job,
 * its row is the one memory names (the checker, invariant 9; the records
 * of jobs completed then, invariant 5), and a restart finds exactly the
 * jobs not done, in submission order, each with its own spec. */
Test(store, multi_row_submit_recovers_after_restart)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 150, 4, "c");
    CHECK(st);
    s_complete(st, "j3", CRUCIBLE__STATUS__STATUS_OK, "w");
    s_complete(st, "j100", CRUCIBLE__STATUS__STATUS_OK, "w");

    enum { N = 130 };
    cr_store_job_in_t jobs[N];
    char ids[N][16];
    uint8_t specs[N][64];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "n%d", i);
        if (i == 10)
            snprintf(ids[i], sizeof ids[i], "j3"); /* DONE */
        if (i == 20)
            snprintf(ids[i], sizeof ids[i], "n5"); /* twice in the first 64 */
        if (i == 30)
            snprintf(ids[i], sizeof ids[i], "j7"); /* live */
        if (i == 70)
            snprintf(ids[i], sizeof ids[i], "j100"); /* DONE, in the second 64 */
        Crucible__JobSpec js = CRUCIBLE__JOB_SPEC__INIT;
        js.job_id = ids[i];
        js.task = "t";
        js.sample_index = (uint32_t)i;
        jobs[i].job_id = ids[i];
        jobs[i].task_hash = "h1";
        jobs[i].language = "c";
        jobs[i].group_id = i % 3 ? "" : "gn";
        jobs[i].spec = specs[i];
        jobs[i].spec_len = crucible__job_spec__pack(&js, specs[i]);
    }
    uint32_t added = 0, dup = 0;
    cr_assert_eq(cr_store_add_jobs(st, "b", jobs, N, cr_time_now_ms(), &added, &dup), 0);
    cr_assert_eq(added, N - 4);
    cr_assert_eq(dup, 4);
    for (int i = 0; i < N; i++)
        cr_assert_eq(jobs[i].is_new, !(i == 10 || i == 20 || i == 30 || i == 70), "%d", i);
    CHECK(st);
    s_complete(st, "n0", CRUCIBLE__STATUS__STATUS_OK, "w");
    s_complete(st, "n65", CRUCIBLE__STATUS__STATUS_INCORRECT, "w");
    s_complete(st, "n129", CRUCIBLE__STATUS__STATUS_OK, "w");
    CHECK(st);

    static char before[512][16], after[512][16];
    size_t nb = s_queue_ids(st, before, 512);
    cr_assert_eq(nb, 148 + (N - 4) - 3);
    cr_assert_str_eq(before[0], "j0");
    cr_assert_str_eq(before[148], "n1", "the new jobs follow the batch's, in their order");
    cr_assert_str_eq(before[nb - 1], "n128");
    cr_store_close(&st);

    st = s_open();
    CHECK(st);
    size_t na = s_queue_ids(st, after, 512);
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++)
        cr_assert_str_eq(after[i], before[i], "queue position %zu", i);
    for (size_t i = 148; i < na; i++) { /* the new jobs: each row holds its own spec */
        cr_store_assigned_t a;
        cr_assert_eq(cr_store_assign_spec(st, "b", after[i], "w", cr_time_now_ms(), &a), 0);
        Crucible__JobSpec *js = crucible__job_spec__unpack(NULL, a.spec_len, a.spec);
        cr_assert_not_null(js);
        cr_assert_str_eq(js->job_id, after[i]);
        crucible__job_spec__free_unpacked(js, NULL);
        cr_store_assigned_free(&a);
    }
    cr_store_job_info_t info;
    cr_assert_eq(cr_store_job_get(st, "b", "n65", &info), 0);
    cr_assert_eq(info.state, CR_JOB_DONE);
    CHECK(st);
    cr_store_close(&st);
}

static long s_file_bytes(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* About 6 MiB of records in ten commits: the log passes SQLite's
 * autocheckpoint (1000 pages) several times over. */
static void s_fill_log(cr_store_t *st)
{
    s_batch(st, "b", 2000, 0, "c");
    static char msg[3000];
    memset(msg, 'm', sizeof msg - 1);
    for (int k = 0; k < 10; k++) {
        cr_assert_eq(cr_store_begin(st), 0);
        for (int i = 0; i < 200; i++) {
            char id[16];
            snprintf(id, sizeof id, "j%d", k * 200 + i);
            Crucible__RewardRecord *r = s_rec("b", id, CRUCIBLE__STATUS__STATUS_OK, "w");
            free(r->message);
            r->message = strdup(msg);
            cr_assert_eq(cr_store_complete(st, r, NULL), 0);
            s_free(r);
        }
        cr_assert_eq(cr_store_commit(st), 0);
    }
}

/* Checkpoints on the store's own thread (the coordinator's): the commits
 * return without copying the log back, the thread copies it into the
 * database file meanwhile, and closing ends the thread cleanly; a restart
 * reads every record. */
Test(store, checkpoints_on_a_thread_of_their_own)
{
    cr_store_t *st = s_open();
    cr_assert_eq(cr_store_checkpoint_apart(st), 0);
    cr_assert_eq(cr_store_checkpoint_apart(st), 0, "a second call changes nothing");
    s_fill_log(st);
    long db = 0;
    for (int i = 0; i < 500 && (db = s_file_bytes(s_db)) <= (4L << 20); i++)
        usleep(10000);
    cr_assert_gt(db, 4L << 20, "the thread copied the log back (%ld bytes)", db);
    CHECK(st);
    cr_store_close(&st);
    st = s_open();
    cr_assert_eq(s_sql_count("SELECT count(*) FROM records"), 2000);
    CHECK(st);
    cr_store_close(&st);
}

/* Without the thread, the commit that fills the log copies it back, as
 * SQLite's own autocheckpoint does. */
Test(store, checkpoints_in_the_commit_by_default)
{
    cr_store_t *st = s_open();
    s_fill_log(st);
    cr_assert_gt(s_file_bytes(s_db), 4L << 20);
    CHECK(st);
    cr_store_close(&st);
}

/* A new database is made with CR_STORE_PAGE_BYTES pages (half the WAL
 * writes of SQLite's 4 KiB for a turn's rows); one made before with 4 KiB
 * pages keeps them, opens, stores and recovers; both checkpoint after the
 * same 4 MiB of log, not after as many frames. */
Test(store, new_database_pages_and_old_ones_kept)
{
    cr_store_t *st = s_open();
    cr_assert_eq(s_sql_count("PRAGMA page_size"), 8192);
    s_fill_log(st);
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", s_db);
    cr_assert_gt(s_file_bytes(s_db), 4L << 20, "checkpointed after 4 MiB of 8 KiB frames");
    cr_assert_lt(s_file_bytes(wal), 6L << 20, "the log grew to %ld bytes", s_file_bytes(wal));
    CHECK(st);
    cr_store_close(&st);
    cr_file_rmtree(s_dir);
    cr_assert_eq(mkdir(s_dir, 0700), 0);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(s_db, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL;"
                                  " CREATE TABLE x(a);", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    st = s_open();
    cr_assert_eq(s_sql_count("PRAGMA page_size"), 4096);
    s_fill_log(st);
    cr_assert_gt(s_file_bytes(s_db), 4L << 20);
    CHECK(st);
    cr_store_close(&st);
    st = s_open();
    cr_assert_eq(s_sql_count("SELECT count(*) FROM records"), 2000);
    cr_assert_eq(s_sql_count("PRAGMA page_size"), 4096);
    cr_store_close(&st);
}

typedef struct {
    int n;
    uint8_t blob[2][512];
    size_t len[2];
} s_blobs_t;

static int s_keep_blob(uint64_t seq, const uint8_t *rec, size_t len, void *arg)
{
    s_blobs_t *b = arg;
    (void)seq;
    cr_assert_lt(b->n, 2);
    cr_assert_leq(len, sizeof b->blob[0]);
    memcpy(b->blob[b->n], rec, len);
    b->len[b->n++] = len;
    return 0;
}

/* A worker's record completed with the bytes it came in
 * (cr_store_complete_sent) is stored as those bytes with the store's and
 * the coordinator's fields written after them: the worker's own fields (a
 * host, a field this schema does not know) as sent, its claims to the
 * coordinator's (task, worker_id, seq) replaced, and decoded it is the
 * record cr_store_complete packs; it streams and recovers as any record. */
Test(store, complete_stores_the_record_as_sent)
{
    cr_store_t *st = s_open();
    s_batch(st, "b", 2, 1, "c");
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    r.batch_id = "b";
    r.job_id = "j0";
    r.status = CRUCIBLE__STATUS__STATUS_OK;
    r.task = "forged";
    r.worker_id = "liar";
    r.seq = 77;
    r.host = "n7";
    uint8_t sent[256];
    size_t slen = crucible__reward_record__pack(&r, sent);
    sent[slen++] = (uint8_t)(900 << 3 & 0x7f) | 0x80; /* field 900, varint 1 */
    sent[slen++] = (uint8_t)(900 >> 4);
    sent[slen++] = 0x01;
    Crucible__RewardRecord *rec = crucible__reward_record__unpack(NULL, slen, sent);
    cr_assert_not_null(rec);
    free(rec->worker_id);
    rec->worker_id = strdup("w1"); /* as the coordinator sets it */
    cr_assert_eq(cr_store_begin(st), 0); /* the coordinator's turn */
    cr_assert_eq(cr_store_complete_sent(st, rec, sent, slen, NULL), 0);
    cr_assert_eq(rec->seq, 1);
    cr_assert_str_eq(rec->task, "t");
    uint8_t *want = NULL, *amended = NULL;
    size_t wlen = 0, alen = 0;
    cr_assert_eq(cr_wire_record_pack(rec, &want, &wlen), 0);
    cr_assert_eq(cr_wire_record_amend(sent, slen, rec, &amended, &alen), 0);
    const uint8_t *last = NULL;
    size_t llen = 0;
    cr_assert_eq(cr_store_last_record(st, &last, &llen), 0);
    cr_assert_eq(llen, alen);
    cr_assert_eq(memcmp(last, amended, alen), 0, "the record streamed is the one amended");
    cr_assert_eq(cr_store_commit(st), 0);
    Crucible__RewardRecord *j1 = s_rec("b", "j1", CRUCIBLE__STATUS__STATUS_INCORRECT, "w2");
    cr_assert_eq(cr_store_complete(st, j1, NULL), 0);
    uint8_t *j1want = NULL;
    size_t j1len = 0;
    cr_assert_eq(cr_wire_record_pack(j1, &j1want, &j1len), 0);
    CHECK(st);
    cr_store_close(&st);

    st = s_open();
    CHECK(st);
    s_blobs_t got = {0};
    cr_assert_eq(cr_store_records_packed(st, "b", 0, s_keep_blob, &got), 0);
    cr_assert_eq(got.n, 2);
    cr_assert_eq(got.len[0], alen);
    cr_assert_eq(memcmp(got.blob[0], amended, alen), 0, "stored as sent, amended");
    cr_assert_eq(memcmp(got.blob[0], sent, 6), 0, "the worker's keys as they came first");
    Crucible__RewardRecord *back = crucible__reward_record__unpack(NULL, got.len[0], got.blob[0]);
    cr_assert_not_null(back);
    uint8_t *again = NULL;
    size_t aglen = 0;
    cr_assert_eq(cr_wire_record_pack(back, &again, &aglen), 0);
    cr_assert_eq(aglen, wlen);
    cr_assert_eq(memcmp(again, want, wlen), 0, "decoded, the record the store packs");
    cr_assert_str_eq(back->worker_id, "w1");
    cr_assert_str_eq(back->host, "n7");
    cr_assert_eq(back->base.n_unknown_fields, 1);
    cr_assert_eq(got.len[1], j1len);
    cr_assert_eq(memcmp(got.blob[1], j1want, j1len), 0, "without the bytes: packed");
    crucible__reward_record__free_unpacked(back, NULL);
    s_free(rec);
    s_free(j1);
    free(want);
    free(amended);
    free(again);
    free(j1want);
    cr_store_close(&st);
}
