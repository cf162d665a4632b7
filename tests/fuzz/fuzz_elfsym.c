/* fuzz_elfsym.c — libFuzzer harness for the ELF reader and the link audit.
 *
 * The runner reads every candidate's shared object with cr_elfsym before
 * loading it, so any bytes a candidate's build could produce go through it.
 * Every input must either open, with every symbol and DT_NEEDED entry
 * readable and the audit giving a verdict, or fail with a negative code, a
 * message and no reader. The seeds are small real objects built by cc from
 * one file that imports malloc, clock_gettime, pthread_create and a weak
 * symbol no library provides: gnu.so, both.so and sysv.so with
 * --hash-style=gnu/both/sysv, noshdr_*.so the same with e_shoff, e_shnum
 * and e_shstrndx zeroed (the loader's view only).
 *
 * Built with -fsanitize=fuzzer, or #included by tests/test_fuzz_regress.c
 * (see fuzz_envelope.c). */
#include "../../worker/runner/audit.h"
#include "elfsym.h"
#include "error.h"
#include "task.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cr_elfsym_t *e = NULL;
    char err[512] = "";
    int rc = cr_elfsym_open_mem(data, size, &e, err, sizeof err);
    if (rc != 0) {
        if (rc > 0 || e || !err[0])
            abort(); /* contract: negative, a message, no reader */
        return 0;
    }
    size_t total = 0;
    for (size_t i = 0; i < cr_elfsym_count(e); i++) {
        cr_elfsym_sym_t s;
        if (cr_elfsym_symbol(e, i, &s) != 0)
            abort(); /* every index below the count reads */
        total += strlen(s.name); /* a name that does not end in the file faults here */
    }
    cr_elfsym_sym_t past;
    if (cr_elfsym_symbol(e, cr_elfsym_count(e), &past) == 0)
        abort();
    for (size_t i = 0; i < cr_elfsym_needed_count(e); i++)
        total += strlen(cr_elfsym_needed(e, i));
    if (cr_elfsym_needed(e, cr_elfsym_needed_count(e)) != NULL)
        abort();
    /* the audit on the same reader, with nothing allowed, threads or not:
     * clean, forbidden, or unresolvable, the last two with a reason */
    static cr_task_t task; /* zeroed: no allow list, no threads */
    char why[512];
    task.threads_allowed = (int)(total & 1);
    int verdict = cr_audit_check_elf(e, &task, why, sizeof why);
    if (verdict != 0 && ((verdict != 1 && verdict != CR_E_NOT_FOUND) || !why[0]))
        abort();
    cr_elfsym_destroy(&e);
    if (e)
        abort();
    return 0;
}
