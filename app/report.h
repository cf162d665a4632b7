/* report.h — `crucible report BATCH`: one self-contained HTML file (inline
 * SVG, no scripts, no external assets) describing a batch from its records:
 * counts by status and hack flag, speedup per task, rewards, per-worker
 * throughput and GPU-busy over time, the slowest jobs, the compile-cache hit
 * rate, and the settings the records carry (hardware, clock and reference
 * policy, formula), so that a result can be reproduced. */
#ifndef CR_REPORT_H
#define CR_REPORT_H

#include "crucible.pb-c.h"

#include <stddef.h>
#include <stdio.h>

/* Writes the report of batch's n records (borrowed) to f. Returns 0, or -EIO
 * when writing failed. */
int cr_report_html(FILE *f, const char *batch, Crucible__RewardRecord *const *recs, size_t n);

/* The subcommand: reads the batch's records from the coordinator (as
 * `crucible results` does) and writes --out (default report-<batch>.html). */
int cr_cli_report(int argc, char **argv);

#endif
