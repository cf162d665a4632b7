/* task.c — see task.h.
 *
 * Validation runs in the order an author fixes things: unknown keys first (so
 * a misspelt required key is reported as the typo, not as missing), then the
 * signature, the params it declares, the optional expressions, the cases that
 * give sizes, and the remaining optional fields. The first problem found is
 * reported, always as "<origin>: <field path>: <what is wrong>". */
#define _GNU_SOURCE
#include "task.h"

#include "error.h"
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- dtypes */

static const struct {
    const char *name; /* as written in task.json */
    size_t size;      /* bytes per element */
    int is_float;
    int64_t min, max; /* value range, integers only */
} s_dtypes[CR_DT__COUNT] = {
    [CR_DT_F32] = {"float32", 4, 1, 0, 0},
    [CR_DT_F64] = {"float64", 8, 1, 0, 0},
    [CR_DT_F16] = {"float16", 2, 1, 0, 0},
    [CR_DT_BF16] = {"bfloat16", 2, 1, 0, 0},
    [CR_DT_I8] = {"int8", 1, 0, INT8_MIN, INT8_MAX},
    [CR_DT_U8] = {"uint8", 1, 0, 0, UINT8_MAX},
    [CR_DT_I16] = {"int16", 2, 0, INT16_MIN, INT16_MAX},
    [CR_DT_I32] = {"int32", 4, 0, INT32_MIN, INT32_MAX},
    [CR_DT_U32] = {"uint32", 4, 0, 0, UINT32_MAX},
    [CR_DT_I64] = {"int64", 8, 0, INT64_MIN, INT64_MAX},
    [CR_DT_BOOL] = {"bool", 1, 0, 0, 1},
};

#define S_DTYPE_LIST \
    "float32, float64, float16, bfloat16, int8, uint8, int16, int32, uint32, int64, bool"

int cr_dtype_parse(const char *s, cr_dtype_t *out)
{
    for (int d = 0; d < CR_DT__COUNT; d++)
        if (s && strcmp(s, s_dtypes[d].name) == 0) {
            *out = (cr_dtype_t)d;
            return 0;
        }
    return CR_E_TASK;
}

const char *cr_dtype_name(cr_dtype_t d)
{
    return (unsigned)d < CR_DT__COUNT ? s_dtypes[d].name : "?";
}

size_t cr_dtype_size(cr_dtype_t d)
{
    return (unsigned)d < CR_DT__COUNT ? s_dtypes[d].size : 0;
}

int cr_dtype_is_float(cr_dtype_t d)
{
    return (unsigned)d < CR_DT__COUNT && s_dtypes[d].is_float;
}

static const char *const s_roles[CR_ROLE__COUNT] = {"in",     "out",  "inout", "size",
                                                     "scalar", "rank", "world", "comm"};

const char *cr_role_name(cr_role_t r)
{
    return (unsigned)r < CR_ROLE__COUNT ? s_roles[r] : "?";
}

static int s_is_buffer(cr_role_t r)
{
    return r == CR_ROLE_IN || r == CR_ROLE_OUT || r == CR_ROLE_INOUT;
}

/* The roles only a task with "gpus" has: the judge sets them on each rank. */
static int s_is_rank_role(cr_role_t r)
{
    return r == CR_ROLE_RANK || r == CR_ROLE_WORLD || r == CR_ROLE_COMM;
}

/* Names that shape, bytes and flops expressions may use: sizes, and the world
 * size of a multi-GPU task (a reduce-scatter's input is world times its output). */
static int s_is_size_name(cr_role_t r)
{
    return r == CR_ROLE_SIZE || r == CR_ROLE_WORLD;
}

/* ---------------------------------------------------------------- C types */

/* The C types a signature may use, by canonical spelling. dtype is the
 * element type it matches (-1: none, e.g. size_t has no dtype); max is the
 * largest size value it can hold (0: not an integer type, unusable as a size).
 * long is 64-bit: every platform we run on (x86-64, aarch64 Linux) is LP64. */
static const struct {
    const char *text;
    int dtype;
    int64_t max;
} s_ctypes[] = {
    {"float", CR_DT_F32, 0},
    {"double", CR_DT_F64, 0},
    {"half", CR_DT_F16, 0},
    {"__half", CR_DT_F16, 0},
    {"__nv_bfloat16", CR_DT_BF16, 0},
    {"nv_bfloat16", CR_DT_BF16, 0},
    {"bool", CR_DT_BOOL, 0},
    {"signed char", CR_DT_I8, INT8_MAX},
    {"unsigned char", CR_DT_U8, UINT8_MAX},
    {"short", CR_DT_I16, INT16_MAX},
    {"unsigned short", -1, UINT16_MAX},
    {"int", CR_DT_I32, INT32_MAX},
    {"unsigned int", CR_DT_U32, UINT32_MAX},
    {"long", CR_DT_I64, INT64_MAX},
    {"unsigned long", -1, INT64_MAX},
    {"long long", CR_DT_I64, INT64_MAX},
    {"unsigned long long", -1, INT64_MAX},
    {"int8_t", CR_DT_I8, INT8_MAX},
    {"uint8_t", CR_DT_U8, UINT8_MAX},
    {"int16_t", CR_DT_I16, INT16_MAX},
    {"uint16_t", -1, UINT16_MAX},
    {"int32_t", CR_DT_I32, INT32_MAX},
    {"uint32_t", CR_DT_U32, UINT32_MAX},
    {"int64_t", CR_DT_I64, INT64_MAX},
    {"uint64_t", -1, INT64_MAX},
    {"size_t", -1, INT64_MAX},
    {"ncclComm_t", -1, 0}, /* the comm param of a task with "gpus" (nccl.h's opaque pointer) */
};
#define S_NCTYPES ((int)(sizeof s_ctypes / sizeof s_ctypes[0]))

static int s_ctype_find(const char *text)
{
    for (int i = 0; i < S_NCTYPES; i++)
        if (strcmp(s_ctypes[i].text, text) == 0)
            return i;
    return -1;
}

/* ---------------------------------------------------------------- messages */

typedef struct {
    const char *origin; /* file named in messages */
    char *err;          /* message buffer; may be NULL */
    size_t errlen;
} s_ctx_t;

static int s_fail(const s_ctx_t *cx, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int s_fail(const s_ctx_t *cx, const char *path, const char *fmt, ...)
{
    if (cx->err && cx->errlen) {
        int n = snprintf(cx->err, cx->errlen, "%s: %s: ", cx->origin, path);
        if (n >= 0 && (size_t)n < cx->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(cx->err + n, cx->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return CR_E_TASK;
}

static const char *s_jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Levenshtein distance, for "did you mean". Keys longer than 31 are never close. */
static int s_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 31 || lb > 31)
        return 99;
    int row[32];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Refuses keys of obj not in allowed (NULL-terminated), suggesting the closest. */
static int s_check_keys(const s_ctx_t *cx, json_t *obj, const char *prefix,
                        const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = 0, best = 3;
        const char *hint = NULL;
        for (int i = 0; allowed[i] && !ok; i++) {
            ok = strcmp(key, allowed[i]) == 0;
            int d = s_distance(key, allowed[i]);
            if (d < best) {
                best = d;
                hint = allowed[i];
            }
        }
        if (ok)
            continue;
        char path[160];
        snprintf(path, sizeof path, "%s%s%.64s", prefix, *prefix ? "." : "", key);
        if (hint)
            return s_fail(cx, path, "unknown key (did you mean '%s'?)", hint);
        return s_fail(cx, path, "unknown key");
    }
    return 0;
}

/* Gets obj[key] as a string. Absent (or null) is *out = NULL, an error when
 * required. Empty strings and strings with NUL bytes are refused. */
static int s_get_string(const s_ctx_t *cx, json_t *obj, const char *key, const char *path,
                        int required, const char **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return required ? s_fail(cx, path, "missing") : 0;
    if (!json_is_string(v))
        return s_fail(cx, path, "must be a string, got %s", s_jtype(v));
    const char *s = json_string_value(v);
    if (strlen(s) != json_string_length(v))
        return s_fail(cx, path, "must not contain NUL characters");
    if (!*s)
        return s_fail(cx, path, "must not be empty");
    *out = s;
    return 0;
}

static int s_dup(const char *s, char **out)
{
    *out = NULL;
    if (s && !(*out = strdup(s)))
        return -ENOMEM;
    return 0;
}

/* A file name inside the task folder: no directories, nothing hidden, so a
 * task can never make a judge read outside its folder. */
static int s_check_filename(const s_ctx_t *cx, const char *path, const char *s)
{
    if (strlen(s) > 255)
        return s_fail(cx, path, "file name longer than 255 characters");
    if (strchr(s, '/') || strchr(s, '\\') || strstr(s, ".."))
        return s_fail(cx, path, "'%s' must be a plain file name in the task folder "
                                "(no '/' or '..')", s);
    if (s[0] == '.')
        return s_fail(cx, path, "'%s' must not start with '.'", s);
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '"')
            return s_fail(cx, path, "file name contains a control character or '\"'");
    return 0;
}

/* ---------------------------------------------------------------- signature */

/* Reads one token: identifier (copied to word), or a punctuation char. Returns
 * 'w' for a word, 'L' for a word too long for word, the char itself, 0 at the end. */
static int s_sig_token(const char **pp, char *word, size_t cap)
{
    const char *p = *pp;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    *pp = p + (*p != '\0');
    if (!*p)
        return 0;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
        return *p;
    size_t n = 0;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
           (*p >= '0' && *p <= '9')) {
        if (n + 1 < cap)
            word[n] = *p;
        n++;
        p++;
    }
    word[n + 1 < cap ? n : cap - 1] = '\0';
    *pp = p;
    return n + 1 < cap ? 'w' : 'L';
}

static int s_is_one_of(const char *w, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(w, list[i]) == 0)
            return 1;
    return 0;
}

static const char *const s_qualifiers[] = {"const",      "volatile",   "restrict",
                                           "__restrict", "__restrict__", NULL};
static const char *const s_int_words[] = {"signed", "unsigned", "short", "long", "int", "char",
                                          NULL};

/* Words that can never be a parameter name. */
static const char *const s_keywords[] = {
    "void", "float", "double", "struct", "union", "enum", "auto", "register", "static",
    "extern", "inline", "typedef", "return", "if", "else", "for", "while", "do", "switch",
    "case", "default", "break", "continue", "goto", "sizeof", "class", "template", "new",
    "delete", "this", "operator", "namespace", "using", "true", "false", "nullptr", NULL};

/* Builds the canonical base type from the words of one declaration, e.g.
 * {"unsigned", "long", "int"} -> "unsigned long". Returns the s_ctypes index
 * or -1 with a reason in why. */
static int s_base_type(char words[][64], int n, char *why, size_t whylen)
{
    int nsigned = 0, nunsigned = 0, nshort = 0, nlong = 0, nint = 0, nchar = 0;
    const char *other = NULL;
    for (int i = 0; i < n; i++) {
        const char *w = words[i];
        if (!strcmp(w, "signed")) nsigned++;
        else if (!strcmp(w, "unsigned")) nunsigned++;
        else if (!strcmp(w, "short")) nshort++;
        else if (!strcmp(w, "long")) nlong++;
        else if (!strcmp(w, "int")) nint++;
        else if (!strcmp(w, "char")) nchar++;
        else if (other) {
            snprintf(why, whylen, "'%s %s' is not a type", other, w);
            return -1;
        } else
            other = w;
    }
    int nint_words = nsigned + nunsigned + nshort + nlong + nint + nchar;
    char text[64];
    if (other) {
        if (nint_words) {
            snprintf(why, whylen, "'%s' cannot be combined with signed/unsigned/short/long/int",
                     other);
            return -1;
        }
        snprintf(text, sizeof text, "%s", other);
    } else if (nint_words == 0) {
        snprintf(why, whylen, "no type given");
        return -1;
    } else if ((nsigned && nunsigned) || nsigned > 1 || nunsigned > 1 || nint > 1 || nchar > 1 ||
               nshort > 1 || nlong > 2 || (nshort && nlong) ||
               (nchar && (nshort || nlong || nint))) {
        snprintf(why, whylen, "invalid combination of integer type words");
        return -1;
    } else {
        const char *core = nchar ? "char" : nshort ? "short" : nlong == 2 ? "long long"
                         : nlong ? "long" : "int";
        if (nchar && !nsigned && !nunsigned) {
            snprintf(why, whylen, "plain 'char' has no fixed sign; use int8_t or uint8_t");
            return -1;
        }
        snprintf(text, sizeof text, "%s%s",
                 nunsigned ? "unsigned " : nchar && nsigned ? "signed " : "", core);
    }
    int idx = s_ctype_find(text);
    if (idx < 0)
        snprintf(why, whylen, "unknown type '%.40s' (use float, double, half, __nv_bfloat16, bool, "
                              "a C integer type, an <stdint.h> type or size_t)", text);
    return idx;
}

/* One parameter: the tokens between '(' or ',' and ',' or ')'. Qualifiers
 * before the '*' belong to the pointee and stay in ctype; those after it, and
 * all of them on a value param, are top-level and dropped: they are not part
 * of the function's type, and restrict means nothing to the caller. */
static int s_sig_param(const s_ctx_t *cx, const char **pp, int pos, cr_param_t *prm, int *ctype_idx,
                       int *end)
{
    char words[16][64], base[16][64], tok[64], why[200];
    int word_stars[16], nwords = 0, nbase = 0, stars = 0, kind, pconst = 0, pvolatile = 0;
    while ((kind = s_sig_token(pp, tok, sizeof tok)) != ',' && kind != ')') {
        if (kind == 0)
            return s_fail(cx, "signature", "missing ')'");
        if (kind == '*') {
            stars++;
            continue;
        }
        if (kind == 'L')
            return s_fail(cx, "signature", "parameter %d: '%.20s...' is longer than 63 characters",
                          pos + 1, tok);
        if (kind != 'w')
            return s_fail(cx, "signature", "parameter %d: unexpected '%c' (write 'type name' or "
                                           "'type *name')", pos + 1, kind);
        if (nwords == 16)
            return s_fail(cx, "signature", "parameter %d: too many words", pos + 1);
        word_stars[nwords] = stars;
        snprintf(words[nwords++], 64, "%s", tok);
    }
    *end = kind == ')';
    if (nwords == 0)
        return s_fail(cx, "signature", "parameter %d is empty", pos + 1);
    const char *name = words[nwords - 1];
    if (s_is_one_of(name, s_qualifiers) || s_is_one_of(name, s_int_words) ||
        s_is_one_of(name, s_keywords) || s_ctype_find(name) >= 0)
        return s_fail(cx, "signature", "parameter %d has no name", pos + 1);
    if (stars > 1)
        return s_fail(cx, "signature", "parameter %d ('%s'): only one level of pointer is "
                                       "supported", pos + 1, name);
    if (word_stars[nwords - 1] < stars)
        return s_fail(cx, "signature", "parameter %d ('%s'): '*' after the name", pos + 1, name);
    for (int i = 0; i < nwords - 1; i++) {
        const char *w = words[i];
        if (s_is_one_of(w, s_qualifiers)) {
            pconst |= word_stars[i] == 0 && !strcmp(w, "const");
            pvolatile |= word_stars[i] == 0 && !strcmp(w, "volatile");
        } else if (word_stars[i] > 0) {
            return s_fail(cx, "signature", "parameter %d ('%s'): type word '%s' after '*'",
                          pos + 1, name, w);
        } else {
            snprintf(base[nbase++], 64, "%s", w);
        }
    }
    int ci = s_base_type(base, nbase, why, sizeof why);
    if (ci < 0)
        return s_fail(cx, "signature", "parameter %d ('%s'): %s", pos + 1, name, why);
    snprintf(prm->name, sizeof prm->name, "%s", name);
    prm->is_pointer = stars == 1;
    if (prm->is_pointer)
        snprintf(prm->ctype, sizeof prm->ctype, "%s%s%s *", pconst ? "const " : "",
                 pvolatile ? "volatile " : "", s_ctypes[ci].text);
    else
        snprintf(prm->ctype, sizeof prm->ctype, "%s", s_ctypes[ci].text);
    *ctype_idx = ci;
    return 0;
}

/* Parses "void solve(<type> <name>, ...)" into t->params (names, ctype,
 * is_pointer) and ctype_idx[] (the s_ctypes entry of each base type). */
static int s_parse_signature(const s_ctx_t *cx, const char *sig, cr_task_t *t, int *ctype_idx)
{
    const char *p = sig;
    char tok[64];
    int kind = s_sig_token(&p, tok, sizeof tok);
    /* Authors paste declarations from CUDA sources: extern "C" changes only
     * linkage, which the shim makes irrelevant. */
    if (kind == 'w' && !strcmp(tok, "extern")) {
        if (s_sig_token(&p, tok, sizeof tok) != '"' || s_sig_token(&p, tok, sizeof tok) != 'w' ||
            strcmp(tok, "C") || s_sig_token(&p, tok, sizeof tok) != '"')
            return s_fail(cx, "signature", "only extern \"C\" may precede 'void solve(...)'");
        kind = s_sig_token(&p, tok, sizeof tok);
    }
    if (kind != 'w' || strcmp(tok, "void") != 0)
        return s_fail(cx, "signature", "return type must be void");
    if ((kind = s_sig_token(&p, tok, sizeof tok)) == '*')
        return s_fail(cx, "signature", "return type must be void, not a pointer");
    if (kind != 'w' || strcmp(tok, "solve") != 0)
        return s_fail(cx, "signature", "the function must be named solve");
    if (s_sig_token(&p, tok, sizeof tok) != '(')
        return s_fail(cx, "signature", "expected '(' after solve");
    /* "solve()" and "solve(void)" declare no parameters. */
    const char *save = p;
    kind = s_sig_token(&p, tok, sizeof tok);
    int empty = kind == ')';
    if (kind == 'w' && !strcmp(tok, "void")) {
        const char *p2 = p;
        if (s_sig_token(&p2, tok, sizeof tok) == ')') {
            empty = 1;
            p = p2;
        }
    }
    if (!empty)
        p = save;
    for (int end = empty; !end;) {
        if (t->nparams == CR_TASK_MAX_PARAMS)
            return s_fail(cx, "signature", "more than %d parameters", CR_TASK_MAX_PARAMS);
        cr_param_t *prm = &t->params[t->nparams];
        int rc = s_sig_param(cx, &p, t->nparams, prm, &ctype_idx[t->nparams], &end);
        if (rc)
            return rc;
        for (int i = 0; i < t->nparams; i++)
            if (!strcmp(t->params[i].name, prm->name))
                return s_fail(cx, "signature", "parameter '%s' declared twice", prm->name);
        t->nparams++;
    }
    kind = s_sig_token(&p, tok, sizeof tok);
    if (kind == ';')
        kind = s_sig_token(&p, tok, sizeof tok);
    if (kind != 0)
        return s_fail(cx, "signature", "unexpected text after ')'");
    return 0;
}

/* ---------------------------------------------------------------- expressions */

typedef struct {
    const char *names[CR_TASK_MAX_PARAMS]; /* size params by param index, "" for others */
    int n;
} s_sizes_t;

/* Parses a shape entry or bytes/flops: a JSON integer >= min, or a string
 * expression over size names. */
static int s_parse_expr(const s_ctx_t *cx, const cr_task_t *t, const s_sizes_t *sz, json_t *v,
                        const char *path, int64_t min, cr_expr_t **out)
{
    *out = NULL;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < min)
            return s_fail(cx, path, "must be at least %lld", (long long)min);
        return (*out = cr_expr_const(json_integer_value(v))) ? 0 : -ENOMEM;
    }
    if (!json_is_string(v))
        return s_fail(cx, path, "must be an integer or a string expression over size names, "
                                "got %s", s_jtype(v));
    char why[160];
    int rc = cr_expr_parse(json_string_value(v), sz->names, sz->n, out, why, sizeof why);
    if (rc != CR_E_EXPR)
        return rc;
    /* Name the unknown size, and say what it is when it is another param. */
    const char *s = json_string_value(v);
    for (const char *p = s; *p;) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_')) {
            p++;
            continue;
        }
        const char *st = p;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
               (*p >= '0' && *p <= '9'))
            p++;
        int len = (int)(p - st), known = 0, other = -1;
        for (int i = 0; i < t->nparams; i++)
            if ((int)strlen(t->params[i].name) == len && !memcmp(t->params[i].name, st, len)) {
                if (s_is_size_name(t->params[i].role))
                    known = 1;
                else
                    other = i;
            }
        if (known)
            continue;
        char list[256] = "";
        for (int i = 0; i < t->nparams; i++)
            if (t->params[i].role == CR_ROLE_SIZE && strlen(list) + 70 < sizeof list)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         *list ? ", " : "", t->params[i].name);
        if (other >= 0)
            return s_fail(cx, path, "unknown size '%.*s' (it is a%s %s param; expressions use "
                                    "only size params: %s)", len, st,
                          s_is_buffer(t->params[other].role) ? "n" : "",
                          cr_role_name(t->params[other].role), *list ? list : "none");
        return s_fail(cx, path, "unknown size '%.*s' (size params: %s)", len > 63 ? 63 : len, st,
                      *list ? list : "none");
    }
    return s_fail(cx, path, "%s", why);
}

/* ---------------------------------------------------------------- params */

static const char *const s_param_keys[] = {"role", "dtype", "shape", "init", NULL};

/* Reads obj[key] as a number into *out; absent leaves *out. */
static int s_get_number(const s_ctx_t *cx, json_t *obj, const char *key, const char *prefix,
                        int required, double *out)
{
    char path[160];
    /* a field path longer than the buffer is cut in the message only */
    if (snprintf(path, sizeof path, "%s.%s", prefix, key) >= (int)sizeof path)
        path[sizeof path - 1] = '\0';
    json_t *v = json_object_get(obj, key);
    if (!v)
        return required ? s_fail(cx, path, "missing") : 0;
    if (!json_is_number(v))
        return s_fail(cx, path, "must be a number, got %s", s_jtype(v));
    *out = json_number_value(v);
    return 0;
}

static int s_parse_init(const s_ctx_t *cx, json_t *v, const char *prefix, cr_param_t *prm)
{
    char path[160];
    snprintf(path, sizeof path, "%s.init", prefix);
    if (!json_is_object(v))
        return s_fail(cx, path, "must be an object like {\"dist\": \"normal\", \"std\": 1}");
    const char *dist;
    char dpath[176];
    snprintf(dpath, sizeof dpath, "%s.dist", path);
    int rc = s_get_string(cx, v, "dist", dpath, 1, &dist);
    if (rc)
        return rc;
    cr_dist_t *d = &prm->init;
    const char *const normal_keys[] = {"dist", "mean", "std", NULL};
    const char *const range_keys[] = {"dist", "low", "high", NULL};
    if (!strcmp(dist, "normal")) {
        *d = (cr_dist_t){CR_DIST_NORMAL, 0, 1};
        if ((rc = s_check_keys(cx, v, path, normal_keys)) != 0 ||
            (rc = s_get_number(cx, v, "mean", path, 0, &d->a)) != 0 ||
            (rc = s_get_number(cx, v, "std", path, 0, &d->b)) != 0)
            return rc;
        if (!(d->b > 0)) {
            snprintf(dpath, sizeof dpath, "%s.std", path);
            return s_fail(cx, dpath, "must be greater than 0");
        }
    } else if (!strcmp(dist, "uniform") || !strcmp(dist, "int")) {
        *d = (cr_dist_t){dist[0] == 'u' ? CR_DIST_UNIFORM : CR_DIST_INT, 0, 0};
        if ((rc = s_check_keys(cx, v, path, range_keys)) != 0 ||
            (rc = s_get_number(cx, v, "low", path, 1, &d->a)) != 0 ||
            (rc = s_get_number(cx, v, "high", path, 1, &d->b)) != 0)
            return rc;
        snprintf(dpath, sizeof dpath, "%s.high", path);
        if (!(d->a < d->b))
            return s_fail(cx, dpath, "must be greater than low");
    } else {
        return s_fail(cx, dpath, "unknown distribution '%s' (one of normal, uniform, int)", dist);
    }
    if (d->kind != CR_DIST_INT && !cr_dtype_is_float(prm->dtype))
        return s_fail(cx, dpath, "'%s' draws fractions; %s buffers take {\"dist\": \"int\"}", dist,
                      cr_dtype_name(prm->dtype));
    if (d->kind == CR_DIST_INT) {
        snprintf(dpath, sizeof dpath, "%s.low", path);
        if (d->a != floor(d->a))
            return s_fail(cx, dpath, "must be an integer");
        snprintf(dpath, sizeof dpath, "%s.high", path);
        if (d->b != floor(d->b))
            return s_fail(cx, dpath, "must be an integer");
        if (!cr_dtype_is_float(prm->dtype)) {
            double mn = (double)s_dtypes[prm->dtype].min, mx = (double)s_dtypes[prm->dtype].max;
            if (d->a < mn || d->a > mx) {
                snprintf(dpath, sizeof dpath, "%s.low", path);
                return s_fail(cx, dpath, "%g is outside %s", d->a, cr_dtype_name(prm->dtype));
            }
            if (d->b > mx + 1) /* high is exclusive */
                return s_fail(cx, dpath, "%g is outside %s (high is exclusive: at most %.0f)",
                              d->b, cr_dtype_name(prm->dtype), mx + 1);
        }
    }
    return 0;
}

/* Inputs are drawn from N(0,1) for floats and small integers otherwise;
 * unsigned types start at 0 so no value wraps to a huge number. */
static cr_dist_t s_default_init(cr_dtype_t d)
{
    switch (d) {
    case CR_DT_F32:
    case CR_DT_F64:
    case CR_DT_F16:
    case CR_DT_BF16: return (cr_dist_t){CR_DIST_NORMAL, 0, 1};
    case CR_DT_U8: return (cr_dist_t){CR_DIST_INT, 0, 256};
    case CR_DT_BOOL: return (cr_dist_t){CR_DIST_INT, 0, 2};
    case CR_DT_U32: return (cr_dist_t){CR_DIST_INT, 0, 200};
    default: return (cr_dist_t){CR_DIST_INT, -100, 100};
    }
}

static int s_parse_role(const s_ctx_t *cx, json_t *pj, cr_param_t *prm)
{
    char prefix[96], path[112];
    snprintf(prefix, sizeof prefix, "params.%s", prm->name);
    if (!json_is_object(pj))
        return s_fail(cx, prefix, "must be an object, got %s", s_jtype(pj));
    int rc = s_check_keys(cx, pj, prefix, s_param_keys);
    if (rc)
        return rc;
    const char *role;
    snprintf(path, sizeof path, "%s.role", prefix);
    if ((rc = s_get_string(cx, pj, "role", path, 1, &role)) != 0)
        return rc;
    for (int r = 0; r < CR_ROLE__COUNT; r++)
        if (!strcmp(role, s_roles[r])) {
            prm->role = (cr_role_t)r;
            if (s_is_buffer(prm->role) && !prm->is_pointer)
                return s_fail(cx, path, "'%s' is a buffer role, but the signature declares "
                                        "'%s %s' (not a pointer)", role, prm->ctype, prm->name);
            if (!s_is_buffer(prm->role) && prm->is_pointer)
                return s_fail(cx, path, "'%s' params are passed by value, but the signature "
                                        "declares '%s%s' (a pointer)", role, prm->ctype, prm->name);
            return 0;
        }
    return s_fail(cx, path, "unknown role '%s' (one of in, out, inout, size, scalar; rank, "
                            "world, comm in a task with \"gpus\")", role);
}

static int s_parse_rank_param(const s_ctx_t *cx, cr_task_t *t, json_t *pj, int i,
                              const char *dname);

static int s_parse_param(const s_ctx_t *cx, cr_task_t *t, const s_sizes_t *sz, json_t *pj, int i,
                         int ctype_idx)
{
    cr_param_t *prm = &t->params[i];
    char prefix[96], path[112];
    snprintf(prefix, sizeof prefix, "params.%s", prm->name);
    int rc;
    const char *dname;
    snprintf(path, sizeof path, "%s.dtype", prefix);
    if ((rc = s_get_string(cx, pj, "dtype", path, 0, &dname)) != 0)
        return rc;
    if (s_is_rank_role(prm->role))
        return s_parse_rank_param(cx, t, pj, i, dname);
    if (!strcmp(s_ctypes[ctype_idx].text, "ncclComm_t"))
        return s_fail(cx, prefix, "'%s %s' is a communicator: its role is comm, not %s",
                      prm->ctype, prm->name, cr_role_name(prm->role));
    if (prm->role == CR_ROLE_SIZE) {
        cr_dtype_t d;
        if (s_ctypes[ctype_idx].max == 0)
            return s_fail(cx, prefix, "size params need an integer C type, the signature "
                                      "declares '%s'", prm->ctype);
        if (dname && (cr_dtype_parse(dname, &d) != 0 || cr_dtype_is_float(d) || d == CR_DT_BOOL))
            return s_fail(cx, path, "sizes are integers (int64); '%s' is not an integer dtype",
                          dname);
        prm->dtype = CR_DT_I64;
    } else {
        if (!dname)
            return s_fail(cx, path, "missing (one of " S_DTYPE_LIST ")");
        if (cr_dtype_parse(dname, &prm->dtype) != 0)
            return s_fail(cx, path, "unknown dtype '%s' (one of " S_DTYPE_LIST ")", dname);
        int want = s_ctypes[ctype_idx].dtype;
        if (want < 0)
            return s_fail(cx, path, "the signature's '%s' matches no dtype (one of "
                                    S_DTYPE_LIST ")", s_ctypes[ctype_idx].text);
        if ((int)prm->dtype != want)
            return s_fail(cx, path, "'%s' does not match the signature's '%s' (which is %s)",
                          dname, prm->ctype, cr_dtype_name((cr_dtype_t)want));
    }

    json_t *shape = json_object_get(pj, "shape");
    snprintf(path, sizeof path, "%s.shape", prefix);
    if (!s_is_buffer(prm->role)) {
        if (shape)
            return s_fail(cx, path, "only in, out and inout buffers have a shape");
    } else if (!shape) {
        return s_fail(cx, path, "missing (%s buffers need a shape)", cr_role_name(prm->role));
    } else {
        if (!json_is_array(shape) || json_array_size(shape) < 1 ||
            json_array_size(shape) > CR_TASK_MAX_DIMS)
            return s_fail(cx, path, "must be an array of 1 to %d dimensions", CR_TASK_MAX_DIMS);
        for (size_t k = 0; k < json_array_size(shape); k++) {
            char dpath[160];
            snprintf(dpath, sizeof dpath, "%s[%zu]", path, k);
            if ((rc = s_parse_expr(cx, t, sz, json_array_get(shape, k), dpath, 1,
                                   &prm->shape[k])) != 0)
                return rc;
            prm->ndim++;
        }
    }

    json_t *init = json_object_get(pj, "init");
    prm->init = s_default_init(prm->dtype);
    if (init && prm->role != CR_ROLE_IN && prm->role != CR_ROLE_INOUT) {
        snprintf(path, sizeof path, "%s.init", prefix);
        return s_fail(cx, path, "only in and inout buffers are drawn from an init");
    }
    return init ? s_parse_init(cx, init, prefix, prm) : 0;
}

/* A rank, world or comm param (docs/multigpu.md): in a task with "gpus" only,
 * at most one of each, of the C type the judge passes, with nothing to draw. */
static int s_parse_rank_param(const s_ctx_t *cx, cr_task_t *t, json_t *pj, int i,
                              const char *dname)
{
    cr_param_t *prm = &t->params[i];
    const char *role = cr_role_name(prm->role);
    char prefix[96], path[112];
    snprintf(prefix, sizeof prefix, "params.%s", prm->name);
    snprintf(path, sizeof path, "%s.role", prefix);
    if (!t->gpus)
        return s_fail(cx, path, "'%s' is a param of a multi-GPU task: give the task "
                                "\"gpus\": N (the ranks it runs on)", role);
    int *slot = prm->role == CR_ROLE_RANK    ? &t->rank_param
                : prm->role == CR_ROLE_WORLD ? &t->world_param
                                             : &t->comm_param;
    if (*slot >= 0)
        return s_fail(cx, path, "a second %s param (the first is '%s')", role,
                      t->params[*slot].name);
    *slot = i;
    const char *want = prm->role == CR_ROLE_COMM ? "ncclComm_t" : "int";
    if (strcmp(prm->ctype, want))
        return s_fail(cx, prefix, "the judge passes the %s as '%s', the signature declares "
                                  "'%s %s'", role, want, prm->ctype, prm->name);
    snprintf(path, sizeof path, "%s.dtype", prefix);
    if (dname)
        return s_fail(cx, path, "%s params take no dtype (the judge passes '%s')", role, want);
    prm->dtype = prm->role == CR_ROLE_COMM ? CR_DT_I64 : CR_DT_I32;
    if (json_object_get(pj, "shape")) {
        snprintf(path, sizeof path, "%s.shape", prefix);
        return s_fail(cx, path, "only in, out and inout buffers have a shape");
    }
    if (json_object_get(pj, "init")) {
        snprintf(path, sizeof path, "%s.init", prefix);
        return s_fail(cx, path, "only in and inout buffers are drawn from an init");
    }
    return 0;
}

/* Matches the signature's parameters with the keys of "params", both ways. */
static int s_parse_params(const s_ctx_t *cx, cr_task_t *t, json_t *root, const int *ctype_idx)
{
    json_t *params = json_object_get(root, "params");
    if (!params)
        return s_fail(cx, "params", "missing");
    if (!json_is_object(params))
        return s_fail(cx, "params", "must be an object keyed by parameter name, got %s",
                      s_jtype(params));
    char path[96];
    for (int i = 0; i < t->nparams; i++)
        if (!json_object_get(params, t->params[i].name)) {
            snprintf(path, sizeof path, "params.%s", t->params[i].name);
            return s_fail(cx, path, "missing (the signature declares '%s')", t->params[i].name);
        }
    const char *key;
    json_t *pj;
    json_object_foreach(params, key, pj) {
        if (cr_task_param_index(t, key) < 0) {
            snprintf(path, sizeof path, "params.%.64s", key);
            return s_fail(cx, path, "not a parameter of the signature");
        }
    }
    int rc, nout = 0;
    for (int i = 0; i < t->nparams; i++)
        if ((rc = s_parse_role(cx, json_object_get(params, t->params[i].name), &t->params[i])))
            return rc;
    s_sizes_t sz = {.n = t->nparams};
    for (int i = 0; i < t->nparams; i++) {
        sz.names[i] = s_is_size_name(t->params[i].role) ? t->params[i].name : "";
        nout += t->params[i].role == CR_ROLE_OUT || t->params[i].role == CR_ROLE_INOUT;
    }
    if (nout == 0)
        return s_fail(cx, "params", "no out or inout buffer: nothing to verify");
    for (int i = 0; i < t->nparams; i++)
        if ((rc = s_parse_param(cx, t, &sz, json_object_get(params, t->params[i].name), i,
                                ctype_idx[i])))
            return rc;
    if (t->gpus && t->comm_param < 0)
        return s_fail(cx, "params", "a task with \"gpus\" passes each rank its NCCL "
                                    "communicator: declare 'ncclComm_t comm' in the signature "
                                    "with {\"role\": \"comm\"}");
    return 0;
}

/* ---------------------------------------------------------------- cases */

static int s_parse_case(const s_ctx_t *cx, cr_task_t *t, json_t *cj, int c, const int *ctype_idx)
{
    char path[128];
    snprintf(path, sizeof path, "cases[%d]", c);
    if (!json_is_object(cj))
        return s_fail(cx, path, "must be an object giving every size and scalar, got %s",
                      s_jtype(cj));
    cr_case_t *cs = &t->cases[c];
    const char *key;
    json_t *v;
    json_object_foreach(cj, key, v) {
        int p = cr_task_param_index(t, key);
        snprintf(path, sizeof path, "cases[%d].%.64s", c, key);
        if (p < 0)
            return s_fail(cx, path, "not a parameter of the task");
        if (s_is_buffer(t->params[p].role))
            return s_fail(cx, path, "'%s' is an %s buffer; cases give only sizes and scalars",
                          key, cr_role_name(t->params[p].role));
        if (s_is_rank_role(t->params[p].role))
            return s_fail(cx, path, "'%s' is the %s, which the judge sets on each rank; cases "
                          "give only sizes and scalars", key, cr_role_name(t->params[p].role));
    }
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (prm->role == CR_ROLE_WORLD) { /* a size name in shapes: every rank's count */
            cs->ival[p] = t->gpus;
            cs->fval[p] = (double)t->gpus;
        }
        if (s_is_buffer(prm->role) || s_is_rank_role(prm->role))
            continue;
        snprintf(path, sizeof path, "cases[%d].%s", c, prm->name);
        v = json_object_get(cj, prm->name);
        if (!v)
            return s_fail(cx, path, "missing (the %s '%s' needs a value in every case)",
                          cr_role_name(prm->role), prm->name);
        if (prm->role == CR_ROLE_SIZE) {
            if (!json_is_integer(v) || json_integer_value(v) < 1)
                return s_fail(cx, path, "must be a positive integer");
            int64_t max = s_ctypes[ctype_idx[p]].max;
            if (json_integer_value(v) > max)
                return s_fail(cx, path, "%lld does not fit the signature's '%s'",
                              (long long)json_integer_value(v), prm->ctype);
            cs->ival[p] = json_integer_value(v);
            cs->fval[p] = (double)cs->ival[p];
        } else if (prm->dtype == CR_DT_BOOL) {
            if (!json_is_boolean(v) &&
                !(json_is_integer(v) && (json_integer_value(v) | 1) == 1))
                return s_fail(cx, path, "must be true, false, 0 or 1");
            cs->ival[p] = json_is_boolean(v) ? json_is_true(v) : json_integer_value(v);
            cs->fval[p] = (double)cs->ival[p];
        } else if (cr_dtype_is_float(prm->dtype)) {
            if (!json_is_number(v))
                return s_fail(cx, path, "must be a number, got %s", s_jtype(v));
            cs->fval[p] = json_number_value(v);
        } else {
            const int64_t mn = s_dtypes[prm->dtype].min, mx = s_dtypes[prm->dtype].max;
            if (!json_is_integer(v))
                return s_fail(cx, path, "must be an integer (%s), got %s",
                              cr_dtype_name(prm->dtype), s_jtype(v));
            if (json_integer_value(v) < mn || json_integer_value(v) > mx)
                return s_fail(cx, path, "%lld is outside %s", (long long)json_integer_value(v),
                              cr_dtype_name(prm->dtype));
            cs->ival[p] = json_integer_value(v);
            cs->fval[p] = (double)cs->ival[p];
        }
    }
    /* Every buffer must exist and the case must fit the judge's memory cap. */
    snprintf(path, sizeof path, "cases[%d]", c);
    uint64_t total = 0;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!s_is_buffer(prm->role))
            continue;
        int64_t numel = 1;
        for (int k = 0; k < prm->ndim; k++) {
            int64_t dim;
            double f;
            if (cr_expr_eval(prm->shape[k], cs->ival, &dim) != 0)
                return s_fail(cx, path, "params.%s.shape[%d] '%s': %s", prm->name, k,
                              cr_expr_text(prm->shape[k]),
                              cr_expr_eval_f(prm->shape[k], cs->ival, &f) ? "division by zero"
                                                                          : "overflows int64");
            if (dim < 1)
                return s_fail(cx, path, "params.%s.shape[%d] '%s' is %lld; every dimension must "
                                        "be at least 1", prm->name, k,
                              cr_expr_text(prm->shape[k]), (long long)dim);
            if (__builtin_mul_overflow(numel, dim, &numel))
                return s_fail(cx, path, "params.%s has more than 2^63 elements", prm->name);
        }
        uint64_t bytes = (uint64_t)numel * cr_dtype_size(prm->dtype);
        if (bytes / cr_dtype_size(prm->dtype) != (uint64_t)numel ||
            (total += bytes) > CR_TASK_MAX_CASE_BYTES || total < bytes)
            return s_fail(cx, path, "buffers take more than the %llu GiB a case may use",
                          (unsigned long long)(CR_TASK_MAX_CASE_BYTES >> 30));
    }
    const cr_expr_t *decl[3] = {t->bytes, t->flops, t->comm_bytes};
    static const char *const dname[3] = {"bytes", "flops", "comm_bytes"};
    for (int k = 0; k < 3; k++) {
        double f;
        if (decl[k] && cr_expr_eval_f(decl[k], cs->ival, &f) != 0)
            return s_fail(cx, path, "%s '%s': division by zero", dname[k],
                          cr_expr_text(decl[k]));
        if (decl[k] && f < 0)
            return s_fail(cx, path, "%s '%s' is negative (%g)", dname[k],
                          cr_expr_text(decl[k]), f);
    }
    return 0;
}

static int s_parse_cases(const s_ctx_t *cx, cr_task_t *t, json_t *root, const int *ctype_idx)
{
    json_t *cases = json_object_get(root, "cases");
    if (!cases)
        return s_fail(cx, "cases", "missing");
    if (!json_is_array(cases) || json_array_size(cases) == 0)
        return s_fail(cx, "cases", "must be a non-empty array of objects");
    if (json_array_size(cases) > CR_TASK_MAX_CASES)
        return s_fail(cx, "cases", "%zu cases, at most %d", json_array_size(cases),
                      CR_TASK_MAX_CASES);
    for (size_t c = 0; c < json_array_size(cases); c++) {
        int rc = s_parse_case(cx, t, json_array_get(cases, c), (int)c, ctype_idx);
        if (rc)
            return rc;
        t->ncases++;
    }

    json_t *bench = json_object_get(root, "bench_cases");
    if (!bench || json_is_null(bench)) {
        t->nbench = 1;
        t->bench[0] = t->ncases - 1;
        return 0;
    }
    if (!json_is_array(bench) || json_array_size(bench) == 0)
        return s_fail(cx, "bench_cases", "must be a non-empty array of case indices");
    if (json_array_size(bench) > (size_t)t->ncases)
        return s_fail(cx, "bench_cases", "more entries than cases");
    for (size_t i = 0; i < json_array_size(bench); i++) {
        json_t *v = json_array_get(bench, i);
        char path[48];
        snprintf(path, sizeof path, "bench_cases[%zu]", i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= t->ncases)
            return s_fail(cx, path, "must be a case index from 0 to %d", t->ncases - 1);
        int idx = (int)json_integer_value(v);
        for (int j = 0; j < t->nbench; j++)
            if (t->bench[j] == idx)
                return s_fail(cx, path, "case %d listed twice", idx);
        t->bench[t->nbench++] = idx;
    }
    return 0;
}

/* ---------------------------------------------------------------- the rest */

static int s_parse_tolerance(const s_ctx_t *cx, cr_task_t *t, json_t *root)
{
    /* 1e-5 suits fp32/fp64 kernels that reorder sums; 16-bit outputs carry
     * about 3 significant digits, so they get 1e-2. */
    double def = 1e-5;
    for (int i = 0; i < t->nparams; i++)
        if ((t->params[i].role == CR_ROLE_OUT || t->params[i].role == CR_ROLE_INOUT) &&
            (t->params[i].dtype == CR_DT_F16 || t->params[i].dtype == CR_DT_BF16))
            def = 1e-2;
    t->atol = t->rtol = def;
    json_t *tol = json_object_get(root, "tolerance");
    if (!tol || json_is_null(tol))
        return 0;
    if (!json_is_object(tol))
        return s_fail(cx, "tolerance", "must be an object like {\"atol\": 1e-5, \"rtol\": 1e-5}");
    static const char *const keys[] = {"atol", "rtol", NULL};
    int rc = s_check_keys(cx, tol, "tolerance", keys);
    if (rc || (rc = s_get_number(cx, tol, "atol", "tolerance", 0, &t->atol)) ||
        (rc = s_get_number(cx, tol, "rtol", "tolerance", 0, &t->rtol)))
        return rc;
    if (!(t->atol >= 0) || isinf(t->atol))
        return s_fail(cx, "tolerance.atol", "must be a non-negative number");
    if (!(t->rtol >= 0) || isinf(t->rtol))
        return s_fail(cx, "tolerance.rtol", "must be a non-negative number");
    return 0;
}

const cr_task_lib_t cr_task_libs[] = {
    {"cublas", "-lcublas", "libcublas", NULL, 0},
    {"cublasLt", "-lcublasLt", "libcublasLt", NULL, 0},
    {"m", "-lm", "libm", NULL, 0},
    /* the communicator's library (docs/multigpu.md); the executor links the same
     * libnccl.so.2, so the candidate's calls reach the executor's communicator */
    {"nccl", "-lnccl", "libnccl", "nccl", 1},
    {NULL, NULL, NULL, NULL, 0},
};

const cr_task_lib_t *cr_task_lib_find(const char *name)
{
    for (const cr_task_lib_t *l = cr_task_libs; name && l->name; l++)
        if (strcmp(l->name, name) == 0)
            return l;
    return NULL;
}

/* Only names of cr_task_libs: the worker links nothing else, and the link
 * audit would refuse a candidate that used anything else. */
static int s_parse_allow(const s_ctx_t *cx, cr_task_t *t, json_t *root)
{
    json_t *allow = json_object_get(root, "allow");
    if (!allow || json_is_null(allow))
        return 0;
    if (!json_is_array(allow))
        return s_fail(cx, "allow", "must be an array of library names like [\"cublas\"]");
    if (json_array_size(allow) > CR_TASK_MAX_ALLOW)
        return s_fail(cx, "allow", "more than %d libraries", CR_TASK_MAX_ALLOW);
    for (size_t i = 0; i < json_array_size(allow); i++) {
        json_t *v = json_array_get(allow, i);
        char path[32];
        snprintf(path, sizeof path, "allow[%zu]", i);
        if (!json_is_string(v))
            return s_fail(cx, path, "must be a string, got %s", s_jtype(v));
        const char *s = json_string_value(v);
        size_t len = strlen(s);
        if (len == 0 || len > 63 || len != json_string_length(v) || s[0] == '-' ||
            strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-") != len)
            return s_fail(cx, path, "'%.64s' is not a library name (letters, digits, _ . + -)", s);
        if (!cr_task_lib_find(s)) {
            char known[256] = "";
            for (const cr_task_lib_t *l = cr_task_libs; l->name; l++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         known[0] ? ", " : "", l->name);
            return s_fail(cx, path, "unknown library '%s' (a task may allow: %s)", s, known);
        }
        for (int j = 0; j < t->nallow; j++)
            if (!strcmp(t->allow[j], s))
                return s_fail(cx, path, "'%s' listed twice", s);
        if (cr_task_lib_find(s)->ranked && !t->gpus)
            return s_fail(cx, path, "'%s' is the library of tasks with \"gpus\" (which get it "
                                    "without asking)", s);
        if (!(t->allow[t->nallow] = strdup(s)))
            return -ENOMEM;
        t->nallow++;
    }
    return 0;
}

static const char *const s_top_keys[] = {"name",      "language", "signature", "params",
                                         "cases",     "bench_cases", "tolerance", "reference",
                                         "baseline",  "prompt",   "bytes",     "flops",
                                         "allow",     "threads",  "gpus",      "comm_bytes",
                                         NULL};

/* "language": "torch" (docs/torch.md): a KernelBench-format problem file as
 * the reference, and options instead of a signature. Tolerances default to
 * KernelBench's per precision (its eval.py: atol = rtol = 1e-4 for fp32,
 * 1e-2 for fp16 and bf16); trials to its eval script's 5. */
static int s_parse_torch(const s_ctx_t *cx, json_t *root, cr_task_t *t, const char *name)
{
    static const char *const keys[] = {"name",   "language",    "reference", "prompt",
                                       "precision", "tolerance", "trials",   "device",
                                       "description", "own_kernel", "bytes",    "flops",
                                       "baseline", "compile_mode", NULL};
    static const char *const modes[] = {"default", "reduce-overhead", "max-autotune",
                                        "max-autotune-no-cudagraphs", NULL};
    const char *ref, *prompt, *prec, *dev, *base, *mode;
    int rc = s_check_keys(cx, root, "", keys);
    if (rc || (rc = s_get_string(cx, root, "reference", "reference", 1, &ref)) ||
        (rc = s_check_filename(cx, "reference", ref)) ||
        (rc = s_get_string(cx, root, "prompt", "prompt", 0, &prompt)) ||
        (prompt && (rc = s_check_filename(cx, "prompt", prompt))) ||
        (rc = s_get_string(cx, root, "precision", "precision", 0, &prec)) ||
        (rc = s_get_string(cx, root, "device", "device", 0, &dev)) ||
        (rc = s_get_string(cx, root, "baseline", "baseline", 0, &base)) ||
        (rc = s_get_string(cx, root, "compile_mode", "compile_mode", 0, &mode)))
        return rc;
    if (base && strcmp(base, "eager") && strcmp(base, "torch.compile"))
        return s_fail(cx, "baseline", "'%.24s' is not one of eager, torch.compile (a torch "
                      "task's baseline is its reference, as it is or compiled)", base);
    int compiled = base && !strcmp(base, "torch.compile");
    if (mode && !compiled)
        return s_fail(cx, "compile_mode", "needs \"baseline\": \"torch.compile\"");
    int known = !mode;
    for (int i = 0; mode && modes[i]; i++)
        known |= !strcmp(mode, modes[i]);
    if (!known)
        return s_fail(cx, "compile_mode", "'%.32s' is not one of default, reduce-overhead, "
                      "max-autotune, max-autotune-no-cudagraphs", mode);
    if (compiled && (rc = s_dup(mode ? mode : "default", &t->compile_mode)))
        return rc;
    if (!prec || !strcmp(prec, "fp32"))
        t->precision = CR_DT_F32;
    else if (!strcmp(prec, "fp16"))
        t->precision = CR_DT_F16;
    else if (!strcmp(prec, "bf16"))
        t->precision = CR_DT_BF16;
    else
        return s_fail(cx, "precision", "'%.16s' is not one of fp32, fp16, bf16", prec);
    if (dev && strcmp(dev, "auto") && strcmp(dev, "cpu"))
        return s_fail(cx, "device", "'%.16s' is not one of auto, cpu", dev);
    t->trials = 5;
    json_t *v = json_object_get(root, "trials");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > CR_TASK_MAX_CASES)
            return s_fail(cx, "trials", "must be an integer from 1 to %d", CR_TASK_MAX_CASES);
        t->trials = (int)json_integer_value(v);
    }
    v = json_object_get(root, "own_kernel");
    if (v && !json_is_boolean(v))
        return s_fail(cx, "own_kernel", "must be true or false");
    t->own_kernel = v && json_is_true(v);
    /* "bytes" and "flops": what one forward() must move and compute at
     * least, for the roofline floor */
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "flops" : "bytes";
        v = json_object_get(root, key);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return s_fail(cx, key, "must be a non-negative integer (%s one forward() %s at "
                          "least)", key, k ? "computes" : "moves");
        cr_expr_t **dst = k ? &t->flops : &t->bytes;
        if (!(*dst = cr_expr_const(json_integer_value(v))))
            return -ENOMEM;
    }
    if ((rc = s_dup(name, &t->name)) || (rc = s_dup("torch", &t->language)) ||
        (rc = s_dup("", &t->signature)) || (rc = s_dup(ref, &t->reference)) ||
        (rc = s_dup(prompt, &t->prompt)) || (rc = s_dup("", &t->dir)) ||
        (rc = s_dup(dev ? dev : "auto", &t->device)))
        return rc;
    double def = t->precision == CR_DT_F32 ? 1e-4 : 1e-2;
    t->atol = t->rtol = def;
    v = json_object_get(root, "tolerance");
    if (v && json_is_number(v)) { /* KernelBench's one number for both */
        t->atol = t->rtol = json_number_value(v);
        if (!(t->atol >= 0) || isinf(t->atol))
            return s_fail(cx, "tolerance", "must be a non-negative number");
    } else if ((rc = s_parse_tolerance(cx, t, root))) {
        return rc;
    } else if (!json_object_get(root, "tolerance")) {
        t->atol = t->rtol = def;
    }
    /* one correctness case per trial and one bench case (docs/torch.md) */
    t->ncases = t->trials;
    t->nbench = 1;
    t->bench[0] = 0;
    return 0;
}

/* "gpus": N (docs/multigpu.md). Read before the signature, which may then
 * declare the rank, world and comm params. */
static int s_parse_gpus(const s_ctx_t *cx, json_t *root, cr_task_t *t, const char *lang,
                        const char *baseline)
{
    json_t *v = json_object_get(root, "gpus");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > CR_TASK_MAX_GPUS)
        return s_fail(cx, "gpus", "must be an integer from 1 to %d (the GPUs of one node the "
                                  "task's ranks run on), got %s", CR_TASK_MAX_GPUS,
                      json_is_integer(v) ? "another integer" : s_jtype(v));
    if (strcmp(lang, "cuda"))
        return s_fail(cx, "gpus", "multi-GPU tasks are cuda tasks (NCCL); this one's language "
                                  "is '%s'", lang);
    if (!baseline)
        return s_fail(cx, "gpus", "a task with \"gpus\" is timed against its baseline, run on "
                                  "every rank like the candidate (an NCCL program): name one "
                                  "in \"baseline\"");
    t->gpus = (int)json_integer_value(v);
    return 0;
}

static int s_parse(const s_ctx_t *cx, json_t *root, cr_task_t *t)
{
    t->rank_param = t->world_param = t->comm_param = -1;
    if (!json_is_object(root))
        return s_fail(cx, "top level", "must be a JSON object, got %s", s_jtype(root));
    json_t *lv = json_object_get(root, "language");
    int torch = json_is_string(lv) && !strcmp(json_string_value(lv), "torch");
    int rc = torch ? 0 : s_check_keys(cx, root, "", s_top_keys); /* torch: s_parse_torch */
    if (rc)
        return rc;
    const char *name, *lang, *sig, *ref, *base, *prompt;
    if ((rc = s_get_string(cx, root, "name", "name", 1, &name)))
        return rc;
    if (strlen(name) > 128 || name[0] == '.' ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
            strlen(name))
        return s_fail(cx, "name", "'%.64s' must be 1 to 128 letters, digits, '_', '.' or '-' "
                                  "(not starting with '.')", name);
    if ((rc = s_get_string(cx, root, "language", "language", 1, &lang)))
        return rc;
    if (!strcmp(lang, "torch"))
        return s_parse_torch(cx, root, t, name);
    if (strcmp(lang, "c") && strcmp(lang, "cuda"))
        return s_fail(cx, "language", "unknown language '%.32s' (one of \"c\", \"cuda\", "
                                      "\"torch\")", lang);
    if ((rc = s_get_string(cx, root, "reference", "reference", 1, &ref)) ||
        (rc = s_check_filename(cx, "reference", ref)) ||
        (rc = s_get_string(cx, root, "baseline", "baseline", 0, &base)) ||
        (base && (rc = s_check_filename(cx, "baseline", base))) ||
        (rc = s_get_string(cx, root, "prompt", "prompt", 0, &prompt)) ||
        (prompt && (rc = s_check_filename(cx, "prompt", prompt))))
        return rc;
    if ((rc = s_get_string(cx, root, "signature", "signature", 1, &sig)) ||
        (rc = s_parse_gpus(cx, root, t, lang, base)))
        return rc;
    if ((rc = s_dup(name, &t->name)) || (rc = s_dup(lang, &t->language)) ||
        (rc = s_dup(sig, &t->signature)) || (rc = s_dup(ref, &t->reference)) ||
        (rc = s_dup(base, &t->baseline)) || (rc = s_dup(prompt, &t->prompt)) ||
        (rc = s_dup("", &t->dir)))
        return rc;

    int ctype_idx[CR_TASK_MAX_PARAMS];
    if ((rc = s_parse_signature(cx, sig, t, ctype_idx)) ||
        (rc = s_parse_params(cx, t, root, ctype_idx)))
        return rc;

    s_sizes_t sz = {.n = t->nparams};
    for (int i = 0; i < t->nparams; i++)
        sz.names[i] = s_is_size_name(t->params[i].role) ? t->params[i].name : "";
    json_t *v;
    if ((v = json_object_get(root, "bytes")) && !json_is_null(v) &&
        (rc = s_parse_expr(cx, t, &sz, v, "bytes", 0, &t->bytes)))
        return rc;
    if ((v = json_object_get(root, "flops")) && !json_is_null(v) &&
        (rc = s_parse_expr(cx, t, &sz, v, "flops", 0, &t->flops)))
        return rc;
    if ((v = json_object_get(root, "comm_bytes")) && !json_is_null(v)) {
        if (!t->gpus)
            return s_fail(cx, "comm_bytes", "only a task with \"gpus\" moves bytes between "
                                            "GPUs");
        if ((rc = s_parse_expr(cx, t, &sz, v, "comm_bytes", 0, &t->comm_bytes)))
            return rc;
    }
    if ((rc = s_parse_cases(cx, t, root, ctype_idx)) || (rc = s_parse_tolerance(cx, t, root)) ||
        (rc = s_parse_allow(cx, t, root)))
        return rc;
    /* a task with "gpus" links NCCL: its candidates and baseline call it */
    int has_nccl = 0;
    for (int i = 0; i < t->nallow; i++)
        has_nccl |= !strcmp(t->allow[i], "nccl");
    if (t->gpus && !has_nccl) {
        if (t->nallow == CR_TASK_MAX_ALLOW)
            return s_fail(cx, "allow", "more than %d libraries with nccl", CR_TASK_MAX_ALLOW - 1);
        if (!(t->allow[t->nallow] = strdup("nccl")))
            return -ENOMEM;
        t->nallow++;
    }
    if ((v = json_object_get(root, "threads")) && !json_is_null(v)) {
        if (!json_is_boolean(v))
            return s_fail(cx, "threads", "must be true or false, got %s", s_jtype(v));
        t->threads_allowed = json_is_true(v);
    }
    return 0;
}

int cr_task_parse(const char *json_text, const char *origin, cr_task_t **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    s_ctx_t cx = {origin ? origin : "task.json", err, errlen};
    if (err && errlen)
        err[0] = '\0';
    if (!json_text)
        return s_fail(&cx, "top level", "no text");
    json_error_t je;
    json_t *root = json_loads(json_text, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (err && errlen)
            snprintf(err, errlen, "%s: line %d, column %d: not valid JSON: %s", cx.origin,
                     je.line, je.column, je.text);
        return CR_E_JSON;
    }
    cr_task_t *t = calloc(1, sizeof *t);
    int rc = t ? s_parse(&cx, root, t) : -ENOMEM;
    json_decref(root);
    if (rc) {
        if (rc == -ENOMEM && err && errlen)
            snprintf(err, errlen, "%s: out of memory", cx.origin);
        cr_task_destroy(&t);
        return rc;
    }
    *out = t;
    return 0;
}

/* Checks that dir/name is a readable regular file within the size cap. */
static int s_check_file(const s_ctx_t *cx, const char *dir, const char *field, const char *name)
{
    char *path = cr_file_join(dir, name);
    if (!path)
        return -ENOMEM;
    struct stat st;
    int rc = 0, fd;
    if (stat(path, &st) != 0)
        rc = s_fail(cx, field, "file '%s' %s", path,
                    errno == ENOENT ? "does not exist" : strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = s_fail(cx, field, "'%s' is not a regular file", path);
    else if ((size_t)st.st_size > CR_TASK_MAX_FILE)
        rc = s_fail(cx, field, "file '%s' is larger than %u KiB", path, CR_TASK_MAX_FILE >> 10);
    else if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        rc = s_fail(cx, field, "file '%s' cannot be read: %s", path, strerror(errno));
    else
        close(fd);
    free(path);
    return rc;
}

int cr_task_load_dir(const char *dir, cr_task_t **out, char *err, size_t errlen)
{
    *out = NULL;
    char *path = cr_file_join(dir, "task.json"), *text = NULL;
    if (!path)
        return -ENOMEM;
    s_ctx_t cx = {path, err, errlen};
    int rc = cr_file_read(path, CR_TASK_MAX_FILE, &text, NULL);
    if (rc) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path,
                     rc == CR_E_LIMIT ? "larger than the 1 MiB a task.json may have"
                                      : cr_strerror(rc));
        rc = rc == -ENOMEM ? rc : CR_E_TASK;
        goto done;
    }
    cr_task_t *t = NULL;
    if ((rc = cr_task_parse(text, path, &t, err, errlen)))
        goto done;
    free(t->dir);
    if (!(t->dir = strdup(dir)))
        rc = -ENOMEM;
    if (!rc)
        rc = s_check_file(&cx, dir, "reference", t->reference);
    if (!rc && t->baseline)
        rc = s_check_file(&cx, dir, "baseline", t->baseline);
    if (!rc && t->prompt)
        rc = s_check_file(&cx, dir, "prompt", t->prompt);
    if (rc)
        cr_task_destroy(&t);
    *out = t;
done:
    free(text);
    free(path);
    return rc;
}

void cr_task_destroy(cr_task_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_task_t *t = *self_p;
    free(t->dir);
    free(t->name);
    free(t->language);
    free(t->device);
    free(t->compile_mode);
    free(t->signature);
    free(t->reference);
    free(t->baseline);
    free(t->prompt);
    for (int i = 0; i < CR_TASK_MAX_PARAMS; i++)
        for (int k = 0; k < CR_TASK_MAX_DIMS; k++)
            cr_expr_destroy(&t->params[i].shape[k]);
    cr_expr_destroy(&t->bytes);
    cr_expr_destroy(&t->flops);
    cr_expr_destroy(&t->comm_bytes);
    for (int i = 0; i < t->nallow; i++)
        free(t->allow[i]);
    free(t);
    *self_p = NULL;
}

int cr_task_param_index(const cr_task_t *t, const char *name)
{
    for (int i = 0; i < t->nparams; i++)
        if (!strcmp(t->params[i].name, name))
            return i;
    return -1;
}

int cr_task_numel(const cr_task_t *t, int c, int p, int64_t *numel)
{
    if (c < 0 || c >= t->ncases || p < 0 || p >= t->nparams || !s_is_buffer(t->params[p].role))
        return -EINVAL;
    int64_t n = 1, dim;
    for (int k = 0; k < t->params[p].ndim; k++) {
        int rc = cr_expr_eval(t->params[p].shape[k], t->cases[c].ival, &dim);
        if (rc)
            return rc;
        if (dim < 1 || __builtin_mul_overflow(n, dim, &n))
            return CR_E_EXPR;
    }
    *numel = n;
    return 0;
}

static int s_eval_decl(const cr_task_t *t, const cr_expr_t *e, int c, double *out)
{
    *out = 0;
    if (c < 0 || c >= t->ncases)
        return -EINVAL;
    return e ? cr_expr_eval_f(e, t->cases[c].ival, out) : 0;
}

int cr_task_bytes(const cr_task_t *t, int c, double *out)
{
    return s_eval_decl(t, t->bytes, c, out);
}

int cr_task_flops(const cr_task_t *t, int c, double *out)
{
    return s_eval_decl(t, t->flops, c, out);
}

int cr_task_comm_bytes(const cr_task_t *t, int c, double *out)
{
    return s_eval_decl(t, t->comm_bytes, c, out);
}

int cr_task_ranks(const cr_task_t *t)
{
    return t->gpus > 0 ? t->gpus : 1;
}

void cr_task_class(const cr_task_t *t, char *buf, size_t len)
{
    if (t->gpus > 0)
        snprintf(buf, len, "%.8s/%d", t->language, t->gpus);
    else
        snprintf(buf, len, "%.15s", t->language);
}

int cr_task_class_parse(const char *cls, char *lang, size_t len, int *gpus)
{
    *gpus = 0;
    const char *slash = strchr(cls, '/');
    size_t n = slash ? (size_t)(slash - cls) : strlen(cls);
    if (n == 0 || n >= len)
        return -EINVAL;
    memcpy(lang, cls, n);
    lang[n] = '\0';
    if (!slash)
        return 0;
    char *end = NULL;
    errno = 0;
    long g = strtol(slash + 1, &end, 10);
    if (errno || end == slash + 1 || *end || g < 1 || g > CR_TASK_MAX_GPUS)
        return -EINVAL;
    *gpus = (int)g;
    return 0;
}

/* ---------------------------------------------------------------- shim */

/* Nothing is included before the source: a candidate that starts with
 * "#define _GNU_SOURCE" must be the first to include a system header, and the
 * source already declares every type solve's signature names. Pointers are
 * passed without the pointee's const: models often drop or add const on
 * inputs, a non-const pointer converts to either, and the judge hashes the
 * inputs anyway, so const protects nothing here. */
char *cr_task_shim_source(const cr_task_t *t, const char *src_name)
{
    /* The name lands inside #include "..."; a quote or newline would end it. */
    if (strpbrk(src_name, "\"\n\r")) {
        errno = EINVAL;
        return NULL;
    }
    int cuda = !strcmp(t->language, "cuda");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    if (!strcmp(t->language, "torch")) {
        /* no call shim: crucible-torch reads the source itself (docs/torch.md) */
        fprintf(f, "# Generated by Crucible for task %s: crucible-torch compile reads %s\n",
                t->name, src_name);
        if (fclose(f) != 0) {
            free(buf);
            return NULL;
        }
        return buf;
    }
    fprintf(f, "/* Generated by Crucible for task %s: cr_entry(args) calls the solve()\n"
               " * of the source included below, reading argument i through args[i], a\n"
               " * pointer to a value of its declared type. Same translation unit, so solve\n"
               " * may be static, extern \"C\" or C++-linked. */\n"
               "#include \"%s\"\n\n%s__attribute__((visibility(\"default\")))\n"
               "void " CR_TASK_ENTRY "(void **cr__args)\n{\n    solve(",
            t->name, src_name, cuda ? "extern \"C\" " : "");
    for (int i = 0; i < t->nparams; i++) {
        const char *ct = t->params[i].ctype;
        if (t->params[i].is_pointer && !strncmp(ct, "const ", 6))
            ct += 6;
        fprintf(f, "%s*(%s *)cr__args[%d]", i ? ",\n          " : "", ct, i);
    }
    fprintf(f, ");\n}\n");
    /* The candidate object carries its own copy of the CUDA runtime, so only
     * code inside it can read its launch errors: the judge calls this after
     * every cr_entry (a launch that failed must not pass as "no output"). */
    if (cuda)
        fprintf(f, "\nextern \"C\" __attribute__((visibility(\"default\")))\n"
                   "int cr_cuda_last_error(void)\n{\n    return (int)cudaGetLastError();\n}\n");
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
