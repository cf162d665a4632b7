/* torch_timing.c — see torch_timing.h; torch_judge.c notes 4 and 5 say why
 * each rule is there, docs/torch.md §4 what was measured. */
#include "torch_timing.h"

#include "cpu_judge.h"
#include "log.h"
#include "stats.h"

#include <stdlib.h>

/* The event-time cross-check (note 4): what the events missed beyond the
 * harness's own cost, 20 us (a few kernel launches of jitter) + 20% (the
 * launch gaps of a model of many small kernels), is hidden work. The FETCH
 * check allows 200 us: a copy's jitter on a loaded host. */
#define S_XCHK_ABS_US 20.0
#define S_XCHK_REL 0.2
#define S_FETCH_SLACK_US 200.0
/* On the CPU, where STAGE's and FETCH's excess is counted into the samples,
 * the flag past the reference's + S_CPU_FLAG_US (CPU time: the honest pairs'
 * differences are tens of microseconds there once the harness keeps glibc's
 * heap steady, crucible_torch.py's _steady_malloc). */
#define S_CPU_FLAG_US 300.0
/* Where the wall clock starts to count instead of the events: the jitter of
 * the harness's cost between two processes is a few microseconds. */
#define S_MISSED_US 3.0
#define S_MISSED_REL 0.05
/* The head (note 5): the spin before the first pairs, then S_HEAD_MARGIN x
 * the median host time of the reference's last CR_TORCH_HEAD_KEEP calls +
 * S_HEAD_PAD_US, within [S_HEAD_MIN_US, S_HEAD_MAX_US]. (The longest of the
 * last 8 pairs, x1.25: one slow call set the head for eight pairs, up to
 * the cap of 3 ms, on the H200 in session 16.) */
#define S_HEAD_MARGIN 1.5
#define S_HEAD_PAD_US 30.0
#define S_HEAD_MIN_US 20.0
#define S_HEAD_MAX_US 3000.0

double cr_torch_median(const double *v, size_t n)
{
    cr_stats_t st;
    return n && cr_stats_compute(v, n, &st) == 0 ? st.median : 0;
}

/* Note 4. A command's wall time holds the executor's way from SIGCONT to
 * its main thread running, and whatever took that thread's core on the way:
 * on the H200 30-50 us a command, either side of a pair the longer by up to
 * 11 us (session 19), and milliseconds when a compiler takes the core. The
 * kernel counts that wait (run_delay), and it is no work of the executor's.
 * In RUN the GPU spins the judge's head meanwhile (note 5), so a wait within
 * the head delays nothing (taking it off would add its jitter to the pair);
 * what is past it comes off, as all of a STAGE's or FETCH's wait does. The
 * candidate could make its main thread wait on purpose (a thread of its own
 * on that core doing the work meanwhile): its wait comes off only up to its
 * pair's reference's + CR_TORCH_WAIT_SLACK_US, the most host work it could
 * hide that way. */
void cr_torch_take_waits(double *wc, double *wr, double wait_c, double wait_r, double hidden_us)
{
    if (wait_c < 0 || wait_r < 0)
        return;
    double c = wait_c > hidden_us ? wait_c - hidden_us : 0;
    double r = wait_r > hidden_us ? wait_r - hidden_us : 0;
    *wc -= c < r + CR_TORCH_WAIT_SLACK_US ? c : r + CR_TORCH_WAIT_SLACK_US;
    *wr -= r;
}

/* Note 4, on a GPU. The harness's own cost of a call is its wall time less
 * its event time; the reference's (same harness, a process that runs no
 * candidate code) is the yardstick, pair by pair: a pair shares its head
 * (note 5), so the difference of the two costs holds neither the head nor
 * the pair's moment. What the candidate's events missed is the median of
 * those differences; past S_MISSED_US + S_MISSED_REL of its event time each
 * sample becomes at least its event time plus its pair's difference, so
 * work the events missed (another stream, a thread) is counted anyway, and
 * past S_XCHK_ABS_US + S_XCHK_REL the verdict is HACK_DETECTED /
 * timing_mismatch. (A FETCH far slower than the reference's for the same
 * bytes, work that outlived RUN, is cr_torch_aside_checks'.) */
void cr_torch_cross_check(cr_torch_samples_t *S, Crucible__RewardRecord *rec)
{
    double *tmp = malloc(S->n * sizeof *tmp);
    if (!tmp)
        return;
    for (size_t i = 0; i < S->n; i++)
        tmp[i] = S->bw[i] - S->b[i];
    double cost = cr_torch_median(tmp, S->n);
    for (size_t i = 0; i < S->n; i++)
        tmp[i] = (S->aw[i] - S->a[i]) - (S->bw[i] - S->b[i]); /* what the events missed */
    cr_stats_t q;
    if (cr_stats_compute(tmp, S->n, &q) != 0) {
        free(tmp);
        return;
    }
    double missed = q.median, evt = cr_torch_median(S->a, S->n);
    cr_info("torch cross-check: %zu pairs; candidate wall %.1f us, events %.1f; reference "
            "wall %.1f, events %.1f (medians); missed quartiles %.1f / %.1f / %.1f us, "
            "head %.1f us (the figures for the next look at the GPU's)", S->n,
            cr_torch_median(S->aw, S->n), evt, cr_torch_median(S->bw, S->n),
            cr_torch_median(S->b, S->n), q.q1, q.median, q.q3, cr_torch_median(S->head, S->n));
    /* An honest candidate's events miss nothing at the median: its event
     * times stand, unbiased by the wall clock's jitter. Past the bound every
     * sample is charged at least the median: a pair whose wall clocks
     * jittered the other way hid the work too, and left at its event time it
     * was the best sample (07_side_stream.py, a GEMM on another stream: events
     * 1.3 us, missed 11.1 us, best sample 10.45x the reference's on the H200
     * in session 19). */
    if (missed > S_MISSED_US + S_MISSED_REL * evt)
        for (size_t i = 0; i < S->n; i++)
            S->a[i] += tmp[i] > missed ? tmp[i] : missed;
    free(tmp);
    if (missed > S_XCHK_ABS_US + S_XCHK_REL * evt) {
        cr_judge_flag(rec, "timing_mismatch");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                      "timing: the candidate's CUDA events missed %.1f us of its calls "
                      "(medians; the harness's own cost, %.1f us, taken off): work on another "
                      "stream or thread", missed, cost);
    }
}

/* Note 4, STAGE and FETCH. Staging and fetching are the same harness code
 * in both executors, on the same bytes, and untimed by the events; but the
 * candidate's process is its own: it can run forward() from a patched STAGE
 * and hand RUN the answer, or let RUN return a placeholder and compute the
 * answer in a patched FETCH (22_work_at_stage.py, 22_work_at_fetch.py). On
 * the CPU (CPU time) the command's time over the reference's median is
 * counted into each sample past S_MISSED_*: the work is paid for wherever it
 * was done. When the median over pairs of the candidate's time less its
 * pair's is past the reference's median + S_FETCH_SLACK_US on a GPU (twice
 * the reference's, and the slack), or + S_CPU_FLAG_US on the CPU, it is
 * HACK_DETECTED / timing_mismatch. On a GPU (the wall clock of a copy and a synchronise:
 * not counted) work left queued on the device delays the next head, inside
 * RUN's wall clock. */
static void s_aside_check(cr_torch_samples_t *S, const double *c, const double *r, int count,
                          const char *what, const char *why, Crucible__RewardRecord *rec)
{
    double cost = cr_torch_median(r, S->n), sa = cr_torch_median(c, S->n);
    double evt = cr_torch_median(S->a, S->n);
    if (count && sa - cost > S_MISSED_US + S_MISSED_REL * evt)
        for (size_t i = 0; i < S->n; i++)
            if (c[i] > cost)
                S->a[i] += c[i] - cost;
    /* pair by pair: the two commands run a few hundred microseconds apart,
     * so what loads the host in between (a worker's compilers starting and
     * ending) is in both */
    double *d = malloc(S->n * sizeof *d);
    if (!d)
        return;
    for (size_t i = 0; i < S->n; i++)
        d[i] = c[i] - r[i];
    double over = cr_torch_median(d, S->n);
    free(d);
    cr_info("torch %s: candidate %.1f us, reference %.1f us (medians), pairs' difference %.1f us "
            "(median)", what, sa, cost, over);
    if (over > cost + (count ? S_CPU_FLAG_US : S_FETCH_SLACK_US)) {
        cr_judge_flag(rec, "timing_mismatch");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                      "timing: %s took %.1f us against the reference's %.1f us (medians): %s",
                      what, sa, cost, why);
    }
}

void cr_torch_aside_checks(cr_torch_samples_t *S, int gpu, Crucible__RewardRecord *rec)
{
    s_aside_check(S, S->sa, S->sb, !gpu, "staging the candidate's inputs",
                  "it worked before forward() was called", rec);
    s_aside_check(S, S->fa, S->fb, !gpu, "copying the candidate's outputs",
                  "its work went on after forward() returned", rec);
}

/* Note 5: the next pair's spin, from the host times of the last calls. */
double cr_torch_head_next(const double *span, size_t n)
{
    double h = S_HEAD_MARGIN * cr_torch_median(span, n) + S_HEAD_PAD_US;
    return h < S_HEAD_MIN_US ? S_HEAD_MIN_US : h > S_HEAD_MAX_US ? S_HEAD_MAX_US : h;
}

double cr_torch_head_host_us(const double *span, size_t n)
{
    return (cr_torch_head_next(span, n) - S_HEAD_PAD_US) / S_HEAD_MARGIN;
}
