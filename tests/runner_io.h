/* runner_io.h — drives a real crucible-runner from a test, as the worker
 * does (docs/protocol.md, "Runner ↔ worker"): a report token, then the
 * given stdin bytes; the report must start with the token and be the only
 * thing on stdout. Header-only: test_runner.c and test_verifier.c share it. */
#ifndef CR_TEST_RUNNER_IO_H
#define CR_TEST_RUNNER_IO_H

#include "proc.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A fixed report token for a runner driven by hand (workers draw one per job). */
#define CR_TEST_TOKEN "crucible-token16"

/* Runs argv (the runner and its options, NULL-terminated) on the token and
 * in[0..len), under an RLIMIT_AS of as_bytes (0 = none). Fills *r (caller
 * closes it) and returns the decoded report, or NULL when there was none. */
static inline Crucible__RewardRecord *cr_test_runner_argv(char **argv, const void *in, size_t len,
                                                          int64_t as_bytes, cr_proc_result_t *r)
{
    cr_rlimits_t lim = {.as_bytes = as_bytes, .no_core = 1};
    uint8_t *buf = malloc(CR_RUNNER_TOKEN_LEN + len + 1);
    cr_assert_not_null(buf);
    memcpy(buf, CR_TEST_TOKEN, CR_RUNNER_TOKEN_LEN);
    if (len)
        memcpy(buf + CR_RUNNER_TOKEN_LEN, in, len);
    cr_proc_opts_t o = {.argv = argv, .stdin_data = buf, .stdin_len = CR_RUNNER_TOKEN_LEN + len,
                        .out_cap = 1 << 20, .err_cap = 1 << 16, .timeout_ms = 60000,
                        .limits = &lim};
    cr_assert_eq(cr_proc_run(&o, r), 0);
    free(buf);
    Crucible__RewardRecord *rec = NULL;
    if (r->out_len > 0) {
        cr_assert_geq(r->out_len, CR_RUNNER_TOKEN_LEN, "a report shorter than the token");
        cr_assert_eq(memcmp(r->out, CR_TEST_TOKEN, CR_RUNNER_TOKEN_LEN), 0,
                     "the report starts with the token");
    }
    const uint8_t *payload;
    size_t plen;
    if (r->out_len > CR_RUNNER_TOKEN_LEN &&
        cr_wire_frame_parse(r->out + CR_RUNNER_TOKEN_LEN, r->out_len - CR_RUNNER_TOKEN_LEN,
                            1 << 20, &payload, &plen) == 0) {
        cr_assert_eq(plen + 4 + CR_RUNNER_TOKEN_LEN, r->out_len,
                     "bytes after the report on stdout");
        cr_assert_eq(cr_wire_record_unpack(payload, plen, &rec), 0);
    }
    return rec;
}

/* cr_test_runner_argv with no options. */
static inline Crucible__RewardRecord *cr_test_runner_raw(const char *runner, const void *in,
                                                         size_t len, int64_t as_bytes,
                                                         cr_proc_result_t *r)
{
    char *argv[] = {(char *)runner, NULL};
    return cr_test_runner_argv(argv, in, len, as_bytes, r);
}

#endif
