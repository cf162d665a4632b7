/* fuzz_task.c — libFuzzer harness for task.json parsing.
 *
 * task.json text arrives from clients (Submit bundles) and is parsed by the
 * coordinator, the worker and the runner. Any text must give either an
 * error with a message or a task on which the judge's helpers are safe: the
 * shim generator and the shape evaluation for every buffer of every case.
 *
 * Built with -fsanitize=fuzzer, or #included by tests/test_fuzz_regress.c
 * (see fuzz_envelope.c). */
#include "error.h"
#include "task.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile int64_t s_task_sink; /* keeps results observable */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > CR_TASK_MAX_FILE)
        return 0; /* the loaders refuse larger files before parsing */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    cr_task_t *t = NULL;
    char err[512];
    err[0] = '\0';
    int rc = cr_task_parse(text, "fuzz/task.json", &t, err, sizeof err);
    if (rc != 0) {
        if (t || err[0] == '\0') /* failure: no task, and a message naming why */
            abort();
        free(text);
        return 0;
    }
    char *shim = cr_task_shim_source(t, "candidate.c");
    if (shim) {
        s_task_sink += (int64_t)strlen(shim);
        free(shim);
    }
    for (int c = 0; c < t->ncases; c++) {
        for (int p = 0; p < t->nparams; p++) {
            int64_t n = 0;
            if (t->params[p].is_pointer && cr_task_numel(t, c, p, &n) == 0)
                s_task_sink += n;
        }
        double b = 0, f = 0;
        cr_task_bytes(t, c, &b);
        cr_task_flops(t, c, &f);
        s_task_sink += (int64_t)(b != f);
    }
    cr_task_destroy(&t);
    if (t)
        abort();
    free(text);
    return 0;
}
