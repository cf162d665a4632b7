/* jobmetrics.h — the metrics a reward record feeds, shared by the
 * coordinator and the worker so that both count a job the same way.
 *
 * Families (prefix is "crucible" or "crucible_worker"):
 *   <prefix>_jobs_total{status,backend}       counter, one per record
 *   <prefix>_hack_flags_total{flag}           counter, one per flag raised
 *   <prefix>_stage_seconds{stage}             histogram: compile, verify, profile
 *   <prefix>_assign_to_result_seconds         histogram: t_assigned -> t_finished
 *   <prefix>_compile_cache_hits_total         counter
 *   <prefix>_compiles_total                   counter (records that compiled)
 * extra (may be NULL or "") is put in front of every series' labels
 * (`worker="w1"`). */
#ifndef CR_JOBMETRICS_H
#define CR_JOBMETRICS_H

#include "crucible.pb-c.h"
#include "metrics.h"

/* Declares the families. 0 or the first cr_metrics_declare error. */
int cr_jobmetrics_declare(cr_metrics_t *m, const char *prefix);

/* Counts one record. */
void cr_jobmetrics_record(cr_metrics_t *m, const char *prefix, const char *extra,
                          const Crucible__RewardRecord *rec);

#endif
