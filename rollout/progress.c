/* progress.c — see progress.h. */
#include "progress.h"

#include "timeutil.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

void cr_ro_progress_init(cr_ro_progress_t *p, FILE *f, const char *label, uint32_t total)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->tty = isatty(fileno(f));
    p->label = label;
    p->units_total = total;
    p->t0_ms = cr_time_mono_ms();
}

void cr_ro_progress_draw(cr_ro_progress_t *p, int final)
{
    int64_t now = cr_time_mono_ms();
    uint64_t key = p->units_done * 1000003ull + p->turns * 7919ull + p->llm_in_flight * 131ull +
                   p->judge_in_flight;
    if (!final && p->tty && now - p->last_ms < 100)
        return;
    if (!final && !p->tty && (now - p->last_ms < 2000 || key == p->last_key))
        return;
    p->last_ms = now;
    p->last_key = key;
    char eta[32] = "";
    double secs = (double)(now - p->t0_ms) / 1000.0;
    uint32_t fresh = p->units_done - p->units_done0;
    if (fresh && secs > 0.5 && p->units_total > p->units_done) {
        long s = lround((p->units_total - p->units_done) * secs / fresh);
        snprintf(eta, sizeof eta, "  ETA %ld:%02ld", s / 60, s % 60);
    }
    fprintf(p->f, "%s%s: %u/%u done, %llu turns, OK %.0f%%, mean reward %.3f, in flight: "
            "llm %u, judge %u%s%s",
            p->tty ? "\r\033[K" : "", p->label, p->units_done, p->units_total,
            (unsigned long long)p->turns, p->turns ? 100.0 * p->ok / p->turns : 0.0,
            p->rewarded ? p->reward_sum / p->rewarded : 0.0, p->llm_in_flight,
            p->judge_in_flight, eta, !p->tty || final ? "\n" : "");
    fflush(p->f);
}
