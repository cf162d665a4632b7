/* fpenv.h — the floating-point control state a call leaves behind.
 *
 * Used by the executor after every call of candidate code: rounding mode,
 * flush-to-zero, denormals-are-zero and exception traps must be back at the
 * C library's defaults when a call returns (docs/hacks.md #19). */
#ifndef CR_FPENV_H
#define CR_FPENV_H

#include <stddef.h>

/* Returns 1 when the control state is not the default (why says how, e.g.
 * "flush-to-zero on") and puts the default back, so the next call does not
 * run under what the candidate left; 0 when it is the default. */
int cr_fpenv_check(char *why, size_t len);

#endif
