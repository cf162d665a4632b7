/* prompt.c — prompt and feedback templates, history trimming; see prompt.h. */
#define _GNU_SOURCE
#include "prompt.h"

#include "error.h"
#include "file.h"
#include "record.h"
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cr_prompt_default_template[] =
    "Write a {language} kernel for {hardware}.\n"
    "\n"
    "Task: {task}\n"
    "{prompt}"
    "Implement this function, with exactly this signature:\n"
    "\n"
    "```{language}\n"
    "{signature}\n"
    "```\n"
    "\n"
    "Answer with the complete source in one fenced code block. It must define solve and may "
    "define helpers; it must compute the result itself (no call to the reference or to a "
    "library that does the work).\n";

/* 64 KiB: a prompt file is a page of text, not a data set */
#define S_PROMPT_MAX (64u << 10)

static char *s_dup(const char *s)
{
    return strdup(s ? s : "");
}

int cr_prompt_task_load(cr_prompt_task_t *t, const char *dir, const char *task_json,
                        const char *hardware, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    json_error_t je;
    json_t *root = json_loads(task_json, 0, &je);
    if (!json_is_object(root)) {
        snprintf(err, errlen, "%s/task.json: %s", dir, root ? "not an object" : je.text);
        json_decref(root);
        return CR_E_JSON;
    }
    const char *name = json_string_value(json_object_get(root, "name"));
    const char *lang = json_string_value(json_object_get(root, "language"));
    const char *sig = json_string_value(json_object_get(root, "signature"));
    const char *pfile = json_string_value(json_object_get(root, "prompt"));
    int rc = 0;
    if (!name || !lang || !sig) {
        snprintf(err, errlen, "%s/task.json: \"%s\" missing or not a string", dir,
                 !name ? "name" : !lang ? "language" : "signature");
        rc = CR_E_JSON;
        goto out;
    }
    char *text = NULL;
    size_t len = 0;
    if (pfile && *pfile) {
        char *path = cr_file_join(dir, pfile);
        rc = path ? cr_file_read(path, S_PROMPT_MAX, &text, &len) : -ENOMEM;
        if (rc != 0)
            snprintf(err, errlen, "%s: %s", path ? path : pfile, cr_strerror(rc));
        free(path);
        if (rc != 0)
            goto out;
    }
    if (text && len && text[len - 1] != '\n') {
        char *t2 = NULL;
        if (asprintf(&t2, "%s\n", text) > 0) {
            free(text);
            text = t2;
        }
    }
    if (!hardware || !*hardware)
        hardware = strcmp(lang, "cuda") == 0 ? "an NVIDIA GPU (CUDA, compiled with nvcc -O3)"
                                             : "one CPU core (x86-64, C11, compiled with cc -O2)";
    t->name = s_dup(name);
    t->language = s_dup(lang);
    t->signature = s_dup(sig);
    t->prompt = text ? text : s_dup("");
    t->hardware = s_dup(hardware);
    if (!t->name || !t->language || !t->signature || !t->prompt || !t->hardware) {
        cr_prompt_task_close(t);
        rc = -ENOMEM;
    }
out:
    json_decref(root);
    return rc;
}

void cr_prompt_task_close(cr_prompt_task_t *t)
{
    free(t->name);
    free(t->language);
    free(t->signature);
    free(t->prompt);
    free(t->hardware);
    memset(t, 0, sizeof *t);
}

char *cr_prompt_render(const char *tmpl, const cr_prompt_task_t *t)
{
    static const char *const keys[] = {"task", "language", "hardware", "signature", "prompt"};
    const char *vals[] = {t->name, t->language, t->hardware, t->signature, t->prompt};
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    for (const char *p = tmpl ? tmpl : cr_prompt_default_template; *p; p++) {
        int done = 0;
        if (*p == '{') {
            for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !done; k++) {
                size_t kl = strlen(keys[k]);
                if (strncmp(p + 1, keys[k], kl) == 0 && p[1 + kl] == '}') {
                    fputs(vals[k] ? vals[k] : "", m);
                    p += kl + 1;
                    done = 1;
                }
            }
        }
        if (!done)
            fputc(*p, m);
    }
    if (fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* s cut to at most max bytes at a UTF-8 boundary, with a note when cut. Caller frees. */
static char *s_cut(const char *s, size_t max)
{
    s = s ? s : "";
    size_t n = strlen(s);
    if (n <= max)
        return strdup(s);
    size_t k = max;
    while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
        k--;
    char *out = NULL;
    return asprintf(&out, "%.*s\n[... %zu more characters cut]", (int)k, s, n - k) > 0 ? out
                                                                                       : NULL;
}

static char *s_sentences(const Crucible__RewardRecord *rec, double target, size_t cut)
{
    char *out = NULL, *what = NULL;
    double s = rec->profile ? rec->profile->speedup_geomean : 0;
    const char *msg = rec->message && *rec->message ? rec->message : cr_status_name(rec->status);
    int r = -1;
    switch (rec->status) {
    case CRUCIBLE__STATUS__STATUS_OK:
        if (rec->n_hack_flags) /* a flagged OK: the judge does not count it correct */
            break;
        if (s >= target)
            r = asprintf(&out, "Your kernel is correct: speedup %.2fx against the reference.", s);
        else
            r = asprintf(&out, "Your kernel is correct but can be made faster: speedup %.2fx "
                         "against the reference (target %.2fx). Answer with a faster version "
                         "of the whole kernel in one fenced code block.", s, target);
        return r > 0 ? out : NULL;
    case CRUCIBLE__STATUS__STATUS_COMPILE_ERROR:
        what = s_cut(rec->compile && rec->compile->log && *rec->compile->log ? rec->compile->log
                                                                             : msg, cut);
        r = what ? asprintf(&out, "Your kernel failed to compile:\n```\n%s\n```\nFix it and "
                            "answer with the whole kernel in one fenced code block.", what)
                 : -1;
        free(what);
        return r > 0 ? out : NULL;
    case CRUCIBLE__STATUS__STATUS_INCORRECT:
        what = s_cut(msg, cut);
        r = what ? asprintf(&out, "Your kernel compiled and ran, but its output is wrong: %s\n"
                            "Fix it and answer with the whole kernel in one fenced code block.",
                            what)
                 : -1;
        free(what);
        return r > 0 ? out : NULL;
    case CRUCIBLE__STATUS__STATUS_COMPILE_TIMEOUT:
    case CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR:
    case CRUCIBLE__STATUS__STATUS_CUDA_FAULT:
    case CRUCIBLE__STATUS__STATUS_OOM:
    case CRUCIBLE__STATUS__STATUS_TIMEOUT:
        what = s_cut(msg, cut);
        r = what ? asprintf(&out, "Your kernel did not finish (%s): %s\nFix it and answer with "
                            "the whole kernel in one fenced code block.",
                            cr_status_name(rec->status), what)
                 : -1;
        free(what);
        return r > 0 ? out : NULL;
    default:
        break;
    }
    if (rec->status == CRUCIBLE__STATUS__STATUS_HACK_DETECTED || rec->n_hack_flags) {
        char flags[512] = "";
        size_t n = 0;
        for (size_t i = 0; i < rec->n_hack_flags && n + 2 < sizeof flags; i++) {
            int k = snprintf(flags + n, sizeof flags - n, "%s%s", i ? ", " : "",
                             rec->hack_flags[i]);
            n = k > 0 && n + (size_t)k < sizeof flags ? n + (size_t)k : sizeof flags - 1;
        }
        what = s_cut(msg, cut);
        r = what ? asprintf(&out, "The judge rejected your kernel as gaming the measurement "
                            "(%s): %s\nWrite an honest kernel that computes the result and "
                            "answer with it in one fenced code block.", flags[0] ? flags : "hack",
                            what)
                 : -1;
        free(what);
        return r > 0 ? out : NULL;
    }
    /* infrastructure outcomes and anything else: not the kernel's fault */
    r = asprintf(&out, "The judge could not evaluate your kernel (%s). Answer again with the "
                 "whole kernel in one fenced code block.", cr_status_name(rec->status));
    return r > 0 ? out : NULL;
}

static char *s_json(const Crucible__RewardRecord *rec, size_t cut)
{
    Crucible__RewardRecord *c = cr_wire_record_dup(rec);
    if (!c)
        return NULL;
    char *m = s_cut(c->message, cut), *l = c->compile ? s_cut(c->compile->log, cut) : NULL;
    /* an empty string of an unpacked message is protobuf-c's static one: never freed */
    if (m) {
        if (c->message != protobuf_c_empty_string)
            free(c->message);
        c->message = m;
    }
    if (l) {
        if (c->compile->log != protobuf_c_empty_string)
            free(c->compile->log);
        c->compile->log = l;
    }
    char *j = cr_record_to_json(c), *out = NULL;
    crucible__reward_record__free_unpacked(c, NULL);
    int r = j ? asprintf(&out, "The judge's record of your kernel:\n```json\n%s\n```\nImprove "
                         "the kernel and answer with the whole of it in one fenced code block.",
                         j)
              : -1;
    free(j);
    return r > 0 ? out : NULL;
}

char *cr_prompt_feedback(const char *mode, const Crucible__RewardRecord *rec, double target,
                         size_t error_chars)
{
    if (mode && strcmp(mode, "json") == 0)
        return s_json(rec, error_chars);
    return s_sentences(rec, target, error_chars);
}

size_t cr_prompt_chars(const json_t *msgs)
{
    size_t n = 0, i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        n += json_string_length(json_object_get(m, "content"));
    return n;
}

json_t *cr_prompt_trim(const json_t *conv, size_t budget, size_t *dropped)
{
    size_t n = json_array_size(conv), head = 0;
    *dropped = 0;
    /* the head: system messages and the first user message */
    while (head < n) {
        const char *role = json_string_value(json_object_get(json_array_get(conv, head), "role"));
        head++;
        if (!role || strcmp(role, "system") != 0)
            break;
    }
    size_t total = cr_prompt_chars(conv), from = head; /* pairs before from are dropped */
    /* drop the oldest (answer, feedback) pairs while over budget, keeping the last pair */
    while (total > budget && from + 2 < n) {
        total -= json_string_length(json_object_get(json_array_get(conv, from), "content"));
        total -= json_string_length(json_object_get(json_array_get(conv, from + 1), "content"));
        from += 2;
    }
    json_t *out = json_array();
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (i < head || i >= from)
            json_array_append(out, json_array_get(conv, i));
    *dropped = from - head;
    return out;
}
