/* test_torch_timing.c — the torch judge's timing rules (worker/runner/torch/
 * torch_timing.c) on figures alone: what an honest GPU candidate's pairs look
 * like against what hidden work does to them (another stream, work in STAGE
 * or FETCH), and the head's size. The figures are shaped like the H200's of
 * session 17 (harness costs of about a millisecond, wall clocks jittering by
 * tens of microseconds); the executors and the GPU are tests/hacks/torch-gpu's
 * and tests/gpu/call.sh's. */
#include <criterion/criterion.h>

#include "cpu_judge.h"
#include "stats.h"
#include "torch_timing.h"

#include <stdlib.h>
#include <string.h>

#define N 60

static double s_buf[9][N];

/* n pairs: events a and b, wall clocks a + cost + jitter, STAGE and FETCH
 * of 500 us; jitter a deterministic spread of +-jit us, differing by side. */
static cr_torch_samples_t s_pairs(double a, double b, double cost, double jit)
{
    cr_torch_samples_t S = {.a = s_buf[0], .b = s_buf[1], .aw = s_buf[2], .bw = s_buf[3],
                            .fa = s_buf[4], .fb = s_buf[5], .sa = s_buf[6], .sb = s_buf[7],
                            .head = s_buf[8], .n = N};
    unsigned x = 12345;
    for (size_t i = 0; i < N; i++) {
        double j[4];
        for (int k = 0; k < 4; k++) {
            x = x * 1103515245u + 12345u;
            j[k] = jit * (((double)((x >> 8) % 2001) / 1000.0) - 1.0);
        }
        S.a[i] = a;
        S.b[i] = b;
        S.aw[i] = a + cost + j[0];
        S.bw[i] = b + cost + j[1];
        S.sa[i] = 500 + j[2];
        S.sb[i] = 500 + j[3];
        S.fa[i] = S.fb[i] = 500;
        S.head[i] = 400;
    }
    return S;
}

static Crucible__RewardRecord *s_rec(void)
{
    Crucible__RewardRecord *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    crucible__reward_record__init(r);
    r->status = CRUCIBLE__STATUS__STATUS_OK;
    return r;
}

static int s_flagged(const Crucible__RewardRecord *r, const char *flag)
{
    for (size_t i = 0; i < r->n_hack_flags; i++)
        if (!strcmp(r->hack_flags[i], flag))
            return 1;
    return 0;
}

/* An honest candidate: the same harness cost as its pairs, jitter of +-60 us
 * on each wall clock: its events stand, no flag. */
Test(torch_timing, honest_jitter_is_no_mismatch)
{
    cr_torch_samples_t S = s_pairs(5.0, 6.0, 1000.0, 60.0);
    Crucible__RewardRecord *r = s_rec();
    cr_torch_cross_check(&S, r);
    cr_torch_aside_checks(&S, 1, r);
    cr_expect_eq(r->status, CRUCIBLE__STATUS__STATUS_OK, "%s", r->message ? r->message : "");
    cr_expect_eq(r->n_hack_flags, 0);
    cr_expect_float_eq(cr_torch_median(S.a, S.n), 5.0, 1e-9, "the events were changed");
    crucible__reward_record__free_unpacked(r, NULL);
}

/* A millisecond of work on another stream: the events hold 5 us, the wall
 * clock the rest. Flagged, and counted into the samples whatever the flag. */
Test(torch_timing, side_stream_work_is_flagged_and_counted)
{
    cr_torch_samples_t S = s_pairs(5.0, 6.0, 1000.0, 20.0);
    for (size_t i = 0; i < S.n; i++)
        S.aw[i] += 1000.0;
    Crucible__RewardRecord *r = s_rec();
    cr_torch_cross_check(&S, r);
    cr_expect_eq(r->status, CRUCIBLE__STATUS__STATUS_HACK_DETECTED);
    cr_expect(s_flagged(r, "timing_mismatch"));
    cr_expect_gt(cr_torch_median(S.a, S.n), 900.0, "the hidden work was not counted: %.1f us",
                 cr_torch_median(S.a, S.n));
    crucible__reward_record__free_unpacked(r, NULL);
}

/* 15 us hidden beside a 50 us kernel: under the flag's bound (20 us + 20%)
 * but over the counting's (3 us + 5%): no flag, and no speedup from it. */
Test(torch_timing, small_hidden_work_is_counted_not_flagged)
{
    cr_torch_samples_t S = s_pairs(50.0, 50.0, 800.0, 0.0);
    for (size_t i = 0; i < S.n; i++)
        S.aw[i] += 15.0;
    Crucible__RewardRecord *r = s_rec();
    cr_torch_cross_check(&S, r);
    cr_expect_eq(r->status, CRUCIBLE__STATUS__STATUS_OK);
    cr_expect_float_eq(cr_torch_median(S.a, S.n), 65.0, 1e-6);
    crucible__reward_record__free_unpacked(r, NULL);
}

/* 07_side_stream.py's pairs on the H200 (session 19): a GEMM of 13.7 us on
 * another stream, events of 1.3 us, wall clocks jittering by +-20 us: the
 * median pair hides ~12 us, under the flag's bound. No sample may stay at
 * its event time: the best sample would claim 10x. */
Test(torch_timing, hidden_work_is_in_every_sample)
{
    cr_torch_samples_t S = s_pairs(1.3, 13.7, 600.0, 20.0);
    for (size_t i = 0; i < S.n; i++)
        S.aw[i] += 12.4;
    Crucible__RewardRecord *r = s_rec();
    cr_torch_cross_check(&S, r);
    cr_expect_eq(r->status, CRUCIBLE__STATUS__STATUS_OK, "%s", r->message ? r->message : "");
    cr_stats_t a;
    cr_assert_eq(cr_stats_compute(S.a, S.n, &a), 0);
    cr_expect_gt(a.min, 1.3 + 5.0, "the best sample kept its event time: %.1f us", a.min);
    cr_expect_gt(a.median, 1.3 + 10.0, "the median was not charged: %.1f us", a.median);
    crucible__reward_record__free_unpacked(r, NULL);
}

/* Waits for a core, pair by pair (torch_timing.c): a compiler that took
 * the reference's core for 4 ms in two of three pairs (its walls 3.7 ms
 * longer, past a 300 us head) made the pairs' differences -3.7 ms, and a
 * millisecond of work on another stream (07_side_stream_hidden_ms.py's)
 * went unflagged. With the waits taken off it is timing_mismatch. */
Test(torch_timing, a_reference_kept_waiting_hides_no_side_work)
{
    for (int take = 0; take <= 1; take++) {
        cr_torch_samples_t S = s_pairs(13.7, 13.7, 600.0, 5.0);
        for (size_t i = 0; i < S.n; i++) {
            double wr = 45.0;
            S.aw[i] += 1000.0;
            if (i % 3 != 0) {
                wr = 4000.0;
                S.bw[i] += 3700.0;
            }
            if (take)
                cr_torch_take_waits(&S.aw[i], &S.bw[i], 30.0, wr, 300.0);
        }
        Crucible__RewardRecord *r = s_rec();
        cr_torch_cross_check(&S, r);
        if (take)
            cr_expect(s_flagged(r, "timing_mismatch"), "the hidden millisecond went unseen");
        else
            cr_expect_eq(r->n_hack_flags, 0, "the compile no longer hides it: the test shows "
                         "nothing");
        crucible__reward_record__free_unpacked(r, NULL);
    }
}

/* The reference's wait comes off whole, the candidate's only up to its
 * pair's + the slack: a candidate that makes its own main thread wait (a
 * thread of its own doing the work on that core) hides no more than that;
 * and only what is past the part the head hides. */
Test(torch_timing, a_candidates_wait_is_credited_up_to_its_pairs)
{
    double wc = 1000.0, wr = 1000.0;
    cr_torch_take_waits(&wc, &wr, 40.0, 60.0, 0.0);
    cr_expect_float_eq(wc, 960.0, 1e-9);
    cr_expect_float_eq(wr, 940.0, 1e-9);
    wc = wr = 3000.0;
    cr_torch_take_waits(&wc, &wr, 2000.0, 20.0, 0.0);
    cr_expect_float_eq(wc, 3000.0 - 20.0 - CR_TORCH_WAIT_SLACK_US, 1e-9);
    cr_expect_float_eq(wr, 2980.0, 1e-9);
    wc = wr = 3000.0;
    cr_torch_take_waits(&wc, &wr, 1000.0, 900.0, 300.0);
    cr_expect_float_eq(wc, 3000.0 - 600.0 - CR_TORCH_WAIT_SLACK_US, 1e-9);
    cr_expect_float_eq(wr, 3000.0 - 600.0, 1e-9);
    wc = wr = 1000.0;
    cr_torch_take_waits(&wc, &wr, 30.0, 45.0, 300.0); /* within the head: nothing */
    cr_expect_float_eq(wc, 1000.0, 1e-9);
    cr_expect_float_eq(wr, 1000.0, 1e-9);
    wc = wr = 500.0;
    cr_torch_take_waits(&wc, &wr, -1.0, 20.0, 0.0); /* unknown: neither changes */
    cr_expect_float_eq(wc, 500.0, 1e-9);
    cr_expect_float_eq(wr, 500.0, 1e-9);
}

/* forward() run from a patched STAGE (22_work_at_stage.py's shape): on a GPU
 * flagged, not counted (a copy's wall clock); on the CPU both. */
Test(torch_timing, work_at_stage_is_flagged)
{
    for (int gpu = 0; gpu <= 1; gpu++) {
        cr_torch_samples_t S = s_pairs(100.0, 100.0, 300.0, 10.0);
        for (size_t i = 0; i < S.n; i++)
            S.sa[i] += 3000.0;
        Crucible__RewardRecord *r = s_rec();
        cr_torch_aside_checks(&S, gpu, r);
        cr_expect_eq(r->status, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "gpu %d", gpu);
        cr_expect(s_flagged(r, "timing_mismatch"), "gpu %d", gpu);
        double a = cr_torch_median(S.a, S.n);
        if (gpu)
            cr_expect_float_eq(a, 100.0, 1e-9, "counted on a GPU: %.1f", a);
        else
            cr_expect_gt(a, 3000.0, "not counted on the CPU: %.1f", a);
        crucible__reward_record__free_unpacked(r, NULL);
    }
}

/* A host whose load comes and goes (a worker's compilers): both commands of
 * a pair slow together, by up to 4 ms, the candidate's 100 us more. Held
 * pair by pair, no flag; the same 100 us over a quiet host neither. */
Test(torch_timing, load_shared_by_a_pair_is_no_mismatch)
{
    cr_torch_samples_t S = s_pairs(20.0, 20.0, 300.0, 0.0);
    for (size_t i = 0; i < S.n; i++) {
        double load = (i % 5 < 3) ? 4000.0 * (double)(i % 7) / 6.0 : 0.0;
        S.sb[i] = 500.0 + load;
        S.sa[i] = 600.0 + load * (i % 2 ? 1.3 : 0.7);
    }
    Crucible__RewardRecord *r = s_rec();
    cr_torch_aside_checks(&S, 1, r);
    cr_expect_eq(r->status, CRUCIBLE__STATUS__STATUS_OK, "%s", r->message ? r->message : "");
    crucible__reward_record__free_unpacked(r, NULL);
}

/* Work that outlived RUN, finished in a patched FETCH (22_work_at_fetch.py). */
Test(torch_timing, work_at_fetch_is_flagged)
{
    cr_torch_samples_t S = s_pairs(100.0, 100.0, 300.0, 10.0);
    for (size_t i = 0; i < S.n; i++)
        S.fa[i] += 1500.0;
    Crucible__RewardRecord *r = s_rec();
    cr_torch_aside_checks(&S, 1, r);
    cr_expect_eq(r->status, CRUCIBLE__STATUS__STATUS_HACK_DETECTED);
    cr_expect(r->message && strstr(r->message, "after forward() returned"), "%s",
              r->message ? r->message : "");
    crucible__reward_record__free_unpacked(r, NULL);
}

/* The head: 1.5x the median of the reference's host times + 30 us, within
 * 20 us and 3 ms; one slow call of sixteen does not set it. */
Test(torch_timing, head_from_the_reference_median)
{
    double span[CR_TORCH_HEAD_KEEP];
    for (int i = 0; i < CR_TORCH_HEAD_KEEP; i++)
        span[i] = 200.0;
    span[3] = 2900.0;
    cr_expect_float_eq(cr_torch_head_next(span, CR_TORCH_HEAD_KEEP), 330.0, 1e-9);
    cr_expect_float_eq(cr_torch_head_host_us(span, CR_TORCH_HEAD_KEEP), 200.0, 1e-9);
    double tiny[1] = {0.0}, huge[1] = {1e5};
    cr_expect_float_eq(cr_torch_head_next(tiny, 1), 30.0, 1e-9);
    cr_expect_float_eq(cr_torch_head_next(huge, 1), 3000.0, 1e-9);
}

/* On the CPU a FETCH slower than its pair's is counted into the samples
 * whatever its size, and flagged when it is slower by more than the
 * reference's + 300 us: 250 us over a 247.7 us reference is only counted,
 * 600 us is timing_mismatch too. (An
 * honest torch_erf's FETCH read 1057.7 us against 247.7 in CI, and 873.0
 * against 218.8 on the build VM: glibc trimming the heap as its last output
 * was freed; with the harness's steady malloc 170.5 against 166.4.) */
Test(torch_timing, cpu_copy_excess_counted_then_flagged)
{
    const double over[2] = {250.0, 600.0};
    for (int k = 0; k < 2; k++) {
        cr_torch_samples_t S = s_pairs(100.0, 100.0, 0.0, 0.0);
        for (size_t i = 0; i < S.n; i++) {
            S.fb[i] = 247.7;
            S.fa[i] = 247.7 + over[k];
        }
        Crucible__RewardRecord *r = s_rec();
        cr_torch_aside_checks(&S, 0, r);
        cr_expect_eq(r->status, k ? CRUCIBLE__STATUS__STATUS_HACK_DETECTED
                                  : CRUCIBLE__STATUS__STATUS_OK,
                     "%.0f us over: %s", over[k], r->message ? r->message : "");
        cr_expect_float_eq(cr_torch_median(S.a, S.n), 100.0 + over[k], 1e-6);
        crucible__reward_record__free_unpacked(r, NULL);
    }
}
