/* record.h — RewardRecord helpers: status names, JSON, CSV.
 *
 * JSON is the JSONL line format of `crucible results` and `crucible run`:
 * one object per record, stable key names matching the proto fields, status
 * as its name ("OK", "INCORRECT", ...). */
#ifndef CR_RECORD_H
#define CR_RECORD_H

#include "crucible.pb-c.h"

#include <stdio.h>

/* "OK", "COMPILE_ERROR", ... ; "UNSPECIFIED" for 0 and unknown values. */
const char *cr_status_name(int status);

/* Parses a name as printed by cr_status_name. Returns 0 or CR_E_USAGE. */
int cr_status_parse(const char *name, int *out);

/* 1 when the status is an infrastructure outcome (WORKER_LOST, INFRA_ERROR,
 * CANCELLED): no reward is given, the trainer drops the sample. */
int cr_status_is_infra(int status);

/* One JSON object on one line, no trailing newline. Caller frees. NULL on ENOMEM. */
char *cr_record_to_json(const Crucible__RewardRecord *rec);

/* Parses a line written by cr_record_to_json back into a record (fields the
 * line lacks keep their defaults). Returns 0 and *out (free with
 * crucible__reward_record__free_unpacked), or CR_E_JSON with err naming the field. */
int cr_record_from_json(const char *line, Crucible__RewardRecord **out, char *err,
                        size_t errlen);

/* KernelBench's result for one record, as one JSON object on one line
 * (KernelExecResult of its src/kernelbench/eval.py: compiled, correctness,
 * runtime and ref_runtime in ms, metadata with compilation_error,
 * runtime_error, correctness_issue, max_difference, correctness_trials),
 * with the record's keys, status and hack flags beside (docs/torch.md).
 * From the record's kernelbench field where the runner filled one (torch
 * tasks), else derived from its status, message and profile. Caller frees;
 * NULL on ENOMEM. */
char *cr_record_to_kernelbench(const Crucible__RewardRecord *rec);

/* CSV: a header line and one row per record (RFC 4180 quoting). */
void cr_record_csv_header(FILE *f);
void cr_record_csv_row(FILE *f, const Crucible__RewardRecord *rec);

/* Writes a length-delimited protobuf record (varint length, then bytes),
 * the format protobuf's writeDelimitedTo uses. Returns 0 or -errno. */
int cr_record_write_delimited(FILE *f, const Crucible__RewardRecord *rec);

#endif
