/* extract.h — the kernel source in a model's completion.
 *
 * One rule for every front end that turns a completion into a candidate
 * (the gateway's remote-reward shapes, the rollout driver, curate): the
 * last fenced block (```c, ```cuda, ```cpp, ... or bare) that mentions
 * solve, else the last fenced block, else the whole text; an unclosed last
 * fence runs to the end (the model ran out of tokens). */
#ifndef CR_EXTRACT_H
#define CR_EXTRACT_H

/* The kernel in completion. For a C task (c_language), `extern "C"` before a
 * declaration is blanked, as C does not know it (a CUDA task keeps it: the
 * judge takes both). Caller frees the result; NULL on ENOMEM. */
char *cr_extract_kernel(const char *completion, int c_language);

#endif
