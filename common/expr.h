/* expr.h — integer expressions over size names, for shapes and bytes/flops.
 *
 * Grammar: expr := term (('+'|'-') term)* ; term := factor (('*'|'/'|'%') factor)* ;
 * factor := INT | NAME | '(' expr ')' | '-' factor. Names are resolved to
 * indices at parse time, so evaluation is a walk over an array of values. */
#ifndef CR_EXPR_H
#define CR_EXPR_H

#include <stddef.h>
#include <stdint.h>

typedef struct cr_expr cr_expr_t;

/* Parses text. names[i] is the name for values[i] at evaluation time.
 * Returns 0 and *out (caller destroys), or CR_E_EXPR with a message in err
 * naming the position and the offending token (e.g. "unknown name 'colz'"). */
int cr_expr_parse(const char *text, const char *const *names, int nnames, cr_expr_t **out,
                  char *err, size_t errlen);

/* A constant expression (e.g. a JSON integer in a shape). Caller destroys. */
cr_expr_t *cr_expr_const(int64_t v);

/* Evaluates with values indexed like names. Returns 0 and *out, or CR_E_EXPR
 * on division by zero or overflow of int64. */
int cr_expr_eval(const cr_expr_t *e, const int64_t *values, int64_t *out);

/* Evaluates in double precision (bytes/flops may exceed int64 products). */
int cr_expr_eval_f(const cr_expr_t *e, const int64_t *values, double *out);

/* The source text the expression was parsed from. */
const char *cr_expr_text(const cr_expr_t *e);

void cr_expr_destroy(cr_expr_t **self_p);

#endif
