/* text.c — see text.h. */
#include "text.h"

#include <string.h>

size_t cr_text_copy(char *dst, size_t cap, const char *src)
{
    if (!src)
        src = "";
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
    return n;
}
