/* audit.h — the link audit: a candidate's shared object is read before it
 * is loaded, and one that imports or defines a forbidden symbol, or links a
 * library the task does not allow, is a hack (docs/hacks.md #10 timer tampering,
 * #14 calling a library; docs/audit.md has the rules).
 *
 * It reads the object's dynamic symbol table (common/elfsym.h), so it sees
 * exactly what the loader would bind: timers, dynamic loading, process and
 * network calls, threads unless the task allows them, vendor libraries
 * unless the task's "allow" lists them, and imports that no linked library
 * provides (they would bind to whatever the judge's process has loaded).
 * It cannot see what never goes through a symbol: inline system calls,
 * rdtsc, device-side clocks, addresses found at run time. The sandbox and
 * the judge's own checks cover those. */
#ifndef CR_AUDIT_H
#define CR_AUDIT_H

#include "elfsym.h"
#include "task.h"

#include <stddef.h>

/* Audits the shared object at so_path for task. Returns 0 when clean; 1
 * when forbidden (a hack), with why naming the first finding and the symbol
 * or library ("imports 'clock_gettime': timers are forbidden in candidates
 * ...", plus "(and N more)" when there are others); a negative code when the
 * object cannot be loaded honestly, with why saying why: CR_E_NOT_FOUND for
 * an import no linked library provides ("undefined symbol 'helper': ..."),
 * or cr_elfsym_open's codes when the file cannot be read or is not a
 * well-formed ELF64 shared object. Forbidden wins over the rest. */
int cr_audit_check(const char *so_path, const cr_task_t *task, char *why, size_t whylen);

/* The same on an object already open: 0, 1 or CR_E_NOT_FOUND as above. */
int cr_audit_check_elf(const cr_elfsym_t *e, const cr_task_t *task, char *why, size_t whylen);

/* Checks the rule table against itself and the task module: every name a
 * rule is lifted by is "threads" or a library of cr_task_libs, and no rule
 * is hidden behind an earlier one that matches its pattern and is lifted
 * differently. Returns 0, or -1 with why naming the row. For the tests. */
int cr_audit_selfcheck(char *why, size_t whylen);

#endif
