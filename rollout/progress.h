/* progress.h — the progress line of `crucible rollout` and `crucible curate`.
 *
 * On a terminal one line redrawn at most 10 times a second; in a log a
 * line when something changed (at most every 2 s), as app/cli.c's batch
 * progress does. */
#ifndef CR_RO_PROGRESS_H
#define CR_RO_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE *f;              /* borrowed */
    int tty;              /* redraw in place */
    const char *label;    /* "rollout ro-...", borrowed */
    uint32_t units_total; /* samples (rollout) or solutions (curate) */
    uint32_t units_done;
    uint32_t units_done0; /* done before this run (resume): the rate counts from here */
    uint64_t turns;       /* judged turns (rollout) */
    uint64_t ok;          /* of them OK with no hack flag */
    double reward_sum;    /* of the turns with a reward */
    uint64_t rewarded;
    uint32_t llm_in_flight, judge_in_flight;
    int64_t t0_ms, last_ms;
    uint64_t last_key;    /* what was drawn last, to skip unchanged lines */
} cr_ro_progress_t;

void cr_ro_progress_init(cr_ro_progress_t *p, FILE *f, const char *label, uint32_t total);
/* Draws if due; final always draws and ends the line. */
void cr_ro_progress_draw(cr_ro_progress_t *p, int final);

#endif
