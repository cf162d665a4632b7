/* placement.h — which GPUs one worker owns (docs/multigpu.md, "Placement").
 *
 * `crucible worker --gpus 0,1,2,3 --gpus-per-worker 2` starts one worker per
 * group of two GPUs, so that a task with "gpus": 2 finds a worker that owns
 * two. The groups prefer GPUs joined by NVLink, as NVML reports them
 * (cr_nvml_nvlink_matrix): a collective between GPUs that are not goes over
 * PCIe, an order of magnitude slower, and its timings would not compare with
 * a node whose GPUs are. Pure policy, no NVML: the caller reads the matrix. */
#ifndef CR_PLACEMENT_H
#define CR_PLACEMENT_H

#include <stddef.h>

/* Splits GPUs 0..n-1 (positions into the caller's list) into n / per groups
 * of per. joined is the n x n NVLink matrix (1 = joined). Each group starts
 * at the lowest GPU left and adds, lowest first, the GPUs left that are
 * joined to every member so far; when none is, the lowest left (the group is
 * then not all NVLink). groups[g * per + k] gets the k-th member of group g,
 * nvlink[g] 1 when every pair of group g is joined. Returns the number of
 * groups, or -EINVAL with err set when per is out of 1..n or does not divide
 * n (a GPU left over would serve no multi-GPU task and no one-GPU one). */
int cr_placement_groups(int n, int per, const unsigned char *joined, int *groups, int *nvlink,
                        char *err, size_t errlen);

#endif
