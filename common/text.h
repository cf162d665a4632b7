/* text.h — bounded copies of C strings. */
#ifndef CR_TEXT_H
#define CR_TEXT_H

#include <stddef.h>

/* Copies src ("" when NULL) into dst of cap bytes (cap >= 1), cut to cap - 1
 * bytes and always terminated: what snprintf(dst, cap, "%s", src) does,
 * without its format parsing, which the coordinator's per-job paths paid
 * for on every id they copy. Returns the bytes copied, NUL not counted. */
size_t cr_text_copy(char *dst, size_t cap, const char *src);

#endif
