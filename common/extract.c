/* extract.c — the kernel source in a model's completion; see extract.h.
 *
 * Shared by the gateway (remote-reward requests that send a completion) and
 * the rollout driver (every turn's answer), so both judge the same text. */
#include "extract.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* One fenced block: [start, end) of its body. */
typedef struct {
    const char *start, *end;
} s_block_t;

/* Whether [s, e) mentions the identifier solve. */
static int s_has_solve(const char *s, const char *e)
{
    for (const char *p = s; p + 5 <= e; p++)
        if (memcmp(p, "solve", 5) == 0 && (p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
            (p + 5 == e || !(isalnum((unsigned char)p[5]) || p[5] == '_')))
            return 1;
    return 0;
}

char *cr_extract_kernel(const char *text, int c_language)
{
    /* fences: a line starting (after up to 3 spaces) with ``` or ~~~ */
    s_block_t last = {0}, last_solve = {0};
    const char *p = text, *open = NULL;
    char fence = 0;
    while (*p) {
        const char *line = p, *nl = strchr(p, '\n');
        const char *eol = nl ? nl : p + strlen(p);
        const char *q = line;
        while (q < eol && q - line < 3 && *q == ' ')
            q++;
        int is_fence = eol - q >= 3 && (memcmp(q, "```", 3) == 0 || memcmp(q, "~~~", 3) == 0);
        if (is_fence && !open) {
            open = nl ? nl + 1 : eol;
            fence = *q;
        } else if (is_fence && *q == fence) {
            s_block_t b = {open, line};
            last = b;
            if (s_has_solve(b.start, b.end))
                last_solve = b;
            open = NULL;
        }
        p = nl ? nl + 1 : eol;
    }
    if (open && open < p) {
        /* a last fence never closed (the model ran out of tokens): to the end */
        s_block_t b = {open, p};
        last = b;
        if (s_has_solve(b.start, b.end))
            last_solve = b;
    }
    s_block_t pick = last_solve.start ? last_solve : last;
    if (!pick.start) {
        pick.start = text;
        pick.end = text + strlen(text);
    }
    size_t n = (size_t)(pick.end - pick.start);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    memcpy(out, pick.start, n);
    out[n] = '\0';
    if (c_language) {
        /* extern "C" (and extern "C" { ... }'s braces are left: rare in a
         * C answer) before a declaration: blanked, so line numbers stay */
        for (char *e = strstr(out, "extern \"C\""); e; e = strstr(e, "extern \"C\"")) {
            char *after = e + 10;
            while (*after == ' ' || *after == '\t')
                after++;
            if (*after == '{')
                break;
            memset(e, ' ', 10);
            e += 10;
        }
    }
    return out;
}
