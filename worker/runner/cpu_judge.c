/* cpu_judge.c — see cpu_judge.h.
 *
 * Memory picture of one verification case (set 0, then set 1):
 *
 *   candidate buffers  in/inout filled from (seed, case, set, param), out poisoned
 *   pristine copies    of in/inout, never reachable by the candidate
 *   reference buffers  fresh, filled from the pristine copies, after the candidate
 *
 * The set-0 candidate buffers stay allocated while set 1 runs, so set 1 is
 * guaranteed new addresses as well as new values (docs/hacks.md #4).
 *
 * Timing of one bench case: N data sets (inputs, made untimed up front) and
 * N candidate slots (buffers). Sample i runs data set i % N in slot
 * (i % N + i / N) % N, so each pass over the pool puts different values
 * behind each address: a cache keyed by pointer returns the wrong answer,
 * and the randomly chosen verified samples catch it. On top of that every
 * call's inputs are the set with a random sprinkle of elements redrawn
 * (s_sample), so no call ever repeats an earlier call's inputs: a cache
 * keyed by content never hits, and the reference's answer to a call's
 * inputs exists nowhere in memory until after the candidate has returned
 * (the reference runs second, on the same inputs). Outputs are poisoned
 * before every call (not only verified ones), so a candidate cannot tell
 * which calls are checked. After every candidate call the executor checks
 * and resets the floating-point control state (docs/hacks.md #19).
 *
 * Where the memory lives: candidate buffers in the candidate executor's
 * arenas (its `in` params in the input arena, which it can only read),
 * reference and baseline buffers in theirs, everything else (pristine
 * copies, the pool's data sets, each call's inputs) in this process, which
 * no executor can reach (exec.h, docs/judge.md). */
#define _GNU_SOURCE /* strdup, vasprintf */
#include "cpu_judge.h"
#include "roofline.h"

#include "exec.h"

#include "error.h"
#include "hash.h"
#include "inputs.h"
#include "log.h"
#include "stats.h"
#include "timeutil.h"
#include "topo.h"

#include <dirent.h>
#include <errno.h>
#include <fenv.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define S_NP CR_TASK_MAX_PARAMS
/* The stream that picks verified timed samples: a set index no input uses. */
#define S_SET_SAMPLING CR_JUDGE_SET_SAMPLING
/* Timing pool sets start after the two verification sets (0 and 1). */
#define S_SET_POOL CR_JUDGE_SET_TIMED
/* The stream that perturbs the inputs of each timed call (s_sample). */
#define S_SET_PERTURB 0xfffffffeu
/* Each timed call redraws one input element in every S_PERTURB_MIN to
 * S_PERTURB_MIN + S_PERTURB_SPAN - 1 (a random stride and offset per call and
 * param): every output of a reduction or a matmul changes, a spread-out 3-12%
 * of an elementwise kernel's, no two calls see the same inputs (docs/hacks.md #4,
 * #9), and drawing at most 1/8 of the elements keeps it cheap next to the copy. */
#define S_PERTURB_MIN 8
#define S_PERTURB_SPAN 25
#define S_POOL_BYTES (256ull << 20) /* ~256 MiB of pool: many sets for small cases */
#define S_POOL_MIN 2                /* two sets are needed for the address rotation */
#define S_POOL_MAX 8
#define S_WARMUP_S 0.05             /* per side: long enough for frequency ramp-up */
#define S_WARMUP_CALLS 3
/* ~1 in 8 timed candidate outputs re-verified, and always the first and the last */
#define S_VERIFY_ONE_IN CR_JUDGE_VERIFY_ONE_IN
#define S_HARD_CAP CR_JUDGE_HARD_CAP /* x budget: stop even below the minimum sample count */
#define S_ALIGN 64                  /* cache line: what a vectorised kernel may assume */
#define S_PAGE 4096u                /* smallest page mprotect works on */
#define S_HUGE (2u << 20)           /* x86-64/aarch64 huge page */
#define S_FLUSH_MIN (1u << 20)      /* flush at least 1 MiB even if told the LLC is tiny */
/* hwloc inside VMs can report implausible last-level caches (508 MB per core
 * on our build VM); writing twice that before every sample would starve the
 * sample count. Above this the case's own buffers are still evicted line by
 * line (s_evict), which is what makes the candidate start cold. */
#define S_FLUSH_LLC_MAX (64ull << 20)

/* ---------------------------------------------------------------- verdicts */

void cr_judge_set_str(char **field, const char *s)
{
    char *d = strdup(s);
    if (!d)
        return; /* keep the old text: a verdict without its message beats none */
    if (*field && *field != protobuf_c_empty_string)
        free(*field);
    *field = d;
}

void cr_judge_flag(Crucible__RewardRecord *rec, const char *flag)
{
    for (size_t i = 0; i < rec->n_hack_flags; i++)
        if (strcmp(rec->hack_flags[i], flag) == 0)
            return;
    char **v = realloc(rec->hack_flags, (rec->n_hack_flags + 1) * sizeof *v);
    if (!v)
        return;
    rec->hack_flags = v;
    if ((v[rec->n_hack_flags] = strdup(flag)) != NULL)
        rec->n_hack_flags++;
}

/* Severity order of the verdicts this judge gives. */
static int s_rank(int status)
{
    switch (status) {
    case CRUCIBLE__STATUS__STATUS_HACK_DETECTED: return 3;
    case CRUCIBLE__STATUS__STATUS_INCORRECT: return 2;
    case CRUCIBLE__STATUS__STATUS_OK: return 1;
    default: return 0;
    }
}

void cr_judge_fail(Crucible__RewardRecord *rec, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int rose = s_rank(status) > s_rank(rec->status);
    if (rose)
        rec->status = status;
    if (rose || !rec->message || !rec->message[0])
        cr_judge_set_str(&rec->message, msg);
}

/* Sets a status the judge's severity order does not cover (INFRA_ERROR,
 * RUNTIME_ERROR), replacing any earlier verdict. */
void cr_judge_hard(Crucible__RewardRecord *rec, int status, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rec->status = status;
    cr_judge_set_str(&rec->message, msg);
    cr_info("%s", msg);
}

/* The verdict when an executor stopped serving: the one rule for every way
 * an executor can end (exec.h). A reference or baseline that crashes, hangs
 * or will not load makes the task invalid, never the candidate wrong; an
 * executor that could not even start is the judge's problem. */
void cr_judge_exec_verdict(Crucible__RewardRecord *rec, const cr_exec_t *x, int candidate)
{
    const cr_exec_fault_t *f = cr_exec_fault(x);
    if (f->kind == CR_EXEC_SETUP) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s", f->msg);
        return;
    }
    if (!candidate) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INVALID_TASK, "the task is broken: %s", f->msg);
        return;
    }
    switch (f->kind) {
    case CR_EXEC_RO_WRITE:
        cr_judge_flag(rec, "input_mutated");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "%s", f->msg);
        break;
    case CR_EXEC_SANDBOX:
        cr_judge_flag(rec, "sandbox_violation");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "%s", f->msg);
        break;
    case CR_EXEC_TIMEOUT:
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_TIMEOUT, "%s", f->msg);
        break;
    default: /* signalled, exited, did not load */
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR, "%s", f->msg);
        break;
    }
}


int cr_judge_thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

const double *cr_judge_per_bench(const double *v, size_t n, const cr_task_t *t, const char *what,
                                 const char *instead)
{
    if (n == 0)
        return NULL;
    int ok = n == (size_t)t->nbench;
    for (size_t i = 0; ok && i < n; i++)
        ok = isfinite(v[i]) && v[i] > 0;
    if (!ok) {
        cr_warn("request: %zu %s do not fit task %s (%d bench cases, each > 0); %s", n, what,
                t->name, t->nbench, instead);
        return NULL;
    }
    return v;
}

const double *cr_judge_cached_ref(const Crucible__RunnerRequest *req, const cr_task_t *t,
                                  const double **rse)
{
    const double *m = cr_judge_per_bench(req->cached_ref_median_us, req->n_cached_ref_median_us,
                                         t, "cached reference medians",
                                         "measuring the reference");
    *rse = m && req->n_cached_ref_rse == req->n_cached_ref_median_us ? req->cached_ref_rse : NULL;
    return m;
}

/* ---------------------------------------------------------------- layout */

/* Value types a signature may name (task.c's canonical spellings), with how
 * to store a case's value so that the shim's `*(T *)args[i]` reads it back:
 * floats through cr_inputs_set with their dtype, integers by width. */
static const struct {
    const char *text;
    int fdtype; /* float dtype, or -1 for integers */
    int size;   /* bytes */
} s_vtypes[] = {
    {"float", CR_DT_F32, 4},        {"double", CR_DT_F64, 8},
    {"half", CR_DT_F16, 2},         {"__half", CR_DT_F16, 2},
    {"__nv_bfloat16", CR_DT_BF16, 2}, {"nv_bfloat16", CR_DT_BF16, 2},
    {"bool", -1, 1},                {"signed char", -1, 1},
    {"unsigned char", -1, 1},       {"int8_t", -1, 1},
    {"uint8_t", -1, 1},             {"short", -1, 2},
    {"unsigned short", -1, 2},      {"int16_t", -1, 2},
    {"uint16_t", -1, 2},            {"int", -1, 4},
    {"unsigned int", -1, 4},        {"int32_t", -1, 4},
    {"uint32_t", -1, 4},            {"long", -1, 8},
    {"unsigned long", -1, 8},       {"long long", -1, 8},
    {"unsigned long long", -1, 8},  {"int64_t", -1, 8},
    {"uint64_t", -1, 8},            {"size_t", -1, 8},
};

typedef struct {
    int c;                                 /* case index */
    size_t numel[S_NP];                    /* elements of each buffer param */
    size_t bytes[S_NP];                    /* bytes of each buffer param */
    size_t total;                          /* bytes of all buffers of one set */
    _Alignas(16) unsigned char val[S_NP][16]; /* size/scalar values in their C type */
} s_layout_t;

typedef struct {
    cr_exec_t *x;    /* the executor whose arenas hold them; NULL = this process's heap */
    void *p[S_NP];   /* one buffer per buffer param, NULL otherwise; owned (heap) */
    size_t sz[S_NP]; /* bytes allocated for p[i] (rounded up) */
    int pages;       /* whole pages each: can be made read-only (s_seal) */
    int sealed;      /* read-only now: s_free makes them writable first */
} s_bufs_t;

static int s_is_buf(const cr_param_t *prm)
{
    return prm->role == CR_ROLE_IN || prm->role == CR_ROLE_OUT || prm->role == CR_ROLE_INOUT;
}

/* Role masks for s_alloc / s_copy. */
#define S_M_IN (1u << CR_ROLE_IN)
#define S_M_OUT (1u << CR_ROLE_OUT)
#define S_M_INOUT (1u << CR_ROLE_INOUT)
#define S_M_ALL (S_M_IN | S_M_OUT | S_M_INOUT)

static int s_store_value(const cr_param_t *prm, const cr_case_t *cs, int p, unsigned char *dst)
{
    for (size_t k = 0; k < sizeof s_vtypes / sizeof s_vtypes[0]; k++) {
        if (strcmp(s_vtypes[k].text, prm->ctype) != 0)
            continue;
        if (s_vtypes[k].fdtype >= 0) {
            cr_inputs_set(dst, (cr_dtype_t)s_vtypes[k].fdtype, 0, cs->fval[p]);
            return 0;
        }
        int64_t v = cs->ival[p];
        switch (s_vtypes[k].size) {
        case 1: { uint8_t x = (uint8_t)v; memcpy(dst, &x, 1); break; }
        case 2: { uint16_t x = (uint16_t)v; memcpy(dst, &x, 2); break; }
        case 4: { uint32_t x = (uint32_t)v; memcpy(dst, &x, 4); break; }
        default: memcpy(dst, &v, 8); break;
        }
        return 0;
    }
    return CR_E_TASK;
}

static int s_layout(const cr_task_t *t, int c, s_layout_t *L, char *err, size_t errlen)
{
    memset(L, 0, sizeof *L);
    L->c = c;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!s_is_buf(prm)) {
            if (s_store_value(prm, &t->cases[c], p, L->val[p]) != 0) {
                snprintf(err, errlen, "case %d: %s: no storage for C type '%s'", c, prm->name,
                         prm->ctype);
                return CR_E_TASK;
            }
            continue;
        }
        int64_t n = 0;
        if (cr_task_numel(t, c, p, &n) != 0 || n < 0) {
            snprintf(err, errlen, "case %d: %s: shape does not evaluate", c, prm->name);
            return CR_E_TASK;
        }
        L->numel[p] = (size_t)n;
        L->bytes[p] = (size_t)n * cr_dtype_size(prm->dtype);
        L->total += L->bytes[p];
    }
    return 0;
}

/* Makes page-granular buffers read-only (ro) or writable again. The judge's
 * own copies (pristine inputs, expected outputs) are sealed while candidate
 * code runs, so a candidate that goes looking for them in the heap and
 * writes there crashes instead of bending the reference (docs/hacks.md #11). */
static void s_seal(s_bufs_t *B, int ro)
{
    if (B->x || !B->pages || B->sealed == ro)
        return;
    for (int p = 0; p < S_NP; p++)
        if (B->p[p] && mprotect(B->p[p], B->sz[p], ro ? PROT_READ : PROT_READ | PROT_WRITE) != 0)
            cr_debug("mprotect: %s", strerror(errno)); /* a lost defence, not a failure */
    B->sealed = ro;
}

/* Heap buffers are freed; arena buffers only forgotten (cr_exec_reset frees
 * them all at the start of the next case). */
static void s_free(s_bufs_t *B)
{
    s_seal(B, 0);
    for (int p = 0; p < S_NP; p++) {
        if (!B->x)
            free(B->p[p]);
        B->p[p] = NULL;
    }
}

/* One judge buffer: 64-byte aligned and at least a cache line (so even a
 * zero-element buffer is a distinct, valid pointer). Large ones are backed by
 * huge pages where the kernel allows it: first touch of fresh memory then
 * costs 512x fewer page faults (on some VMs a 4 KiB fault costs ~20 us), and
 * TLB misses stop adding noise to the samples of both sides alike. */
static int s_buf_alloc(void **p, size_t bytes, int pages, size_t *szp)
{
    size_t unit = pages ? S_PAGE : S_ALIGN;
    size_t sz = (bytes + unit - 1) / unit * unit;
    if (sz == 0)
        sz = unit;
    *szp = sz;
    size_t align = sz >= S_HUGE ? S_HUGE : unit;
    if (posix_memalign(p, align, sz) != 0) {
        *p = NULL;
        return -ENOMEM;
    }
#ifdef MADV_HUGEPAGE
    if (align == S_HUGE)
        madvise(*p, sz / S_HUGE * S_HUGE, MADV_HUGEPAGE); /* advice only */
#endif
    return 0;
}

/* Allocates the buffers of the params whose role is in mask: in executor
 * x's arenas (`in` params in its read-only input arena), or with x NULL on
 * this process's heap (s_buf_alloc; with pages, in whole pages so that
 * s_seal can protect them). Arena buffers are only cache-line aligned:
 * page-aligned arrays would all alias in the L1 sets, which no real caller's
 * allocator does. Returns 0 or -ENOMEM (B then holds nothing). */
static int s_alloc(cr_exec_t *x, const cr_task_t *t, const s_layout_t *L, unsigned mask,
                   int pages, s_bufs_t *B)
{
    memset(B, 0, sizeof *B);
    B->pages = pages;
    B->x = x;
    for (int p = 0; p < t->nparams; p++) {
        if (!s_is_buf(&t->params[p]) || !(mask & (1u << t->params[p].role)))
            continue;
        if (x) {
            if (!(B->p[p] = cr_exec_alloc(x, t->params[p].role == CR_ROLE_IN, L->bytes[p]))) {
                s_free(B);
                return -ENOMEM;
            }
            B->sz[p] = L->bytes[p];
            continue;
        }
        if (s_buf_alloc(&B->p[p], L->bytes[p], pages, &B->sz[p]) != 0) {
            s_free(B);
            return -ENOMEM;
        }
    }
    return 0;
}

/* in/inout from the secret stream of (case, set, param); out poisoned. */
static void s_fill(const cr_cpu_judge_t *j, const s_layout_t *L, uint32_t set, s_bufs_t *B)
{
    const cr_task_t *t = j->task;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!B->p[p])
            continue;
        if (prm->role == CR_ROLE_OUT) {
            cr_inputs_poison(B->p[p], prm->dtype, L->numel[p]);
        } else {
            cr_rng_t rng;
            cr_rng_seed(&rng, j->seed, (uint32_t)L->c, set, (uint32_t)p);
            cr_inputs_fill(B->p[p], prm->dtype, L->numel[p], &prm->init, &rng);
        }
    }
}

/* Copies the params in mask from src to dst (both allocated for them). */
static void s_copy(const cr_task_t *t, const s_layout_t *L, unsigned mask, s_bufs_t *dst,
                   const s_bufs_t *src)
{
    for (int p = 0; p < t->nparams; p++)
        if (s_is_buf(&t->params[p]) && (mask & (1u << t->params[p].role)) && dst->p[p] &&
            src->p[p])
            memcpy(dst->p[p], src->p[p], L->bytes[p]);
}

static void s_poison_out(const cr_task_t *t, const s_layout_t *L, s_bufs_t *B)
{
    for (int p = 0; p < t->nparams; p++)
        if (t->params[p].role == CR_ROLE_OUT && B->p[p])
            cr_inputs_poison(B->p[p], t->params[p].dtype, L->numel[p]);
}

/* One call of B's executor on B's buffers and L's values: a buffer
 * argument names its arena and offset, a value is sent in its C type. us
 * (may be NULL) gets the judge's time of the call; *fp (may be NULL) whether
 * the executor says the call left the FP state changed (why says how).
 * Returns 0, or CR_E_EXEC when the executor stopped serving (its fault). */
static int s_call(const cr_task_t *t, const s_layout_t *L, const s_bufs_t *B, double *us,
                  int *fp, char *why, size_t whylen)
{
    cr_exec_arg_t a[S_NP];
    for (int p = 0; p < t->nparams; p++) {
        if (s_is_buf(&t->params[p])) {
            if (cr_exec_arg_ptr(B->x, B->p[p], &a[p]) != 0)
                return -EINVAL; /* only a judge bug puts a heap buffer here */
        } else {
            memset(&a[p], 0, sizeof a[p]);
            a[p].kind = CR_EXEC_ARG_VALUE;
            memcpy(a[p].val, L->val[p], sizeof a[p].val);
        }
    }
    return cr_exec_call(B->x, a, (unsigned)t->nparams, us, fp, why, whylen);
}

/* ---------------------------------------------------------------- checks */

/* Elements of an out buffer still holding poison where the reference wrote
 * something else. An element whose correct value is the poison pattern
 * itself (possible for 8-bit integers) is not "unwritten": if left alone it
 * is still right. */
static size_t s_unwritten(const void *cand, const void *ref, cr_dtype_t d, size_t n,
                          int64_t *first)
{
    *first = -1;
    if (cr_inputs_count_poison(cand, d, n, NULL) == 0)
        return 0;
    size_t es = cr_dtype_size(d), count = 0;
    for (size_t i = 0; i < n; i++) {
        const char *a = (const char *)cand + i * es, *r = (const char *)ref + i * es;
        if (cr_inputs_count_poison(a, d, 1, NULL) && !cr_inputs_count_poison(r, d, 1, NULL)) {
            if (*first < 0)
                *first = (int64_t)i;
            count++;
        }
    }
    return count;
}

void cr_judge_compare_outputs(const cr_task_t *t, void *const *cand, void *const *exp,
                              const size_t *numel, cr_judge_check_t *k)
{
    k->all_written = 1;
    k->mismatches = 0;
    k->max_abs = k->max_rel = 0;
    k->first_bad = -1;
    k->msg[0] = '\0';
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (prm->role != CR_ROLE_OUT && prm->role != CR_ROLE_INOUT)
            continue;
        if (prm->role == CR_ROLE_OUT) {
            int64_t first;
            size_t nu = s_unwritten(cand[p], exp[p], prm->dtype, numel[p], &first);
            if (nu) {
                k->all_written = 0;
                if (!k->msg[0])
                    snprintf(k->msg, sizeof k->msg,
                             "output '%s': %zu of %zu elements never written (first at [%lld])",
                             prm->name, nu, numel[p], (long long)first);
            }
        }
        double ma = 0, mr = 0;
        int64_t fb = -1;
        uint64_t bad = cr_inputs_compare(cand[p], exp[p], prm->dtype, numel[p], t->atol, t->rtol,
                                         &ma, &mr, &fb);
        k->max_abs = fmax(k->max_abs, ma);
        k->max_rel = fmax(k->max_rel, mr);
        if (bad && k->first_bad < 0) {
            k->first_bad = fb;
            if (!k->msg[0])
                snprintf(k->msg, sizeof k->msg,
                         "output '%s': %llu of %zu elements differ; first at [%lld]: got %.9g, "
                         "expected %.9g (atol %g, rtol %g)",
                         prm->name, (unsigned long long)bad, numel[p], (long long)fb,
                         cr_inputs_get(cand[p], prm->dtype, (size_t)fb),
                         cr_inputs_get(exp[p], prm->dtype, (size_t)fb), t->atol, t->rtol);
        }
        k->mismatches += bad;
    }
}

static void s_hash_inputs(const cr_task_t *t, const s_layout_t *L, const s_bufs_t *B,
                          uint64_t *h)
{
    for (int p = 0; p < t->nparams; p++)
        h[p] = t->params[p].role == CR_ROLE_IN ? cr_hash64(B->p[p], L->bytes[p]) : 0;
}

/* Names the first `in` param whose hash changed, or NULL. */
static const char *s_mutated(const cr_task_t *t, const s_layout_t *L, const s_bufs_t *B,
                             const uint64_t *before)
{
    for (int p = 0; p < t->nparams; p++)
        if (t->params[p].role == CR_ROLE_IN && cr_hash64(B->p[p], L->bytes[p]) != before[p])
            return t->params[p].name;
    return NULL;
}

/* The `in` param of B whose buffer holds the candidate executor's faulting
 * store, when its fault was one (exec.h); NULL otherwise. */
static const char *s_ro_victim(const cr_cpu_judge_t *j, const s_layout_t *L, const s_bufs_t *B)
{
    const unsigned char *a = cr_exec_fault_ptr(j->cand);
    for (int p = 0; a && p < j->task->nparams; p++) {
        const unsigned char *b = B->p[p];
        if (j->task->params[p].role == CR_ROLE_IN && b && a >= b && a < b + L->bytes[p])
            return j->task->params[p].name;
    }
    return a ? "?" : NULL;
}

/* Frees every executor's arena buffers: a new case starts. */
static void s_reset(const cr_cpu_judge_t *j)
{
    cr_exec_reset(j->cand);
    cr_exec_reset(j->ref);
    if (j->base != j->ref)
        cr_exec_reset(j->base);
}

/* One verification run of case L->c on input set `set`: candidate into
 * *cand (allocated here; the caller frees it, so that later runs get new
 * addresses), then the reference in fresh buffers on pristine copies.
 * Returns 0 (result in *k), -ENOMEM, CR_E_TASK when the reference left a
 * float output unwritten (k->msg says where), or CR_E_EXEC when an executor
 * stopped serving (the candidate's or the reference's fault: exec.h). */
static int s_verify_set(const cr_cpu_judge_t *j, s_layout_t *L, uint32_t set, s_bufs_t *cand,
                        cr_judge_check_t *k)
{
    const cr_task_t *t = j->task;
    s_bufs_t pristine = {0}, ref = {0};
    uint64_t hash[S_NP];
    int rc = -ENOMEM;
    memset(k, 0, sizeof *k);
    memset(cand, 0, sizeof *cand);
    if (s_alloc(j->cand, t, L, S_M_ALL, 0, cand) ||
        s_alloc(NULL, t, L, S_M_IN | S_M_INOUT, 1, &pristine))
        goto done;
    s_fill(j, L, set, cand);
    s_copy(t, L, S_M_IN | S_M_INOUT, &pristine, cand);
    s_hash_inputs(t, L, cand, hash);

    /* The executor is frozen again when this returns: what its outputs
     * hold now is its answer, and no thread of it can change them until
     * its next call (exec.h). */
    if ((rc = s_call(t, L, cand, NULL, &k->fp_env, k->why_fp, sizeof k->why_fp)) != 0) {
        const char *victim = rc == CR_E_EXEC ? s_ro_victim(j, L, cand) : NULL;
        if (victim) { /* a verdict, not a failure: the store faulted */
            k->inputs_unchanged = 0;
            k->all_written = 1;
            k->first_bad = -1;
            snprintf(k->msg, sizeof k->msg, "input '%s' was written by the candidate (inputs "
                     "are mapped read-only: the store faulted)", victim);
            rc = 0;
            k->aborted = 1;
        }
        goto done;
    }
    int threads = cr_exec_threads(j->cand);
    k->background = !t->threads_allowed && threads > 1;
    k->handlers = cr_exec_extra_handlers(j->cand);
    const char *mut = s_mutated(t, L, cand, hash);
    k->inputs_unchanged = mut == NULL;

    /* Only now does the reference run, in buffers the candidate never saw,
     * in a process that never loaded the candidate. */
    rc = -ENOMEM;
    if (s_alloc(j->ref, t, L, S_M_ALL, 0, &ref))
        goto done;
    s_copy(t, L, S_M_IN | S_M_INOUT, &ref, &pristine);
    s_poison_out(t, L, &ref);
    if ((rc = s_call(t, L, &ref, NULL, NULL, NULL, 0)) != 0)
        goto done;
    /* A reference that leaves a float output poisoned would make "left
     * alone" match there and the right answer fail: the judge's error, never
     * a verdict (docs/hacks.md #20). Only floats: their poison NaN is no value a
     * computation yields, while 0xA5 bytes are ordinary integers. */
    for (int p = 0; p < t->nparams; p++)
        if (t->params[p].role == CR_ROLE_OUT && cr_dtype_is_float(t->params[p].dtype) &&
            cr_inputs_count_poison(ref.p[p], t->params[p].dtype, L->numel[p], NULL)) {
            snprintf(k->msg, sizeof k->msg, "case %d: the reference left output '%s' partly "
                     "unwritten", L->c, t->params[p].name);
            rc = CR_E_TASK;
            goto done;
        }

    cr_judge_compare_outputs(t, cand->p, ref.p, L->numel, k);
    if (mut) /* the most serious finding leads the message */
        snprintf(k->msg, sizeof k->msg, "input '%s' was modified by the candidate", mut);
    else if (k->fp_env)
        snprintf(k->msg, sizeof k->msg,
                 "the candidate returned with the floating-point environment changed (%s)",
                 k->why_fp);
    rc = 0;
done:
    s_free(&ref);
    s_free(&pristine);
    if (rc != 0 || k->aborted)
        s_free(cand);
    return rc;
}

/* The judge's own failure in s_verify_set, for cr_cpu_judge_verify's err. */
static int s_verify_error(int rc, const cr_judge_check_t *k, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", rc == -ENOMEM    ? "out of memory for the judge's buffers"
                                : rc == CR_E_EXEC ? "an executor stopped serving"
                                                  : k->msg);
    return rc;
}

static int s_passed(const cr_judge_check_t *k)
{
    return k->inputs_unchanged && k->all_written && k->mismatches == 0 && !k->background &&
           !k->handlers &&
           !k->fp_env;
}

int cr_judge_apply_run(Crucible__RewardRecord *rec, int c, const cr_judge_check_t *k,
                       int second)
{
    const char *which = second ? " (second run: new inputs at new addresses)" : "";
    if (k->background) {
        cr_judge_flag(rec, "background_thread");
        if (k->why_bg[0])
            cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "case %d%s: %s", c, which,
                          k->why_bg);
        else
            cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                          "case %d%s: threads still running after the candidate returned, and "
                          "the task does not allow threads", c, which);
    }
    if (k->handlers) {
        int sig = __builtin_ctzll(k->handlers) + 1;
        cr_judge_flag(rec, "signal_handler");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                      "case %d%s: the candidate installed a handler for signal %d (%s): a "
                      "handler runs code outside the call", c, which, sig, strsignal(sig));
    }
    if (k->fp_env) {
        cr_judge_flag(rec, "fp_env_changed");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                      "case %d%s: the candidate returned with the floating-point environment "
                      "changed (%s); the judge restored it", c, which, k->why_fp);
    }
    if (!k->inputs_unchanged) {
        cr_judge_flag(rec, "input_mutated");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "case %d%s: %s", c, which,
                      k->msg);
    }
    if (!k->all_written)
        cr_judge_flag(rec, "output_unwritten");
    if (s_passed(k))
        return 1;
    if (second)
        cr_judge_flag(rec, "second_run_mismatch");
    if (k->msg[0])
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_INCORRECT, "case %d%s: %s", c, which, k->msg);
    return 0;
}

int cr_cpu_judge_verify(const cr_cpu_judge_t *j, Crucible__RewardRecord *rec, char *err,
                        size_t errlen)
{
    const cr_task_t *t = j->task;
    int64_t t0 = cr_time_mono_ns();
    Crucible__VerifyResult *vr = malloc(sizeof *vr);
    if (!vr)
        goto oom;
    crucible__verify_result__init(vr);
    rec->verify = vr;
    vr->cases = calloc((size_t)t->ncases, sizeof *vr->cases);
    if (t->ncases && !vr->cases)
        goto oom;
    vr->ok = 1;
    /* A constructor runs at load: whatever it left is the candidate's too. */
    if (j->load_fp_changed) {
        vr->ok = 0;
        cr_judge_flag(rec, "fp_env_changed");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                      "the floating-point environment was changed when the candidate was "
                      "loaded (%s); the executor restored it", j->load_fp_why);
    }
    for (int c = 0; c < t->ncases; c++) {
        Crucible__CaseResult *cr = malloc(sizeof *cr);
        if (!cr)
            goto oom;
        crucible__case_result__init(cr);
        vr->cases[vr->n_cases++] = cr;
        cr->index = (uint32_t)c;
        s_layout_t L;
        int rc = s_layout(t, c, &L, err, errlen);
        if (rc != 0)
            return rc;
        s_reset(j);
        s_bufs_t first, second;
        cr_judge_check_t k1, k2;
        memset(&k2, 0, sizeof k2);
        if ((rc = s_verify_set(j, &L, 0, &first, &k1)) != 0)
            return s_verify_error(rc, &k1, err, errlen);
        int ok = cr_judge_apply_run(rec, c, &k1, 0) && !k1.aborted;
        cr->inputs_unchanged = k1.inputs_unchanged;
        cr->all_written = k1.all_written;
        cr->max_abs_err = k1.max_abs;
        cr->max_rel_err = k1.max_rel;
        cr->mismatches = k1.mismatches;
        cr->first_bad_index = k1.first_bad;
        if (k1.msg[0] || k1.background)
            cr_judge_set_str(&cr->message, k1.msg[0] ? k1.msg : "threads still running after the call");
        if (ok) {
            /* `first` is still allocated: set 1 lands at different addresses. */
            int rc2 = s_verify_set(j, &L, 1, &second, &k2);
            s_free(&first);
            if (rc2 != 0)
                return s_verify_error(rc2, &k2, err, errlen);
            s_free(&second);
            ok = cr_judge_apply_run(rec, c, &k2, 1);
            cr->second_run_passed = ok;
            cr->max_abs_err = fmax(cr->max_abs_err, k2.max_abs);
            cr->max_rel_err = fmax(cr->max_rel_err, k2.max_rel);
            if (!ok) {
                cr->inputs_unchanged = k2.inputs_unchanged;
                cr->all_written = k2.all_written;
                cr->mismatches = k2.mismatches;
                cr->first_bad_index = k2.first_bad;
                char m[600];
                snprintf(m, sizeof m, "second run: %s",
                         k2.msg[0] ? k2.msg : "threads still running after the call");
                cr_judge_set_str(&cr->message, m);
            }
        } else {
            s_free(&first);
        }
        cr->passed = ok;
        vr->ok &= ok;
        cr_debug("case %d: %s", c, ok ? "passed" : cr->message);
        if (k1.aborted || k2.aborted)
            break; /* its executor is gone: the verdict is in */
    }
    vr->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
    return 0;
oom:
    snprintf(err, errlen, "out of memory for the judge's buffers");
    return -ENOMEM;
}

/* ---------------------------------------------------------------- timing */

/* Writes every byte of the flush buffer. The empty asm that "reads" it
 * keeps the compiler from dropping the stores as dead. */
static void s_flush(unsigned char *buf, size_t n, unsigned k)
{
    memset(buf, (int)(k & 0xff), n);
    __asm__ __volatile__("" : : "r"(buf) : "memory");
}

/* Writes back and invalidates every cache line of the call's buffers, from
 * every cache level: preparing a sample (copying inputs in, poisoning
 * outputs) has just made them hot. */
static void s_evict(const cr_task_t *t, const s_layout_t *L, const s_bufs_t *B)
{
#if defined(__x86_64__) || defined(__aarch64__)
    for (int p = 0; p < t->nparams; p++) {
        if (!B->p[p])
            continue;
        const char *c = B->p[p], *end = c + L->bytes[p];
        for (; c < end; c += S_ALIGN) {
#if defined(__x86_64__)
            __builtin_ia32_clflush(c);
#else
            __asm__ __volatile__("dc civac, %0" : : "r"(c) : "memory");
#endif
        }
    }
#if defined(__x86_64__)
    __builtin_ia32_mfence();
#else
    __asm__ __volatile__("dsb ish" : : : "memory");
#endif
#else
    (void)t, (void)L, (void)B; /* elsewhere the flush buffer alone evicts them */
#endif
}

typedef struct {
    int nsets;                 /* data sets = candidate slots */
    s_bufs_t data[S_POOL_MAX]; /* in/inout source values of each set; sealed */
    s_bufs_t slot[S_POOL_MAX]; /* candidate buffers; set i%N runs in slot (i%N + i/N)%N */
    s_bufs_t cur;              /* this call's in/inout: a set, perturbed (s_sample); sealed
                                  whenever candidate code runs */
    s_bufs_t side;             /* the reference/baseline's buffers */
    s_bufs_t chk;              /* the reference's answer for a verified call, when side
                                  does not hold it */
    cr_rng_t perturb;          /* draws every call's perturbation */
} s_pool_t;

static void s_pool_free(s_pool_t *pool)
{
    for (int s = 0; s < S_POOL_MAX; s++) {
        s_free(&pool->data[s]);
        s_free(&pool->slot[s]);
    }
    s_free(&pool->cur);
    s_free(&pool->side);
    s_free(&pool->chk);
}

/* Loads this call's inputs (pool->cur) into B and poisons its outputs. */
static void s_load(const cr_task_t *t, const s_layout_t *L, const s_pool_t *pool, s_bufs_t *B)
{
    s_copy(t, L, S_M_IN | S_M_INOUT, B, &pool->cur);
    s_poison_out(t, L, B);
}

/* Makes the inputs of the next call: data set s with one element in every
 * S_PERTURB_MIN.. S_PERTURB_MIN+S_PERTURB_SPAN-1 of each in/inout param
 * redrawn from the param's own distribution, into pool->cur; then loads
 * them into B. Untimed. No two calls see the same inputs, so nothing the
 * candidate remembered from an earlier call is the answer to this one, and
 * no reference output for them exists anywhere before the candidate returns
 * (docs/hacks.md #4, #9, #11). */
static void s_sample(const cr_task_t *t, const s_layout_t *L, s_pool_t *pool, int s,
                     s_bufs_t *B)
{
    s_seal(&pool->cur, 0);
    s_copy(t, L, S_M_IN | S_M_INOUT, &pool->cur, &pool->data[s]);
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        size_t n = L->numel[p];
        if (!pool->cur.p[p] || n == 0 || (prm->role != CR_ROLE_IN && prm->role != CR_ROLE_INOUT))
            continue;
        size_t m = S_PERTURB_MIN + cr_rng_next(&pool->perturb) % S_PERTURB_SPAN;
        if (m > n)
            m = n;
        size_t es = cr_dtype_size(prm->dtype);
        for (size_t i = cr_rng_next(&pool->perturb) % m; i < n; i += m)
            cr_inputs_fill((char *)pool->cur.p[p] + i * es, prm->dtype, 1, &prm->init,
                           &pool->perturb);
    }
    s_seal(&pool->cur, 1);
    s_load(t, L, pool, B);
}

/* Data sets (= candidate slots) of a case's timing pool. */
static int s_pool_sets(const s_layout_t *L)
{
    /* Per set: the data + a candidate slot, at most twice the case. */
    uint64_t per = 2 * (uint64_t)L->total + 1;
    uint64_t n = S_POOL_BYTES / per;
    return n < S_POOL_MIN ? S_POOL_MIN : n > S_POOL_MAX ? S_POOL_MAX : (int)n;
}

int cr_cpu_judge_arenas(const cr_task_t *t, int role, size_t *ro, size_t *rw)
{
    *ro = *rw = 0;
    for (int c = 0; c < t->ncases; c++) {
        s_layout_t L;
        char err[160];
        if (s_layout(t, c, &L, err, sizeof err) != 0)
            return CR_E_TASK;
        int bench = 0;
        for (int b = 0; b < t->nbench; b++)
            bench |= t->bench[b] == c;
        /* sets alive at once: verification keeps two; timing a pool's
         * slots (candidate), side and check (reference), side (baseline) */
        int sets = role == CR_JUDGE_ROLE_BASELINE ? 1 : 2;
        if (role == CR_JUDGE_ROLE_CANDIDATE && bench && s_pool_sets(&L) > sets)
            sets = s_pool_sets(&L);
        size_t in = 0, out = 0;
        for (int p = 0; p < t->nparams; p++) {
            if (!s_is_buf(&t->params[p]))
                continue;
            size_t b = (L.bytes[p] + S_ALIGN - 1) / S_ALIGN * S_ALIGN + S_ALIGN;
            *(t->params[p].role == CR_ROLE_IN ? &in : &out) += b;
        }
        if (in * (size_t)sets > *ro)
            *ro = in * (size_t)sets;
        if (out * (size_t)sets > *rw)
            *rw = out * (size_t)sets;
    }
    return 0;
}

static int s_pool_make(const cr_cpu_judge_t *j, s_layout_t *L, s_pool_t *pool)
{
    const cr_task_t *t = j->task;
    memset(pool, 0, sizeof *pool);
    pool->nsets = s_pool_sets(L);
    if (s_alloc(j->base, t, L, S_M_ALL, 0, &pool->side) ||
        s_alloc(j->ref, t, L, S_M_ALL, 0, &pool->chk) ||
        s_alloc(NULL, t, L, S_M_IN | S_M_INOUT, 1, &pool->cur))
        return -ENOMEM;
    cr_rng_seed(&pool->perturb, j->seed, (uint32_t)L->c, S_SET_PERTURB, 0);
    for (int s = 0; s < pool->nsets; s++) {
        if (s_alloc(NULL, t, L, S_M_IN | S_M_INOUT, 1, &pool->data[s]) ||
            s_alloc(j->cand, t, L, S_M_ALL, 0, &pool->slot[s]))
            return -ENOMEM;
        s_fill(j, L, S_SET_POOL + (uint32_t)s, &pool->data[s]);
        s_seal(&pool->data[s], 1); /* from here on only read */
    }
    return 0;
}

/* Why a timed call failed. */
enum { S_TIMED_OK, S_TIMED_WRONG, S_TIMED_MUTATED, S_TIMED_FP, S_TIMED_EXEC };

/* Checks the candidate's output of the current call (pool->cur's inputs),
 * held in slot B. fresh: pool->side holds the reference's answer for these
 * inputs (the reference was the B side of this sample); otherwise the
 * reference runs now, untimed, into pool->chk. Returns S_TIMED_OK, or
 * S_TIMED_MUTATED / S_TIMED_WRONG with the reason in msg, or S_TIMED_EXEC
 * when the reference's executor stopped serving. */
static int s_check_timed(const cr_cpu_judge_t *j, s_layout_t *L, s_pool_t *pool,
                         const s_bufs_t *B, int fresh, char *msg, size_t msglen)
{
    const cr_task_t *t = j->task;
    for (int p = 0; p < t->nparams; p++) {
        if (t->params[p].role == CR_ROLE_IN && memcmp(B->p[p], pool->cur.p[p], L->bytes[p])) {
            snprintf(msg, msglen, "input '%s' was modified by the candidate during timing",
                     t->params[p].name);
            return S_TIMED_MUTATED;
        }
    }
    const s_bufs_t *exp = &pool->side;
    if (!fresh) {
        s_load(t, L, pool, &pool->chk);
        if (s_call(t, L, &pool->chk, NULL, NULL, NULL, 0) != 0)
            return S_TIMED_EXEC;
        exp = &pool->chk;
    }
    cr_judge_check_t k;
    cr_judge_compare_outputs(t, B->p, exp->p, L->numel, &k);
    if (k.all_written && k.mismatches == 0)
        return S_TIMED_OK;
    snprintf(msg, msglen, "timed run: %s", k.msg);
    return S_TIMED_WRONG;
}

typedef struct {
    double *a, *b;        /* samples, us: candidate, reference/baseline */
    size_t na, nb;
    unsigned verified;    /* timed candidate outputs re-verified */
    int failed;           /* S_TIMED_*: why a timed call failed; 0 = none did */
    int fault_k;          /* the slot of the last candidate call started */
} s_samples_t;

/* One candidate call in slot B, with the executor's FP report. Returns
 * S_TIMED_OK, S_TIMED_FP (msg says how) or S_TIMED_EXEC. us (may be NULL)
 * gets the call's time. */
static int s_cand_call(const cr_task_t *t, const s_layout_t *L, const s_bufs_t *B, double *us,
                       char *msg, size_t msglen)
{
    int fp = 0;
    char why[160] = "";
    if (s_call(t, L, B, us, &fp, why, sizeof why) != 0)
        return S_TIMED_EXEC;
    if (!fp)
        return S_TIMED_OK;
    snprintf(msg, msglen,
             "a timed call returned with the floating-point environment changed (%s); the "
             "executor restored it", why);
    return S_TIMED_FP;
}

/* Warm-up then the A B A B loop for one case; with a cached reference (the
 * `cached` policy) only A is timed, only its RSE stops the loop, and the
 * loop gets the candidate's share of the budget (CR_JUDGE_CACHED_BUDGET_SHARE).
 * The warm-up still runs both: it is bounded by time, so the reference costs
 * nothing there, and the caches see the same mix as ever. Every call gets
 * inputs of its own (s_sample); B runs on A's inputs, so with no baseline its
 * output is the expected answer of a verified sample. Returns 0 (even when a
 * timed call fails: see S->failed and the record), -ENOMEM, or CR_E_EXEC
 * when an executor stopped serving. */
static int s_measure(const cr_cpu_judge_t *j, s_layout_t *L, s_pool_t *pool,
                     Crucible__RewardRecord *rec, s_samples_t *S)
{
    const cr_task_t *t = j->task;
    uint64_t llc = j->llc_bytes < S_FLUSH_LLC_MAX ? j->llc_bytes : S_FLUSH_LLC_MAX;
    size_t flush_n = 2 * llc < S_FLUSH_MIN ? S_FLUSH_MIN : (size_t)(2 * llc);
    unsigned char *flush = NULL;
    size_t flush_sz;
    if (s_buf_alloc((void **)&flush, flush_n, 0, &flush_sz) != 0)
        return -ENOMEM;
    s_flush(flush, flush_n, 0xff); /* fault it in before anything is timed */
    cr_rng_t pick;
    cr_rng_seed(&pick, j->seed, (uint32_t)L->c, S_SET_SAMPLING, 0);
    double budget = j->time_budget_s;
    int N = pool->nsets;
    int cached = j->cached_ref_us != NULL;
    char msg[600] = "";

    /* Warm-up: S_WARMUP_CALLS calls and ~S_WARMUP_S of wall time per side
     * (at most a quarter of the budget), or the whole budget for a very slow
     * call. Wall time, preparation included: that is what the clock sees. */
    double warm_s = 2 * fmin(S_WARMUP_S, budget / 4);
    int calls = 0;
    int64_t w0 = cr_time_mono_ns();
    for (;;) {
        double el = (double)(cr_time_mono_ns() - w0) / 1e9;
        if ((calls >= S_WARMUP_CALLS && el >= warm_s) || (calls >= 1 && el >= budget))
            break;
        int s = calls % N;
        s_sample(t, L, pool, s, &pool->slot[s]);
        S->fault_k = s;
        if ((S->failed = s_cand_call(t, L, &pool->slot[s], NULL, msg, sizeof msg)) != 0)
            break;
        s_load(t, L, pool, &pool->side);
        if (s_call(t, L, &pool->side, NULL, NULL, NULL, 0) != 0) {
            S->failed = S_TIMED_EXEC;
            break;
        }
        calls++;
    }

    cr_debug("case %d: warm-up %d calls in %.3f s; flushing %zu bytes per sample", L->c, calls,
             (double)(cr_time_mono_ns() - w0) / 1e9, flush_n);
    if (cached)
        budget *= CR_JUDGE_CACHED_BUDGET_SHARE;
    cr_stats_online_t oa = {0}, ob = {0};
    int64_t t0 = cr_time_mono_ns();
    int last_k = -1, last_verified = 0, last_fresh = 0;
    for (size_t i = 0; !S->failed && i < CR_JUDGE_MAX_SAMPLES; i++) {
        int s = (int)(i % (size_t)N), k = (int)((i % (size_t)N + i / (size_t)N) % (size_t)N);
        /* The first sample runs in the slot warm-up used first, so a cache
         * keyed by pointer returns a stale answer there even when the budget
         * ends the loop before a second pass: it is always checked too. */
        int verify = cr_rng_next(&pick) % S_VERIFY_ONE_IN == 0 || i == 0;

        /* A: the candidate. */
        s_sample(t, L, pool, s, &pool->slot[k]);
        S->fault_k = k;
        s_evict(t, L, &pool->slot[k]);
        s_flush(flush, flush_n, (unsigned)(2 * i));
        double us = 0;
        if ((S->failed = s_cand_call(t, L, &pool->slot[k], &us, msg, sizeof msg)) != 0)
            break;
        S->a[S->na++] = us;
        cr_stats_online_push(&oa, us);

        /* B: the reference (or baseline), same inputs, same state of the caches. */
        int fresh = 0;
        if (!cached) {
            s_load(t, L, pool, &pool->side);
            s_evict(t, L, &pool->side);
            s_flush(flush, flush_n, (unsigned)(2 * i + 1));
            double ub = 0;
            if (s_call(t, L, &pool->side, &ub, NULL, NULL, 0) != 0) {
                S->failed = S_TIMED_EXEC;
                break;
            }
            S->b[S->nb++] = ub;
            cr_stats_online_push(&ob, ub);
            fresh = j->base == j->ref;
        }
        last_k = k, last_verified = verify, last_fresh = fresh;
        if (verify) {
            S->verified++;
            if ((S->failed = s_check_timed(j, L, pool, &pool->slot[k], fresh, msg, sizeof msg)))
                break;
        }

        double el = (double)(cr_time_mono_ns() - t0) / 1e9;
        int enough = S->na >= CR_JUDGE_MIN_SAMPLES && (cached || S->nb >= CR_JUDGE_MIN_SAMPLES);
        if (enough && cr_stats_online_rse(&oa) < j->rse_target &&
            (cached || cr_stats_online_rse(&ob) < j->rse_target))
            break;
        if ((enough && el >= budget) || el >= S_HARD_CAP * budget)
            break;
    }
    /* The last timed output is always checked (pool->cur still holds its inputs). */
    if (!S->failed && last_k >= 0 && !last_verified) {
        S->verified++;
        S->failed = s_check_timed(j, L, pool, &pool->slot[last_k], last_fresh, msg, sizeof msg);
    }
    if (S->failed == S_TIMED_EXEC && cr_exec_fault_ptr(j->cand)) {
        /* the candidate's store into a read-only input faulted */
        snprintf(msg, sizeof msg, "input '%s' was written by the candidate during timing "
                 "(inputs are mapped read-only: the store faulted)",
                 s_ro_victim(j, L, &pool->slot[S->fault_k]));
        S->failed = S_TIMED_MUTATED;
    }
    if (S->failed == S_TIMED_EXEC) {
        free(flush);
        return CR_E_EXEC; /* the caller gives the executor's verdict */
    }
    if (S->failed) {
        int hack = S->failed != S_TIMED_WRONG;
        cr_judge_flag(rec, S->failed == S_TIMED_MUTATED ? "input_mutated"
                           : S->failed == S_TIMED_FP    ? "fp_env_changed"
                                                        : "timed_output_mismatch");
        cr_judge_fail(rec,
                      hack ? CRUCIBLE__STATUS__STATUS_HACK_DETECTED
                           : CRUCIBLE__STATUS__STATUS_INCORRECT,
                      "case %d: %s", L->c, msg);
    }
    free(flush);
    return 0;
}

/* Summarises bench case c (the b-th bench case) into br. A cached reference
 * median stands in for the measured side as an exact value, so the speedup's
 * interval is the candidate's median interval alone. */
static void s_fill_bench(const cr_cpu_judge_t *j, int b_i, Crucible__BenchResult *br, int c,
                         const s_samples_t *S)
{
    cr_stats_t a, b;
    br->case_index = (uint32_t)c;
    br->verified_samples = S->verified;
    /* Roofline floor (roofline.h): the case's bytes at CR_JUDGE_HOST_BW_MARGIN
     * times the host's copy bandwidth and its flops at the host's peak, per
     * core the task may use. */
    double bytes = 0, flops = 0;
    cr_task_bytes(j->task, c, &bytes);
    cr_task_flops(j->task, c, &flops);
    br->floor_us = cr_judge_host_floor_us(bytes, flops, j->host_copy_bw,
                                          j->task->threads_allowed ? j->ncpu : 1);
    if (j->cached_ref_us) {
        memset(&b, 0, sizeof b);
        b.n = 1;
        b.median = b.med_lo = b.med_hi = j->cached_ref_us[b_i];
        b.rse = j->cached_ref_rse ? j->cached_ref_rse[b_i] : 0;
    }
    if (cr_stats_compute(S->a, S->na, &a) != 0 ||
        (!j->cached_ref_us && cr_stats_compute(S->b, S->nb, &b) != 0))
        return;
    br->samples = (uint32_t)a.n;
    br->median_us = a.median;
    br->mean_us = a.mean;
    br->min_us = a.min;
    br->iqr_us = a.iqr;
    br->rse = a.rse;
    br->wall_median_us = a.median; /* on the CPU the timer is the wall clock */
    br->raw_median_us = a.median;  /* no periodic-stall adjustment on the CPU */
    br->ref_samples = j->cached_ref_us ? 0 : (uint32_t)b.n; /* 0: none timed in this run */
    br->ref_median_us = b.median;
    br->ref_min_us = j->cached_ref_us ? 0 : b.min;
    br->ref_rse = b.rse;
    cr_stats_speedup(&a, &b, &br->speedup, &br->speedup_lo, &br->speedup_hi);
}

int cr_cpu_judge_time(const cr_cpu_judge_t *j, Crucible__RewardRecord *rec, char *err,
                      size_t errlen)
{
    const cr_task_t *t = j->task;
    int64_t t0 = cr_time_mono_ns();
    int rc = 0;
    s_pool_t *pool = NULL;
    s_samples_t S = {0};
    Crucible__ProfileResult *pr = malloc(sizeof *pr);
    if (!pr)
        goto oom;
    crucible__profile_result__init(pr);
    rec->profile = pr;
    pr->cache_flushed = 1;
    cr_judge_set_str(&pr->clock_policy, "observe");
    cr_judge_set_str(&pr->ref_policy, j->cached_ref_us ? "cached" : "interleaved");
    pr->cases = calloc((size_t)t->nbench, sizeof *pr->cases);
    pool = malloc(sizeof *pool);
    S.a = malloc(CR_JUDGE_MAX_SAMPLES * sizeof *S.a);
    S.b = malloc(CR_JUDGE_MAX_SAMPLES * sizeof *S.b);
    if ((t->nbench && !pr->cases) || !pool || !S.a || !S.b)
        goto oom;
    memset(pool, 0, sizeof *pool);
    /* The executor pinned itself to the timing core; the judge, which
     * flushes, spins and checks, keeps off it. */
    int pin = j->judge_cpu >= 0 ? cr_topo_pin_self(j->judge_cpu) : 0;
    if (pin != 0)
        cr_warn("could not pin the judge to cpu %d: %s", j->judge_cpu, cr_strerror(pin));

    double logsum = 0;
    int nsp = 0;
    for (int b = 0; b < t->nbench; b++) {
        int c = t->bench[b];
        s_layout_t L;
        if ((rc = s_layout(t, c, &L, err, errlen)) != 0)
            goto done;
        s_reset(j);
        Crucible__BenchResult *br = malloc(sizeof *br);
        if (!br)
            goto oom;
        crucible__bench_result__init(br);
        pr->cases[pr->n_cases++] = br;
        S.na = S.nb = 0;
        S.verified = 0;
        S.failed = 0;
        int64_t tp = cr_time_mono_ns();
        if (s_pool_make(j, &L, pool) != 0)
            goto oom;
        cr_debug("case %d: pool of %d sets (%zu bytes each) made in %.3f s", c, pool->nsets,
                 L.total, (double)(cr_time_mono_ns() - tp) / 1e9);
        if ((rc = s_measure(j, &L, pool, rec, &S)) != 0) {
            if (rc == -ENOMEM)
                goto oom;
            snprintf(err, errlen, "an executor stopped serving");
            goto done;
        }
        s_pool_free(pool);
        s_fill_bench(j, b, br, c, &S);
        cr_debug("case %d: %u samples, median %.3f us vs %.3f us, speedup %.3f", c, br->samples,
                 br->median_us, br->ref_median_us, br->speedup);
        if (S.failed)
            break;
        char basis[200];
        double bytes = 0, flops = 0;
        cr_task_bytes(t, c, &bytes);
        cr_task_flops(t, c, &flops);
        cr_judge_host_basis(basis, sizeof basis, bytes, flops, j->host_copy_bw,
                            t->threads_allowed ? j->ncpu : 1);
        if (br->samples > 0 && cr_judge_roofline(rec, c, br->median_us, br->floor_us, basis,
                                                 "machine"))
            break;
        if (br->speedup > 0) {
            logsum += log(br->speedup);
            nsp++;
        }
    }
    pr->speedup_geomean = nsp ? exp(logsum / nsp) : 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory for the timing pool");
    rc = -ENOMEM;
done:
    if (pool) {
        s_pool_free(pool);
        free(pool);
    }
    free(S.a);
    free(S.b);
    if (pr)
        pr->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
    return rc;
}
