/* rollout.h — `crucible rollout` and `crucible curate`: the policy's
 * samples judged by the cluster (docs/rollout.md).
 *
 * rollout: for every task of TASKS, --samples samples (one GRPO group),
 * each up to --turns turns against the OpenAI-compatible --endpoints; each
 * turn's kernel is judged and the feedback appended; the credit formula
 * spreads the rewards over the turns; trajectories go to --out as JSONL
 * (or protobuf), with a write-ahead log beside it that a restarted run
 * resumes from.
 * curate: a corpus of solutions (as `crucible submit` reads candidates)
 * judged; the correct, fast, distinct ones written as SFT JSONL with a
 * report of what was dropped and why. */
#ifndef CR_ROLLOUT_H
#define CR_ROLLOUT_H

#include "config.h"

/* Called about every 100 ms; nonzero stops the run (it returns that value). */
typedef int (*cr_rollout_tick_fn)(void *arg);

/* Runs a rollout of the tasks in tasks_dir (a task folder or a folder of
 * task folders) against the coordinator at endpoint (NULL = cfg's, with
 * its security). Returns 0 when every sample ended and the output was
 * written, CR_E_USAGE for a bad setting (printed), -EINTR when interrupted
 * (the write-ahead log holds everything finished), or another negative
 * code with a message printed on stderr. */
int cr_rollout_run(const cr_config_t *cfg, const char *tasks_dir, const char *endpoint,
                   cr_rollout_tick_fn tick, void *arg);

/* Curates corpus (a JSONL manifest or a folder, as cr_jobset_load reads
 * candidates) against the tasks of tasks_dir. Same returns. */
int cr_curate_run(const cr_config_t *cfg, const char *tasks_dir, const char *corpus,
                  const char *endpoint, cr_rollout_tick_fn tick, void *arg);

#endif
