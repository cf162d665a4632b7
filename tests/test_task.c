/* test_task.c — task.json validation, expressions, task folders and the call shim. */
#include "client.h"
#include "error.h"
#include "expr.h"
#include "file.h"
#include "proc.h"
#include "task.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A valid task touching every optional field; the malformed cases below are
 * this text with one or more values replaced. */
static const char *s_valid =
    "{\n"
    "  \"name\": \"softmax_rows\",\n"
    "  \"language\": \"cuda\",\n"
    "  \"signature\": \"void solve(const float* __restrict__ x, float* y, int rows, int cols, "
    "float eps)\",\n"
    "  \"params\": {\n"
    "    \"x\":    {\"role\": \"in\",  \"dtype\": \"float32\", \"shape\": [\"rows\", \"cols\"],\n"
    "               \"init\": {\"dist\": \"normal\", \"mean\": 1, \"std\": 2}},\n"
    "    \"y\":    {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"rows\", \"cols\"]},\n"
    "    \"rows\": {\"role\": \"size\"},\n"
    "    \"cols\": {\"role\": \"size\"},\n"
    "    \"eps\":  {\"role\": \"scalar\", \"dtype\": \"float32\"}\n"
    "  },\n"
    "  \"cases\": [{\"rows\": 1, \"cols\": 7, \"eps\": 0.5}, {\"rows\": 130, \"cols\": 1000, "
    "\"eps\": 1e-6},\n"
    "            {\"rows\": 8192, \"cols\": 8192, \"eps\": 0}],\n"
    "  \"bench_cases\": [1, 2],\n"
    "  \"tolerance\": {\"atol\": 1e-4, \"rtol\": 2e-5},\n"
    "  \"reference\": \"reference.cu\",\n"
    "  \"baseline\": \"baseline.cu\",\n"
    "  \"prompt\": \"prompt.md\",\n"
    "  \"bytes\": \"8*rows*cols\",\n"
    "  \"flops\": 42,\n"
    "  \"allow\": [\"cublas\", \"m\"],\n"
    "  \"threads\": true\n"
    "}\n";

Test(task, valid_task_loads)
{
    char err[512];
    cr_task_t *t = NULL;
    int rc = cr_task_parse(s_valid, "task.json", &t, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(t->name, "softmax_rows");
    cr_assert_str_eq(t->language, "cuda");
    cr_assert_str_eq(t->dir, "");
    cr_assert_str_eq(t->reference, "reference.cu");
    cr_assert_str_eq(t->baseline, "baseline.cu");
    cr_assert_str_eq(t->prompt, "prompt.md");
    cr_assert_eq(t->nparams, 5);
    const char *names[] = {"x", "y", "rows", "cols", "eps"};
    const char *ctypes[] = {"const float *", "float *", "int", "int", "float"};
    const cr_role_t roles[] = {CR_ROLE_IN, CR_ROLE_OUT, CR_ROLE_SIZE, CR_ROLE_SIZE, CR_ROLE_SCALAR};
    const cr_dtype_t dtypes[] = {CR_DT_F32, CR_DT_F32, CR_DT_I64, CR_DT_I64, CR_DT_F32};
    for (int i = 0; i < 5; i++) {
        cr_assert_str_eq(t->params[i].name, names[i]);
        cr_assert_str_eq(t->params[i].ctype, ctypes[i]);
        cr_assert_eq(t->params[i].role, roles[i], "%s", names[i]);
        cr_assert_eq(t->params[i].dtype, dtypes[i], "%s", names[i]);
        cr_assert_eq(t->params[i].is_pointer, i < 2);
        cr_assert_eq(cr_task_param_index(t, names[i]), i);
    }
    cr_assert_eq(cr_task_param_index(t, "nope"), -1);
    cr_assert_eq(t->params[0].ndim, 2);
    cr_assert_str_eq(cr_expr_text(t->params[0].shape[1]), "cols");
    cr_assert_eq(t->params[0].init.kind, CR_DIST_NORMAL);
    cr_assert_float_eq(t->params[0].init.a, 1.0, 1e-12);
    cr_assert_float_eq(t->params[0].init.b, 2.0, 1e-12);
    cr_assert_eq(t->ncases, 3);
    cr_assert_eq(t->cases[1].ival[2], 130);
    cr_assert_eq(t->cases[1].ival[3], 1000);
    cr_assert_float_eq(t->cases[1].fval[4], 1e-6, 1e-15);
    cr_assert_float_eq(t->cases[0].fval[4], 0.5, 1e-15);
    cr_assert_eq(t->nbench, 2);
    cr_assert_eq(t->bench[0], 1);
    cr_assert_eq(t->bench[1], 2);
    cr_assert_float_eq(t->atol, 1e-4, 1e-15);
    cr_assert_float_eq(t->rtol, 2e-5, 1e-15);
    int64_t n = 0;
    cr_assert_eq(cr_task_numel(t, 2, 1, &n), 0);
    cr_assert_eq(n, 8192 * 8192);
    cr_assert_eq(cr_task_numel(t, 2, 2, &n), -EINVAL, "a size has no elements");
    cr_assert_eq(cr_task_numel(t, 3, 1, &n), -EINVAL, "no case 3");
    double b = 0, f = 0;
    cr_assert_eq(cr_task_bytes(t, 2, &b), 0);
    cr_assert_float_eq(b, 8.0 * 8192 * 8192, 0.5);
    cr_assert_eq(cr_task_flops(t, 0, &f), 0);
    cr_assert_float_eq(f, 42.0, 1e-9);
    cr_assert_eq(t->nallow, 2);
    cr_assert_str_eq(t->allow[0], "cublas");
    cr_assert_str_eq(t->allow[1], "m");
    cr_assert_eq(t->threads_allowed, 1);
    cr_task_destroy(&t);
    cr_assert_null(t);
    cr_task_destroy(&t); /* safe on NULL */
}

/* Types are normalised, defaults filled in: bench = last case, 16-bit output
 * tolerance, per-dtype input distributions. */
Test(task, types_and_defaults)
{
    const char *text =
        "{\"name\": \"mix\", \"language\": \"cuda\", \"reference\": \"r.cu\",\n"
        " \"signature\": \"extern \\\"C\\\" void solve(const __half* __restrict__ a, "
        "__nv_bfloat16 *const b, "
        "const unsigned char *c, long int n, unsigned m, size_t k, signed char s, int64_t *d)\",\n"
        " \"params\": {\"a\": {\"role\": \"in\", \"dtype\": \"float16\", \"shape\": [\"n\"]},\n"
        "   \"b\": {\"role\": \"out\", \"dtype\": \"bfloat16\", \"shape\": [\"m\", 2]},\n"
        "   \"c\": {\"role\": \"in\", \"dtype\": \"uint8\", \"shape\": [\"k\"]},\n"
        "   \"n\": {\"role\": \"size\"}, \"m\": {\"role\": \"size\", \"dtype\": \"int32\"},\n"
        "   \"k\": {\"role\": \"size\"}, \"s\": {\"role\": \"scalar\", \"dtype\": \"int8\"},\n"
        "   \"d\": {\"role\": \"inout\", \"dtype\": \"int64\", \"shape\": [\"(n + 1) / 2\"]}},\n"
        " \"cases\": [{\"n\": 3, \"m\": 4, \"k\": 5, \"s\": -5}, {\"n\": 9, \"m\": 1, \"k\": 1, "
        "\"s\": 127}]}";
    char err[512];
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(text, "mix.json", &t, err, sizeof err), 0, "%s", err);
    const char *ctypes[] = {"const __half *", "__nv_bfloat16 *", "const unsigned char *", "long",
                            "unsigned int", "size_t", "signed char", "int64_t *"};
    for (int i = 0; i < 8; i++)
        cr_assert_str_eq(t->params[i].ctype, ctypes[i]);
    cr_assert_eq(t->params[6].dtype, CR_DT_I8);
    cr_assert_eq(t->params[4].dtype, CR_DT_I64, "sizes are int64");
    cr_assert_eq(t->cases[0].ival[6], -5);
    cr_assert_eq(t->nbench, 1);
    cr_assert_eq(t->bench[0], 1);
    cr_assert_float_eq(t->atol, 1e-2, 1e-12);
    cr_assert_float_eq(t->rtol, 1e-2, 1e-12);
    cr_assert_eq(t->params[0].init.kind, CR_DIST_NORMAL);
    cr_assert_float_eq(t->params[0].init.b, 1.0, 1e-12);
    cr_assert_eq(t->params[2].init.kind, CR_DIST_INT);
    cr_assert_float_eq(t->params[2].init.a, 0.0, 1e-12);
    cr_assert_float_eq(t->params[2].init.b, 256.0, 1e-12);
    cr_assert_float_eq(t->params[7].init.a, -100.0, 1e-12);
    cr_assert_float_eq(t->params[7].init.b, 100.0, 1e-12);
    int64_t n;
    cr_assert_eq(cr_task_numel(t, 1, 7, &n), 0);
    cr_assert_eq(n, 5);
    cr_assert_eq(cr_task_numel(t, 0, 1, &n), 0);
    cr_assert_eq(n, 8);
    double b = -1;
    cr_assert_eq(cr_task_bytes(t, 0, &b), 0);
    cr_assert_float_eq(b, 0.0, 0.0, "bytes not declared");
    cr_assert_eq(t->nallow, 0);
    cr_assert_eq(t->threads_allowed, 0);
    cr_assert_null(t->baseline);
    cr_task_destroy(&t);
}

/* ---------------------------------------------------------------- malformed */

typedef struct {
    const char *raw;     /* whole text instead of the valid task, or NULL */
    const char *set[3];  /* "path=json": path '/'-separated, json NULL deletes */
    const char *field;   /* expected "task.json: <field>: " prefix */
    const char *what;    /* expected fragment of the message */
} s_bad_t;

static const s_bad_t s_bad[] = {
    {"{ \"name\": ", {0}, "line 1", "not valid JSON"},
    {"{\"name\": \"a\", \"name\": \"b\"}", {0}, "line 1", "duplicate"},
    {"[1, 2]", {0}, "top level", "must be a JSON object"},
    {NULL, {"tolerence={\"atol\": 1}"}, "tolerence", "did you mean 'tolerance'"},
    {NULL, {"name"}, "name", "missing"},
    {NULL, {"name=5"}, "name", "must be a string"},
    {NULL, {"name=\"a/b\""}, "name", "letters, digits"},
    {NULL, {"language"}, "language", "missing"},
    {NULL, {"language=\"torch\""}, "signature", "unknown key"}, /* torch: no signature */
    {NULL, {"language=\"rust\""}, "language", "unknown language 'rust'"},
    {NULL, {"signature"}, "signature", "missing"},
    {NULL, {"signature=[1]"}, "signature", "must be a string"},
    {NULL, {"signature=\"int solve(float *y)\""}, "signature", "return type must be void"},
    {NULL, {"signature=\"extern void solve(float *y)\""}, "signature", "only extern \"C\""},
    {NULL, {"signature=\"void run(const float* x, float* y, int rows, int cols, float eps)\""},
     "signature", "must be named solve"},
    {NULL, {"signature=\"void solve(const float** x, float* y, int rows, int cols, float eps)\""},
     "signature", "one level of pointer"},
    {NULL, {"signature=\"void solve(const char* x, float* y, int rows, int cols, float eps)\""},
     "signature", "plain 'char'"},
    {NULL, {"signature=\"void solve(const foo_t* x, float* y, int rows, int cols, float eps)\""},
     "signature", "unknown type 'foo_t'"},
    {NULL, {"signature=\"void solve(const float* x, float* y, int rows, int cols, float)\""},
     "signature", "parameter 5 has no name"},
    {NULL, {"signature=\"void solve(const float* x, float* x, int rows, int cols, float eps)\""},
     "signature", "declared twice"},
    {NULL, {"signature=\"void solve(const float& x, float* y, int rows, int cols, float eps)\""},
     "signature", "unexpected '&'"},
    {NULL, {"signature=\"void solve(const float* x, float* y, int rows, int cols)\""},
     "params.eps", "not a parameter of the signature"},
    {NULL, {"signature=\"void solve(const float* x, float* y, int rows, int cols, float "
            "a_name_that_is_far_too_long_to_be_a_sensible_parameter_name_in_c_code)\""},
     "signature", "longer than 63 characters"},
    {NULL, {"params/eps"}, "params.eps", "missing"},
    {NULL, {"params=[]"}, "params", "must be an object"},
    {NULL, {"params/x/role=\"input\""}, "params.x.role", "unknown role 'input'"},
    {NULL, {"params/rows/role=\"in\""}, "params.rows.role", "not a pointer"},
    {NULL, {"params/x/role=\"size\""}, "params.x.role", "(a pointer)"},
    {NULL, {"params/y/role=\"in\""}, "params", "no out or inout buffer"},
    {NULL, {"params/x/shap=[1]"}, "params.x.shap", "did you mean 'shape'"},
    {NULL, {"params/y/dtype"}, "params.y.dtype", "missing"},
    {NULL, {"params/x/dtype=\"fp32\""}, "params.x.dtype", "unknown dtype 'fp32' (one of float32"},
    {NULL, {"params/x/dtype=\"float64\""}, "params.x.dtype", "does not match"},
    {NULL, {"params/eps/dtype=\"int32\""}, "params.eps.dtype", "does not match"},
    {NULL, {"params/rows/dtype=\"float32\""}, "params.rows.dtype", "not an integer dtype"},
    {NULL,
     {"signature=\"void solve(const float* x, float* y, int rows, float cols, float eps)\""},
     "params.cols", "integer C type"},
    {NULL,
     {"signature=\"void solve(const size_t* x, float* y, int rows, int cols, float eps)\"",
      "params/x/dtype=\"int64\""},
     "params.x.dtype", "matches no dtype"},
    {NULL, {"params/y/shape"}, "params.y.shape", "missing"},
    {NULL, {"params/y/shape=[]"}, "params.y.shape", "1 to 8"},
    {NULL, {"params/y/shape=[1,1,1,1,1,1,1,1,1]"}, "params.y.shape", "1 to 8"},
    {NULL, {"params/y/shape=[\"rows\", \"colz\"]"}, "params.y.shape[1]", "unknown size 'colz'"},
    {NULL, {"params/y/shape=[\"rows\", \"eps\"]"}, "params.y.shape[1]", "unknown size 'eps'"},
    {NULL, {"params/y/shape=[\"rows *\", \"cols\"]"}, "params.y.shape[0]", "unexpected end"},
    {NULL, {"params/y/shape=[1.5]"}, "params.y.shape[0]", "must be an integer or a string"},
    {NULL, {"params/y/shape=[0]"}, "params.y.shape[0]", "at least 1"},
    {NULL, {"params/rows/shape=[1]"}, "params.rows.shape", "only in, out and inout"},
    {NULL, {"params/x/init={\"dist\": \"gauss\"}"}, "params.x.init.dist", "unknown distribution"},
    {NULL, {"params/x/init={\"dist\": \"normal\", \"std\": 0}"}, "params.x.init.std",
     "greater than 0"},
    {NULL, {"params/x/init={\"dist\": \"uniform\", \"low\": 1, \"high\": 1}"},
     "params.x.init.high", "greater than low"},
    {NULL, {"params/x/init={\"dist\": \"uniform\", \"low\": 1}"}, "params.x.init.high", "missing"},
    {NULL, {"params/x/init={\"dist\": \"normal\", \"sd\": 1}"}, "params.x.init.sd",
     "unknown key"},
    {NULL, {"params/x/init=3"}, "params.x.init", "must be an object"},
    {NULL, {"params/y/init={\"dist\": \"normal\"}"}, "params.y.init", "only in and inout"},
    {NULL,
     {"signature=\"void solve(const uint8_t* x, float* y, int rows, int cols, float eps)\"",
      "params/x/dtype=\"uint8\"", "params/x/init={\"dist\": \"int\", \"low\": 0, \"high\": 300}"},
     "params.x.init.high", "outside uint8"},
    {NULL,
     {"signature=\"void solve(const int* x, float* y, int rows, int cols, float eps)\"",
      "params/x/dtype=\"int32\"", "params/x/init={\"dist\": \"normal\"}"},
     "params.x.init.dist", "int32 buffers take"},
    {NULL, {"cases"}, "cases", "missing"},
    {NULL, {"cases=[]"}, "cases", "non-empty"},
    {NULL, {"cases/0=5"}, "cases[0]", "must be an object"},
    {NULL, {"cases/0={\"rows\": 1, \"eps\": 0}"}, "cases[0].cols", "missing"},
    {NULL, {"cases/1/rows=0"}, "cases[1].rows", "positive integer"},
    {NULL, {"cases/1/rows=2.5"}, "cases[1].rows", "positive integer"},
    {NULL, {"cases/1/rows=3000000000"}, "cases[1].rows", "does not fit the signature's 'int'"},
    {NULL, {"cases/0/foo=1"}, "cases[0].foo", "not a parameter"},
    {NULL, {"cases/0/x=1"}, "cases[0].x", "only sizes and scalars"},
    {NULL, {"cases/0/eps=\"small\""}, "cases[0].eps", "must be a number"},
    {NULL, {"cases/2={\"rows\": 100000, \"cols\": 100000, \"eps\": 0}"}, "cases[2]", "GiB"},
    {NULL, {"params/y/shape=[\"rows - 1\", \"cols\"]"}, "cases[0]",
     "params.y.shape[0] 'rows - 1' is 0"},
    {NULL, {"params/y/shape=[\"cols / (rows - 1)\"]"}, "cases[0]", "division by zero"},
    {NULL, {"bench_cases=[3]"}, "bench_cases[0]", "from 0 to 2"},
    {NULL, {"bench_cases=[1, 1]"}, "bench_cases[1]", "listed twice"},
    {NULL, {"bench_cases=2"}, "bench_cases", "non-empty array"},
    {NULL, {"tolerance/atol=-1"}, "tolerance.atol", "non-negative"},
    {NULL, {"tolerance/rtol=\"1e-5\""}, "tolerance.rtol", "must be a number"},
    {NULL, {"tolerance/abs=1"}, "tolerance.abs", "unknown key"},
    {NULL, {"bytes=\"8*rows*colz\""}, "bytes", "unknown size 'colz'"},
    {NULL, {"bytes=\"8*rows*\""}, "bytes", "unexpected end"},
    {NULL, {"flops=[1]"}, "flops", "must be an integer or a string"},
    {NULL, {"flops=\"0 - rows\""}, "cases[0]", "flops '0 - rows' is negative"},
    {NULL, {"reference"}, "reference", "missing"},
    {NULL, {"reference=\"../ref.cu\""}, "reference", "no '/' or '..'"},
    {NULL, {"baseline=\"/etc/passwd\""}, "baseline", "no '/' or '..'"},
    {NULL, {"prompt=\".hidden\""}, "prompt", "must not start with '.'"},
    {NULL, {"prompt=\"\""}, "prompt", "must not be empty"},
    {NULL, {"allow=\"cublas\""}, "allow", "must be an array"},
    {NULL, {"allow=[\"-lfoo\"]"}, "allow[0]", "not a library name"},
    {NULL, {"allow=[\"cublas\", 3]"}, "allow[1]", "must be a string"},
    {NULL, {"threads=\"yes\""}, "threads", "must be true or false"},
};

/* Applies "a/b/c=json" (or "a/b/c" to delete) to root. */
static void s_apply(json_t *root, const char *spec)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *eq = strchr(buf, '=');
    const char *val = NULL;
    if (eq) {
        *eq = '\0';
        val = eq + 1;
    }
    json_t *node = root;
    char *save = NULL, *tok = strtok_r(buf, "/", &save);
    while (tok) {
        char *next = strtok_r(NULL, "/", &save);
        if (!next) {
            json_error_t je;
            json_t *v = val ? json_loads(val, JSON_DECODE_ANY, &je) : NULL;
            cr_assert(!val || v, "bad test value %s: %s", val, je.text);
            if (json_is_array(node))
                cr_assert_eq(json_array_set_new(node, (size_t)atoi(tok), v), 0);
            else if (v)
                json_object_set_new(node, tok, v);
            else
                cr_assert_eq(json_object_del(node, tok), 0, "nothing at %s", spec);
            return;
        }
        node = json_is_array(node) ? json_array_get(node, (size_t)atoi(tok))
                                   : json_object_get(node, tok);
        cr_assert_not_null(node, "no node at %s in %s", tok, spec);
        tok = next;
    }
}

Test(task, every_malformed_field_is_named)
{
    int n = (int)(sizeof s_bad / sizeof s_bad[0]);
    cr_assert_geq(n, 30);
    for (int i = 0; i < n; i++) {
        const s_bad_t *b = &s_bad[i];
        char *text;
        if (b->raw) {
            text = strdup(b->raw);
        } else {
            json_t *root = json_loads(s_valid, 0, NULL);
            cr_assert_not_null(root);
            for (int k = 0; k < 3 && b->set[k]; k++)
                s_apply(root, b->set[k]);
            text = json_dumps(root, JSON_INDENT(2));
            json_decref(root);
        }
        char err[512] = "", want[128];
        cr_task_t *t = NULL;
        int rc = cr_task_parse(text, "task.json", &t, err, sizeof err);
        cr_assert(rc == CR_E_TASK || rc == CR_E_JSON, "case %d (%s) accepted: rc %d", i, b->field,
                  rc);
        cr_assert_null(t);
        snprintf(want, sizeof want, "task.json: %s%s", b->field,
                 strncmp(b->field, "line ", 5) ? ": " : "");
        cr_assert(strncmp(err, want, strlen(want)) == 0, "case %d: want prefix '%s', got '%s'", i,
                  want, err);
        cr_assert(strstr(err, b->what), "case %d: want '%s' in '%s'", i, b->what, err);
        free(text);
    }
}

Test(task, too_many_cases)
{
    json_t *root = json_loads(s_valid, 0, NULL);
    json_t *cases = json_array();
    for (int i = 0; i <= CR_TASK_MAX_CASES; i++)
        json_array_append_new(cases,
                              json_pack("{s:i, s:i, s:f}", "rows", 1, "cols", 1, "eps", 0.0));
    json_object_set_new(root, "cases", cases);
    json_object_del(root, "bench_cases");
    char *text = json_dumps(root, 0);
    char err[256];
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(text, "task.json", &t, err, sizeof err), CR_E_TASK);
    cr_assert_str_eq(err, "task.json: cases: 65 cases, at most 64");
    free(text);
    json_decref(root);
}

/* A pathological expression is refused, not a stack overflow. */
Test(task, deep_shape_is_refused)
{
    json_t *root = json_loads(s_valid, 0, NULL);
    static char deep[20002];
    memset(deep, '(', 10000);
    deep[10000] = '1';
    memset(deep + 10001, ')', 10000);
    deep[20001] = '\0';
    json_object_set_new(json_object_get(json_object_get(root, "params"), "y"), "shape",
                        json_pack("[s]", deep));
    char *text = json_dumps(root, 0);
    char err[256];
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(text, "task.json", &t, err, sizeof err), CR_E_TASK);
    cr_assert(strstr(err, "params.y.shape[0]: expression nested deeper"), "%s", err);
    free(text);
    json_decref(root);
}

/* ---------------------------------------------------------------- expressions */

static int64_t s_eval(const char *text)
{
    const char *names[] = {"a", "b", ""};
    int64_t vals[] = {6, 4, 99};
    cr_expr_t *e = NULL;
    char err[128];
    cr_assert_eq(cr_expr_parse(text, names, 3, &e, err, sizeof err), 0, "%s: %s", text, err);
    int64_t v = 0;
    cr_assert_eq(cr_expr_eval(e, vals, &v), 0, "%s", text);
    double f = 0;
    cr_assert_eq(cr_expr_eval_f(e, vals, &f), 0, "%s", text);
    cr_assert_float_eq(f, (double)v, 1e-9, "%s: double %g vs int %lld", text, f, (long long)v);
    cr_assert_str_eq(cr_expr_text(e), text);
    cr_expr_destroy(&e);
    cr_assert_null(e);
    return v;
}

Test(expr, precedence_and_associativity)
{
    cr_assert_eq(s_eval("2+3*4"), 14);
    cr_assert_eq(s_eval("(2+3)*4"), 20);
    cr_assert_eq(s_eval("10-4-3"), 3);
    cr_assert_eq(s_eval("100/10/5"), 2);
    cr_assert_eq(s_eval("7/2"), 3);
    cr_assert_eq(s_eval("7%3"), 1);
    cr_assert_eq(s_eval("2*a+b%3"), 13);
    cr_assert_eq(s_eval(" ( a + b ) * ( a - b ) "), 20);
    cr_assert_eq(s_eval("0"), 0);
}

Test(expr, unary_minus)
{
    cr_assert_eq(s_eval("-3*-2"), 6);
    cr_assert_eq(s_eval("-a"), -6);
    cr_assert_eq(s_eval("--a"), 6);
    cr_assert_eq(s_eval("-7/2"), -3, "division truncates toward zero");
    cr_assert_eq(s_eval("-7%3"), -1);
    cr_assert_eq(s_eval("b-(-a)"), 10);
}

static void s_parse_fails(const char *text, const char *what)
{
    const char *names[] = {"rows", "cols"};
    cr_expr_t *e = NULL;
    char err[128] = "";
    cr_assert_eq(cr_expr_parse(text, names, 2, &e, err, sizeof err), CR_E_EXPR, "%s", text);
    cr_assert_null(e);
    cr_assert(strstr(err, what), "'%s': want '%s' in '%s'", text, what, err);
}

Test(expr, parse_errors_name_position_and_token)
{
    s_parse_fails("rows*colz", "unknown name 'colz' at position 6");
    s_parse_fails("rows +", "unexpected end");
    s_parse_fails("(rows", "missing ')' for '(' at position 1");
    s_parse_fails("rows cols", "unexpected 'cols' at position 6");
    s_parse_fails("rows)", "unexpected ')' at position 5");
    s_parse_fails("rows ^ 2", "unexpected '^' at position 6");
    s_parse_fails("2rows", "unexpected 'rows' at position 2");
    s_parse_fails("", "empty expression");
    s_parse_fails("   ", "empty expression");
    s_parse_fails("+rows", "unexpected '+' at position 1");
    s_parse_fails("9223372036854775808", "does not fit in int64");
    s_parse_fails("----------------------------------------------------------------------1",
                  "nested deeper");
}

Test(expr, division_by_zero_and_overflow)
{
    const char *names[] = {"a", "b"};
    int64_t vals[] = {INT64_C(1) << 62, 0};
    const char *bad_int[] = {"a/b", "a%b", "a*4", "a+a+a", "-a-a-a", "-(-9223372036854775807-1)",
                             "(-9223372036854775807-1)/-1", "(-9223372036854775807-1)%-1"};
    for (size_t i = 0; i < sizeof bad_int / sizeof bad_int[0]; i++) {
        cr_expr_t *e = NULL;
        cr_assert_eq(cr_expr_parse(bad_int[i], names, 2, &e, NULL, 0), 0, "%s", bad_int[i]);
        int64_t v;
        cr_assert_eq(cr_expr_eval(e, vals, &v), CR_E_EXPR, "%s", bad_int[i]);
        double f;
        /* Double evaluation fails only on a zero divisor. */
        cr_assert_eq(cr_expr_eval_f(e, vals, &f), i < 2 ? CR_E_EXPR : 0, "%s", bad_int[i]);
        cr_expr_destroy(&e);
    }
    cr_expr_t *e = NULL;
    cr_assert_eq(cr_expr_parse("a*a*8", names, 2, &e, NULL, 0), 0);
    double f;
    cr_assert_eq(cr_expr_eval_f(e, vals, &f), 0);
    cr_assert_float_eq(f, ldexp(1.0, 127), ldexp(1.0, 80));
    cr_expr_destroy(&e);
    e = cr_expr_const(-12);
    int64_t v;
    cr_assert_eq(cr_expr_eval(e, vals, &v), 0);
    cr_assert_eq(v, -12);
    cr_assert_str_eq(cr_expr_text(e), "-12");
    cr_expr_destroy(&e);
    cr_expr_destroy(&e);
}

/* ---------------------------------------------------------------- folders */

static char *s_tmpdir(void)
{
    char tmpl[] = "/tmp/cr-task-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    return strdup(tmpl);
}

static void s_write(const char *dir, const char *name, const char *text)
{
    char *p = cr_file_join(dir, name);
    cr_assert_eq(cr_file_write_atomic(p, text, strlen(text)), 0, "%s", p);
    free(p);
}

static const char *s_axpy =
    "{\"name\": \"axpy\", \"language\": \"c\",\n"
    " \"signature\": \"void solve(const float *x, float *y, int n, float a, double *s)\",\n"
    " \"params\": {\"x\": {\"role\": \"in\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "   \"y\": {\"role\": \"inout\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "   \"n\": {\"role\": \"size\"}, \"a\": {\"role\": \"scalar\", \"dtype\": \"float32\"},\n"
    "   \"s\": {\"role\": \"out\", \"dtype\": \"float64\", \"shape\": [1]}},\n"
    " \"cases\": [{\"n\": 5, \"a\": 2}], \"reference\": \"ref.c\", \"prompt\": \"prompt.md\"}\n";

Test(task, load_dir_checks_files)
{
    char *dir = s_tmpdir(), err[512];
    cr_task_t *t = NULL;
    int rc = cr_task_load_dir(dir, &t, err, sizeof err);
    cr_assert_eq(rc, CR_E_TASK);
    cr_assert(strstr(err, "/task.json: No such file"), "%s", err);

    s_write(dir, "task.json", s_axpy);
    rc = cr_task_load_dir(dir, &t, err, sizeof err);
    cr_assert_eq(rc, CR_E_TASK);
    cr_assert_null(t);
    char want[256];
    snprintf(want, sizeof want, "%s/task.json: reference: file '%s/ref.c' does not exist", dir,
             dir);
    cr_assert_str_eq(err, want);

    s_write(dir, "ref.c", "void solve(void) {}\n");
    char *pdir = cr_file_join(dir, "prompt.md");
    cr_assert_eq(cr_file_mkdirs(pdir, 0700), 0);
    rc = cr_task_load_dir(dir, &t, err, sizeof err);
    cr_assert_eq(rc, CR_E_TASK);
    cr_assert(strstr(err, "task.json: prompt: ") && strstr(err, "prompt.md' is not a regular file"),
              "%s", err);
    cr_assert_eq(rmdir(pdir), 0);
    free(pdir);

    s_write(dir, "prompt.md", "Write axpy.\n");
    rc = cr_task_load_dir(dir, &t, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(t->dir, dir);
    cr_assert_str_eq(t->name, "axpy");
    cr_task_destroy(&t);

    s_write(dir, "task.json", "{\"name\": 1}");
    rc = cr_task_load_dir(dir, &t, err, sizeof err);
    cr_assert_eq(rc, CR_E_TASK);
    snprintf(want, sizeof want, "%s/task.json: name: must be a string, got an integer", dir);
    cr_assert_str_eq(err, want);
    cr_assert_eq(cr_file_rmtree(dir), 0);
    free(dir);
}

/* ---------------------------------------------------------------- shim */

/* The shim compiles with the C compiler beside a candidate whose solve is
 * static and drops const, and calls it with the judge's argument array. */
Test(task, shim_calls_solve)
{
    char err[512];
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(s_axpy, "axpy.json", &t, err, sizeof err), 0, "%s", err);
    char *src = cr_task_shim_source(t, "cand.c");
    cr_assert_not_null(src);
    cr_assert(strstr(src, "#include \"cand.c\""), "%s", src);
    cr_assert(strstr(src, "void cr_entry(void **cr__args)"), "%s", src);
    cr_assert_null(strstr(src, "extern \"C\" __attr"), "no C++ linkage in C");

    char *dir = s_tmpdir();
    s_write(dir, "shim.c", src);
    s_write(dir, "cand.c",
            "#define _GNU_SOURCE /* must still be first: the shim includes nothing before us */\n"
            "#include <stdio.h>\n"
            "static void solve(float *x, float *y, int n, float a, double *s)\n"
            "{\n"
            "    *s = 0;\n"
            "    for (int i = 0; i < n; i++) { y[i] += a * x[i]; *s += y[i]; }\n"
            "}\n");
    char *argv[] = {"cc", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", "shim.so", "shim.c",
                    NULL};
    cr_proc_opts_t o = {.argv = argv, .cwd = dir, .merge_stderr = 1, .out_cap = 8192,
                        .timeout_ms = 30000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited && r.exit_code == 0, "cc failed:\n%s\n%s", r.out, src);
    cr_proc_result_close(&r);

    char *so = cr_file_join(dir, "shim.so");
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    cr_task_entry_fn entry = (cr_task_entry_fn)dlsym(h, CR_TASK_ENTRY);
    cr_assert_not_null(entry);
    float x[5] = {1, 2, 3, 4, 5}, y[5] = {10, 10, 10, 10, 10}, a = 2;
    double s = -1;
    float *xp = x, *yp = y;
    double *sp = &s;
    /* The size is int64 in the case; the shim reads it as the declared int. */
    int n = (int)t->cases[0].ival[2];
    void *args[] = {&xp, &yp, &n, &a, &sp};
    entry(args);
    for (int i = 0; i < 5; i++)
        cr_assert_float_eq(y[i], 10 + 2 * x[i], 1e-6);
    cr_assert_float_eq(s, 80.0, 1e-9);
    dlclose(h);
    free(so);
    cr_assert_eq(cr_file_rmtree(dir), 0);
    free(dir);
    free(src);
    cr_task_destroy(&t);
}

Test(task, shim_cuda_has_c_linkage)
{
    char err[512];
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(s_valid, "task.json", &t, err, sizeof err), 0, "%s", err);
    char *src = cr_task_shim_source(t, "candidate.cu");
    cr_assert_not_null(src);
    cr_assert(strstr(src, "extern \"C\" __attr"), "%s", src);
    cr_assert(strstr(src, "solve(*(float * *)cr__args[0],"), "%s", src);
    cr_assert(strstr(src, "*(float *)cr__args[4]);"), "%s", src);
    free(src);
    cr_assert_null(cr_task_shim_source(t, "evil\"name.cu"));
    cr_task_destroy(&t);
}

/* ---- "language": "torch" (docs/torch.md) ---- */

Test(task, torch_task_options_and_defaults)
{
    char err[512];
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse("{\"name\": \"relu\", \"language\": \"torch\", "
                               "\"reference\": \"relu.py\"}", "t.json", &t, err, sizeof err),
                 0, "%s", err);
    cr_expect_str_eq(t->language, "torch");
    cr_expect_eq(t->precision, CR_DT_F32);
    cr_expect_eq(t->trials, 5); /* KernelBench's eval script */
    cr_expect_float_eq(t->atol, 1e-4, 1e-12); /* KernelBench's fp32 tolerance */
    cr_expect_float_eq(t->rtol, 1e-4, 1e-12);
    cr_expect_str_eq(t->device, "auto");
    cr_expect_eq(t->ncases, 5);
    cr_expect_eq(t->nbench, 1);
    cr_expect_eq(t->nparams, 0);
    char *shim = cr_task_shim_source(t, "kernel.py");
    cr_assert_not_null(shim);
    cr_expect(shim[0] == '#' && !strstr(shim, "cr_entry"), "a torch shim is a comment: %s", shim);
    free(shim);
    cr_task_destroy(&t);

    cr_assert_eq(cr_task_parse("{\"name\": \"mm\", \"language\": \"torch\", \"reference\": "
                               "\"mm.py\", \"precision\": \"bf16\", \"trials\": 3, \"device\": "
                               "\"cpu\"}", "t.json", &t, err, sizeof err), 0, "%s", err);
    cr_expect_eq(t->precision, CR_DT_BF16);
    cr_expect_eq(t->trials, 3);
    cr_expect_float_eq(t->atol, 1e-2, 1e-12); /* fp16 and bf16: 1e-2 */
    cr_expect_str_eq(t->device, "cpu");
    cr_task_destroy(&t);

    cr_assert_eq(cr_task_parse("{\"name\": \"mm\", \"language\": \"torch\", \"reference\": "
                               "\"mm.py\", \"tolerance\": 0.003}", "t.json", &t, err, sizeof err),
                 0, "%s", err);
    cr_expect_float_eq(t->atol, 0.003, 1e-12); /* one number: both, as KernelBench's */
    cr_expect_float_eq(t->rtol, 0.003, 1e-12);
    cr_task_destroy(&t);

    /* the roofline floor's declarations: what one forward() moves and computes */
    cr_assert_eq(cr_task_parse("{\"name\": \"mm\", \"language\": \"torch\", \"reference\": "
                               "\"mm.py\", \"bytes\": 3145728, \"flops\": 2147483648}", "t.json",
                               &t, err, sizeof err), 0, "%s", err);
    double v = 0;
    cr_expect_eq(cr_task_bytes(t, 0, &v), 0);
    cr_expect_float_eq(v, 3145728.0, 0.5);
    cr_expect_eq(cr_task_flops(t, 0, &v), 0);
    cr_expect_float_eq(v, 2147483648.0, 0.5);
    cr_task_destroy(&t);

    /* the baseline: the reference as it is, or through torch.compile in a mode */
    cr_assert_eq(cr_task_parse("{\"name\": \"mm\", \"language\": \"torch\", \"reference\": "
                               "\"mm.py\", \"baseline\": \"eager\"}", "t.json", &t, err,
                               sizeof err), 0, "%s", err);
    cr_expect_null(t->compile_mode);
    cr_task_destroy(&t);
    cr_assert_eq(cr_task_parse("{\"name\": \"mm\", \"language\": \"torch\", \"reference\": "
                               "\"mm.py\", \"baseline\": \"torch.compile\"}", "t.json", &t, err,
                               sizeof err), 0, "%s", err);
    cr_expect_str_eq(t->compile_mode, "default");
    cr_task_destroy(&t);
    cr_assert_eq(cr_task_parse("{\"name\": \"mm\", \"language\": \"torch\", \"reference\": "
                               "\"mm.py\", \"baseline\": \"torch.compile\", \"compile_mode\": "
                               "\"max-autotune\"}", "t.json", &t, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(t->compile_mode, "max-autotune");
    cr_task_destroy(&t);
}

Test(task, torch_task_errors_name_the_field)
{
    static const char *const bad[][2] = {
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"precision\": "
         "\"fp8\"}", "precision"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"trials\": 0}",
         "trials"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"device\": "
         "\"tpu\"}", "device"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"signature\": "
         "\"void solve()\"}", "signature"},
        {"{\"name\": \"a\", \"language\": \"torch\"}", "reference"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"tolerance\": "
         "-1}", "tolerance"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"flops\": -1}",
         "flops"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"flops\": "
         "\"2*N\"}", "flops"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"baseline\": "
         "\"b.py\"}", "baseline"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", "
         "\"compile_mode\": \"default\"}", "compile_mode"},
        {"{\"name\": \"a\", \"language\": \"torch\", \"reference\": \"a.py\", \"baseline\": "
         "\"torch.compile\", \"compile_mode\": \"fastest\"}", "compile_mode"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512] = "";
        cr_task_t *t = NULL;
        cr_expect_neq(cr_task_parse(bad[i][0], "t.json", &t, err, sizeof err), 0, "%s",
                      bad[i][0]);
        cr_expect(strstr(err, bad[i][1]) != NULL, "'%s' does not name %s", err, bad[i][1]);
        cr_task_destroy(&t);
    }
}

/* A folder of KernelBench problem files is a folder of tasks; a problem's
 * key (the bundle hash) is its normalised source's. */
Test(task, torch_problem_files_are_tasks_keyed_by_normalised_source)
{
    char dir[] = "/tmp/cr-torch-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char a[600], b[600], c[600], sub[600];
    snprintf(sub, sizeof sub, "%s/b", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    snprintf(a, sizeof a, "%s/relu.py", dir);
    snprintf(b, sizeof b, "%s/b/relu.py", dir);
    snprintf(c, sizeof c, "%s/gelu.py", dir);
    const char *src = "import torch\nclass Model(torch.nn.Module):\n    pass\n";
    const char *same = "import torch  \r\nclass Model(torch.nn.Module):\r\n    pass\r\n\r\n\n";
    cr_assert_eq(cr_file_write_atomic(a, src, strlen(src)), 0);
    cr_assert_eq(cr_file_write_atomic(b, same, strlen(same)), 0);
    cr_assert_eq(cr_file_write_atomic(c, "x = 1\n", 6), 0);
    char err[512] = "";
    Crucible__TaskBundle *ba = NULL, *bb = NULL;
    cr_assert_eq(cr_client_task_bundle(a, &ba, err, sizeof err), 0, "%s", err);
    cr_assert_eq(cr_client_task_bundle(b, &bb, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(ba->name, "relu");
    cr_expect_str_eq(ba->hash, bb->hash, "the same problem, saved differently, is one key");
    cr_expect_str_eq(ba->reference_source, src);
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(ba->task_json, "relu.py", &t, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(t->language, "torch");
    cr_expect_str_eq(t->reference, "relu.py");
    cr_task_destroy(&t);
    crucible__task_bundle__free_unpacked(ba, NULL);
    crucible__task_bundle__free_unpacked(bb, NULL);

    cr_jobset_t js = {0};
    cr_assert_eq(cr_jobset_load(&js, dir, NULL, err, sizeof err), 0, "%s", err);
    cr_expect_eq(js.ntasks, 2, "relu.py and gelu.py (the subfolder holds no task.json)");
    cr_jobset_close(&js);

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* ---------------------------------------------------------------- multi-GPU tasks */

/* A reduce-scatter of two ranks (docs/multigpu.md): per-rank shapes, the world
 * size as a size name, a communicator, and the NCCL baseline it needs. */
static const char *s_ranked =
    "{\n"
    "  \"name\": \"reduce_scatter_f32\",\n"
    "  \"language\": \"cuda\",\n"
    "  \"gpus\": 2,\n"
    "  \"signature\": \"void solve(int rank, int world, ncclComm_t comm, const float *x, "
    "float *y, int n)\",\n"
    "  \"params\": {\n"
    "    \"rank\":  {\"role\": \"rank\"},\n"
    "    \"world\": {\"role\": \"world\"},\n"
    "    \"comm\":  {\"role\": \"comm\"},\n"
    "    \"x\":     {\"role\": \"in\",  \"dtype\": \"float32\", \"shape\": [\"world * n\"]},\n"
    "    \"y\":     {\"role\": \"out\", \"dtype\": \"float32\", \"shape\": [\"n\"]},\n"
    "    \"n\":     {\"role\": \"size\"}\n"
    "  },\n"
    "  \"cases\": [{\"n\": 1}, {\"n\": 1000}],\n"
    "  \"reference\": \"reference.cu\",\n"
    "  \"baseline\": \"baseline.cu\",\n"
    "  \"bytes\": \"4 * (world + 1) * n\",\n"
    "  \"comm_bytes\": \"4 * (world - 1) * n\"\n"
    "}\n";

Test(task, ranked_task_loads)
{
    char err[512];
    cr_task_t *t = NULL;
    int rc = cr_task_parse(s_ranked, "task.json", &t, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_eq(t->gpus, 2);
    cr_assert_eq(cr_task_ranks(t), 2);
    cr_assert_eq(t->rank_param, 0);
    cr_assert_eq(t->world_param, 1);
    cr_assert_eq(t->comm_param, 2);
    cr_assert_eq(t->params[0].role, CR_ROLE_RANK);
    cr_assert_eq(t->params[1].role, CR_ROLE_WORLD);
    cr_assert_eq(t->params[2].role, CR_ROLE_COMM);
    cr_assert_str_eq(t->params[2].ctype, "ncclComm_t");
    cr_assert_str_eq(cr_role_name(CR_ROLE_COMM), "comm");
    /* the world size is every case's value of the world param, and a size in shapes */
    int64_t numel = 0;
    cr_assert_eq(cr_task_numel(t, 1, 3, &numel), 0);
    cr_assert_eq(numel, 2000);
    cr_assert_eq(cr_task_numel(t, 1, 4, &numel), 0);
    cr_assert_eq(numel, 1000);
    double b = 0;
    cr_assert_eq(cr_task_comm_bytes(t, 1, &b), 0);
    cr_assert_float_eq(b, 4000.0, 1e-9);
    cr_assert_eq(cr_task_bytes(t, 1, &b), 0);
    cr_assert_float_eq(b, 12000.0, 1e-9);
    /* it links NCCL without asking: its candidates and baseline call it */
    cr_assert_eq(t->nallow, 1);
    cr_assert_str_eq(t->allow[0], "nccl");
    cr_assert_not_null(cr_task_lib_find("nccl")->unversioned);
    char cls[CR_TASK_CLASS_MAX + 1];
    cr_task_class(t, cls, sizeof cls);
    cr_assert_str_eq(cls, "cuda/2");
    /* the shim passes the communicator by value, in its own type */
    char *shim = cr_task_shim_source(t, "cand.cu");
    cr_assert_not_null(shim);
    cr_assert(strstr(shim, "*(ncclComm_t *)cr__args[2]"), "%s", shim);
    cr_assert(strstr(shim, "*(int *)cr__args[0]"), "%s", shim);
    free(shim);
    cr_task_destroy(&t);

    /* one GPU: the single-rank form of the same task */
    json_t *root = json_loads(s_ranked, 0, NULL);
    json_object_set_new(root, "gpus", json_integer(1));
    char *text = json_dumps(root, 0);
    json_decref(root);
    rc = cr_task_parse(text, "task.json", &t, err, sizeof err);
    free(text);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_eq(cr_task_ranks(t), 1);
    cr_assert_eq(cr_task_numel(t, 1, 3, &numel), 0);
    cr_assert_eq(numel, 1000);
    cr_task_class(t, cls, sizeof cls);
    cr_assert_str_eq(cls, "cuda/1");
    cr_task_destroy(&t);

    /* a one-GPU task without "gpus" keeps its language as its class */
    cr_assert_eq(cr_task_parse(s_valid, "task.json", &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(t->gpus, 0);
    cr_assert_eq(cr_task_ranks(t), 1);
    cr_assert_eq(t->comm_param, -1);
    cr_task_class(t, cls, sizeof cls);
    cr_assert_str_eq(cls, "cuda");
    cr_task_destroy(&t);
}

Test(task, placement_classes_parse)
{
    char lang[16];
    int g = -1;
    cr_assert_eq(cr_task_class_parse("cuda", lang, sizeof lang, &g), 0);
    cr_assert_str_eq(lang, "cuda");
    cr_assert_eq(g, 0);
    cr_assert_eq(cr_task_class_parse("cuda/4", lang, sizeof lang, &g), 0);
    cr_assert_str_eq(lang, "cuda");
    cr_assert_eq(g, 4);
    const char *bad[] = {"cuda/0", "cuda/9", "cuda/", "cuda/2x", "/2", "", "cuda/-1",
                         "a_language_name_too_long/2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(cr_task_class_parse(bad[i], lang, sizeof lang, &g), -EINVAL, "%s", bad[i]);
}

/* Every mistake of a multi-GPU task is named by its field. */
static const s_bad_t s_ranked_bad[] = {
    {NULL, {"gpus=0"}, "gpus", "from 1 to 8"},
    {NULL, {"gpus=9"}, "gpus", "from 1 to 8"},
    {NULL, {"gpus=\"2\""}, "gpus", "got a string"},
    {NULL, {"gpus=1.5"}, "gpus", "must be an integer"},
    {NULL, {"language=\"c\""}, "gpus", "multi-GPU tasks are cuda tasks"},
    {NULL, {"baseline"}, "gpus", "name one in \"baseline\""},
    {NULL, {"gpus"}, "params.rank.role", "give the task \"gpus\""},
    {NULL, {"params/comm/role=\"scalar\""}, "params.comm", "its role is comm"},
    {NULL, {"params/rank/role=\"comm\""}, "params.rank", "passes the comm as 'ncclComm_t'"},
    {NULL, {"params/world/role=\"rank\""}, "params.world.role",
     "a second rank param (the first is 'rank')"},
    {NULL, {"params/n/role=\"world\""}, "params.n.role", "a second world param"},
    {NULL, {"params/rank/dtype=\"int32\""}, "params.rank.dtype", "take no dtype"},
    {NULL, {"params/rank/shape=[1]"}, "params.rank.shape", "only in, out and inout"},
    {NULL, {"params/comm/init={\"dist\": \"normal\"}"}, "params.comm.init", "only in and inout"},
    {NULL,
     {"signature=\"void solve(long rank, int world, ncclComm_t comm, const float *x, float *y, "
      "int n)\""},
     "params.rank", "the signature declares 'long rank'"},
    {NULL,
     {"signature=\"void solve(int rank, int world, ncclComm_t *comm, const float *x, float *y, "
      "int n)\""},
     "params.comm.role", "(a pointer)"},
    {NULL,
     {"signature=\"void solve(int rank, int world, int comm, const float *x, float *y, int n)\""},
     "params.comm", "passes the comm as 'ncclComm_t'"},
    {NULL,
     {"signature=\"void solve(int rank, int world, const float *x, float *y, int n)\"",
      "params/comm"},
     "params", "declare 'ncclComm_t comm'"},
    {NULL, {"cases/0/rank=0"}, "cases[0].rank", "the judge sets on each rank"},
    {NULL, {"cases/0/world=2"}, "cases[0].world", "the judge sets on each rank"},
    {NULL, {"params/y/shape=[\"rank\"]"}, "params.y.shape[0]", "unknown size 'rank'"},
    {NULL, {"comm_bytes=\"4 * m\""}, "comm_bytes", "unknown size 'm'"},
    {NULL, {"comm_bytes=\"n - 2 * world\""}, "cases[0]", "comm_bytes 'n - 2 * world' is negative"},
    {NULL, {"params/rank/role=\"ranks\""}, "params.rank.role", "unknown role 'ranks'"},
    {NULL, {"allow=[\"nccl\", \"nccl\"]"}, "allow[1]", "listed twice"},
};

Test(task, ranked_mistakes_are_named)
{
    for (size_t i = 0; i < sizeof s_ranked_bad / sizeof s_ranked_bad[0]; i++) {
        const s_bad_t *b = &s_ranked_bad[i];
        json_t *root = json_loads(s_ranked, 0, NULL);
        cr_assert_not_null(root);
        for (int k = 0; k < 3 && b->set[k]; k++)
            s_apply(root, b->set[k]);
        char *text = json_dumps(root, JSON_INDENT(2));
        json_decref(root);
        char err[512] = "", want[128];
        cr_task_t *t = NULL;
        int rc = cr_task_parse(text, "task.json", &t, err, sizeof err);
        cr_assert_eq(rc, CR_E_TASK, "case %zu (%s) accepted: rc %d", i, b->field, rc);
        cr_assert_null(t);
        snprintf(want, sizeof want, "task.json: %s: ", b->field);
        cr_assert(strncmp(err, want, strlen(want)) == 0, "case %zu: want prefix '%s', got '%s'",
                  i, want, err);
        cr_assert(strstr(err, b->what), "case %zu: want '%s' in '%s'", i, b->what, err);
        free(text);
    }
    /* comm_bytes in a one-GPU task */
    json_t *root = json_loads(s_valid, 0, NULL);
    json_object_set_new(root, "comm_bytes", json_integer(4));
    char *text = json_dumps(root, 0);
    json_decref(root);
    char err[512] = "";
    cr_task_t *t = NULL;
    cr_assert_eq(cr_task_parse(text, "task.json", &t, err, sizeof err), CR_E_TASK);
    cr_assert(strstr(err, "comm_bytes: only a task with \"gpus\""), "%s", err);
    free(text);
    /* nccl is the library of tasks with "gpus" only */
    root = json_loads(s_valid, 0, NULL);
    json_object_set_new(root, "allow", json_pack("[s]", "nccl"));
    text = json_dumps(root, 0);
    json_decref(root);
    cr_assert_eq(cr_task_parse(text, "task.json", &t, err, sizeof err), CR_E_TASK);
    cr_assert(strstr(err, "allow[0]: 'nccl' is the library of tasks with \"gpus\""), "%s", err);
    free(text);
}
