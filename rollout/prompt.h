/* prompt.h — the prompt and feedback templates of a rollout, and history trimming.
 *
 * A conversation is a jansson array of {"role", "content"} objects: the
 * prompt (user), then per judged turn the model's answer (assistant) and
 * the judge's feedback (user). docs/rollout.md shows every template. */
#ifndef CR_PROMPT_H
#define CR_PROMPT_H

#include "crucible.pb-c.h"

#include <jansson.h>
#include <stddef.h>

/* What a task's prompt is made of; every string owned. */
typedef struct {
    char *name;      /* task.json "name" */
    char *language;  /* "c", "cuda" */
    char *signature; /* task.json "signature" */
    char *prompt;    /* text of the file task.json "prompt" names; "" when none */
    char *hardware;  /* what the prompt says the kernel runs on */
} cr_prompt_task_t;

/* Fills t from a task folder's task.json text (dir: where "prompt" is
 * read from). hardware "" = from the language. Returns 0, or CR_E_JSON /
 * -errno with err naming the field or file. t is zeroed first and holds
 * nothing on failure. */
int cr_prompt_task_load(cr_prompt_task_t *t, const char *dir, const char *task_json,
                        const char *hardware, char *err, size_t errlen);
void cr_prompt_task_close(cr_prompt_task_t *t);

/* The built-in prompt template (placeholders {task} {language} {hardware}
 * {signature} {prompt}). */
extern const char cr_prompt_default_template[];

/* The first user message: tmpl (NULL = the built-in one) with its
 * placeholders replaced; an unknown {word} is kept as it is. Caller frees;
 * NULL on ENOMEM. */
char *cr_prompt_render(const char *tmpl, const cr_prompt_task_t *t);

/* The feedback message after a judged turn. mode "sentences": fixed
 * sentences by status (the compile log or judge message cut to error_chars;
 * "correct but can be made faster: speedup 1.31x" below target); "json": the
 * record as JSON, its long texts cut to error_chars. Caller frees; NULL on
 * ENOMEM. */
char *cr_prompt_feedback(const char *mode, const Crucible__RewardRecord *rec, double target,
                         size_t error_chars);

/* The messages to send, from the whole conversation: the leading prompt
 * messages (system/first user) always, the last (answer, feedback) pair
 * always, and as many of the other pairs, newest first, as keep the total
 * content within budget characters. Returns a new array (items shared with
 * conv), *dropped = the messages left out; NULL on ENOMEM. */
json_t *cr_prompt_trim(const json_t *conv, size_t budget, size_t *dropped);

/* Characters of content in a message array. */
size_t cr_prompt_chars(const json_t *msgs);

#endif
