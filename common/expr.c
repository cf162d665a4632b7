/* expr.c — see expr.h.
 *
 * The parser emits postfix code, so evaluation is one loop over a small array
 * with an explicit stack: no tree to free and no recursion at run time.
 * Division and remainder truncate toward zero (C semantics) in both the int64
 * and the double evaluation, so the two agree wherever int64 does not overflow. */
#include "expr.h"

#include "error.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 64 nested parentheses or unary minuses: far beyond any shape, and it bounds
 * the parser's recursion so a hostile "((((..." cannot exhaust the stack. */
#define S_MAX_DEPTH 64
/* 256 operations: a shape or flop count has a handful; bounds the eval stack. */
#define S_MAX_OPS 256

typedef enum { S_CONST, S_VAR, S_ADD, S_SUB, S_MUL, S_DIV, S_MOD, S_NEG } s_opcode_t;

typedef struct {
    s_opcode_t code;
    int64_t v; /* the literal (S_CONST) or the index into values (S_VAR) */
} s_op_t;

struct cr_expr {
    char *text;     /* source text; owned */
    int nops;       /* entries in ops */
    s_op_t ops[];   /* postfix code */
};

typedef struct {
    const char *text;         /* start of the source, for positions */
    const char *p;            /* cursor */
    const char *const *names; /* names[i] resolves to index i */
    int nnames;
    s_op_t ops[S_MAX_OPS];    /* code emitted so far */
    int nops;
    int depth;                /* current factor nesting */
    char *err;                /* message buffer; may be NULL */
    size_t errlen;
} s_parser_t;

static int s_fail(s_parser_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int s_fail(s_parser_t *ps, const char *fmt, ...)
{
    if (ps->err && ps->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err, ps->errlen, fmt, ap);
        va_end(ap);
    }
    return CR_E_EXPR;
}

static int s_is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int s_is_name_char(char c)
{
    return s_is_name_start(c) || (c >= '0' && c <= '9');
}

static void s_skip_space(s_parser_t *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

/* Reports the token at the cursor as unexpected, naming it and its 1-based position. */
static int s_unexpected(s_parser_t *ps)
{
    const char *q = ps->p;
    if (*q == '\0')
        return s_fail(ps, "unexpected end of expression");
    int n = 1;
    if (s_is_name_char(*q))
        while (s_is_name_char(q[n]) && n < 32)
            n++;
    return s_fail(ps, "unexpected '%.*s' at position %d", n, q, (int)(q - ps->text) + 1);
}

static int s_emit(s_parser_t *ps, s_opcode_t code, int64_t v)
{
    if (ps->nops == S_MAX_OPS)
        return s_fail(ps, "expression too long (more than %d operations)", S_MAX_OPS);
    ps->ops[ps->nops].code = code;
    ps->ops[ps->nops].v = v;
    ps->nops++;
    return 0;
}

static int s_expr(s_parser_t *ps);

static int s_factor(s_parser_t *ps)
{
    int rc;
    s_skip_space(ps);
    if (++ps->depth > S_MAX_DEPTH)
        return s_fail(ps, "expression nested deeper than %d at position %d", S_MAX_DEPTH,
                      (int)(ps->p - ps->text) + 1);
    const char *start = ps->p;
    char c = *ps->p;
    if (c >= '0' && c <= '9') {
        int64_t v = 0;
        while (*ps->p >= '0' && *ps->p <= '9') {
            int d = *ps->p - '0';
            if (v > (INT64_MAX - d) / 10)
                return s_fail(ps, "integer at position %d does not fit in int64",
                              (int)(start - ps->text) + 1);
            v = v * 10 + d;
            ps->p++;
        }
        if (s_is_name_start(*ps->p))
            return s_unexpected(ps);
        rc = s_emit(ps, S_CONST, v);
    } else if (s_is_name_start(c)) {
        while (s_is_name_char(*ps->p))
            ps->p++;
        size_t len = (size_t)(ps->p - start);
        int idx = -1;
        for (int i = 0; i < ps->nnames && idx < 0; i++)
            if (ps->names[i] && strlen(ps->names[i]) == len &&
                memcmp(ps->names[i], start, len) == 0)
                idx = i;
        if (idx < 0)
            return s_fail(ps, "unknown name '%.*s' at position %d", len > 63 ? 63 : (int)len, start,
                          (int)(start - ps->text) + 1);
        rc = s_emit(ps, S_VAR, idx);
    } else if (c == '(') {
        ps->p++;
        if ((rc = s_expr(ps)) != 0)
            return rc;
        s_skip_space(ps);
        if (*ps->p != ')') {
            if (*ps->p == '\0')
                return s_fail(ps, "missing ')' for '(' at position %d",
                              (int)(start - ps->text) + 1);
            return s_unexpected(ps);
        }
        ps->p++;
    } else if (c == '-') {
        ps->p++;
        if ((rc = s_factor(ps)) != 0)
            return rc;
        rc = s_emit(ps, S_NEG, 0);
    } else {
        return s_unexpected(ps);
    }
    ps->depth--;
    return rc;
}

static int s_term(s_parser_t *ps)
{
    int rc = s_factor(ps);
    for (;;) {
        if (rc)
            return rc;
        s_skip_space(ps);
        char c = *ps->p;
        if (c != '*' && c != '/' && c != '%')
            return 0;
        ps->p++;
        if ((rc = s_factor(ps)) == 0)
            rc = s_emit(ps, c == '*' ? S_MUL : c == '/' ? S_DIV : S_MOD, 0);
    }
}

static int s_expr(s_parser_t *ps)
{
    int rc = s_term(ps);
    for (;;) {
        if (rc)
            return rc;
        s_skip_space(ps);
        char c = *ps->p;
        if (c != '+' && c != '-')
            return 0;
        ps->p++;
        if ((rc = s_term(ps)) == 0)
            rc = s_emit(ps, c == '+' ? S_ADD : S_SUB, 0);
    }
}

static cr_expr_t *s_new(const char *text, const s_op_t *ops, int nops)
{
    cr_expr_t *e = malloc(sizeof *e + (size_t)nops * sizeof(s_op_t));
    if (!e)
        return NULL;
    e->text = strdup(text);
    if (!e->text) {
        free(e);
        return NULL;
    }
    e->nops = nops;
    memcpy(e->ops, ops, (size_t)nops * sizeof(s_op_t));
    return e;
}

int cr_expr_parse(const char *text, const char *const *names, int nnames, cr_expr_t **out,
                  char *err, size_t errlen)
{
    *out = NULL;
    s_parser_t *ps = calloc(1, sizeof *ps);
    if (!ps)
        return -ENOMEM;
    ps->text = ps->p = text;
    ps->names = names;
    ps->nnames = names ? nnames : 0;
    ps->err = err;
    ps->errlen = errlen;
    int rc;
    s_skip_space(ps);
    if (*ps->p == '\0')
        rc = s_fail(ps, "empty expression");
    else if ((rc = s_expr(ps)) == 0) {
        s_skip_space(ps);
        if (*ps->p != '\0')
            rc = s_unexpected(ps);
    }
    if (rc == 0 && !(*out = s_new(text, ps->ops, ps->nops)))
        rc = -ENOMEM;
    free(ps);
    return rc;
}

cr_expr_t *cr_expr_const(int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    s_op_t op = {S_CONST, v};
    return s_new(buf, &op, 1);
}

/* The parser guarantees well-formed postfix code, so the stack never
 * underflows and never holds more than nops values. */
int cr_expr_eval(const cr_expr_t *e, const int64_t *values, int64_t *out)
{
    int64_t st[S_MAX_OPS];
    int n = 0;
    for (int i = 0; i < e->nops; i++) {
        const s_op_t *op = &e->ops[i];
        int64_t a = n >= 2 ? st[n - 2] : 0, b = n >= 1 ? st[n - 1] : 0, r = 0;
        int bad = 0;
        switch (op->code) {
        case S_CONST: st[n++] = op->v; continue;
        case S_VAR: st[n++] = values[op->v]; continue;
        case S_NEG:
            if (b == INT64_MIN)
                return CR_E_EXPR;
            st[n - 1] = -b;
            continue;
        case S_ADD: bad = __builtin_add_overflow(a, b, &r); break;
        case S_SUB: bad = __builtin_sub_overflow(a, b, &r); break;
        case S_MUL: bad = __builtin_mul_overflow(a, b, &r); break;
        case S_DIV:
        case S_MOD:
            /* b == 0 is undefined; INT64_MIN / -1 overflows (and traps on x86). */
            bad = b == 0 || (a == INT64_MIN && b == -1);
            r = bad ? 0 : op->code == S_DIV ? a / b : a % b;
            break;
        }
        if (bad)
            return CR_E_EXPR;
        st[--n - 1] = r;
    }
    *out = st[0];
    return 0;
}

int cr_expr_eval_f(const cr_expr_t *e, const int64_t *values, double *out)
{
    double st[S_MAX_OPS];
    int n = 0;
    for (int i = 0; i < e->nops; i++) {
        const s_op_t *op = &e->ops[i];
        double a = n >= 2 ? st[n - 2] : 0, b = n >= 1 ? st[n - 1] : 0, r = 0;
        switch (op->code) {
        case S_CONST: st[n++] = (double)op->v; continue;
        case S_VAR: st[n++] = (double)values[op->v]; continue;
        case S_NEG: st[n - 1] = -b; continue;
        case S_ADD: r = a + b; break;
        case S_SUB: r = a - b; break;
        case S_MUL: r = a * b; break;
        case S_DIV:
        case S_MOD:
            if (b == 0)
                return CR_E_EXPR;
            r = op->code == S_DIV ? trunc(a / b) : fmod(a, b);
            break;
        }
        st[--n - 1] = r;
    }
    *out = st[0];
    return 0;
}

const char *cr_expr_text(const cr_expr_t *e)
{
    return e ? e->text : "";
}

void cr_expr_destroy(cr_expr_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->text);
    free(*self_p);
    *self_p = NULL;
}
