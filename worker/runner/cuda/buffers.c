/* buffers.c — the CUDA judge's buffers (see cuda_int.h): case layouts, the
 * device arena (§9), buffers placed at random offsets (§5), inputs drawn
 * and outputs poisoned on the device, and the input hashes (§6). */
#include "cuda_int.h"

#define S_JITTER (2ull << 20)      /* slack per buffer for random placement: a large page */
#define S_ROOM_MAX (256ull << 20)  /* timing slots: up to 3x the buffer, at most this */
#define S_ALIGN 256                /* offsets keep cudaMalloc's alignment guarantee */
#define S_ARENA_GAPS 16            /* random gap of 0-15 grains before each case */

int cr__cuda_is_buf(const cr_param_t *prm)
{
    return prm->role == CR_ROLE_IN || prm->role == CR_ROLE_OUT || prm->role == CR_ROLE_INOUT;
}

int cr__cuda_is_out(const cr_param_t *prm)
{
    return prm->role == CR_ROLE_OUT || prm->role == CR_ROLE_INOUT;
}

unsigned cr__cuda_grid(const cr__cuda_judge_t *J, size_t n)
{
    size_t b = (n + CR_CUDA_THREADS - 1) / CR_CUDA_THREADS;
    size_t cap = (size_t)(J->d.sms > 0 ? J->d.sms : 1) * 16;
    return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

/* Case layout; a shape that does not evaluate is INVALID_TASK (the parser
 * checked every case, so this is a judge bug rather than an input error). */
int cr__cuda_layout(cr__cuda_judge_t *J, int c, cr__cuda_layout_t *L)
{
    const cr_task_t *t = J->t;
    memset(L, 0, sizeof *L);
    L->c = c;
    L->rank = J->rank;
    L->parts = 1;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!cr__cuda_is_buf(prm)) {
            /* The shim reads `*(T *)args[p]`: floats in their type; integers
             * as int64, whose low bytes are the narrower type on LE. The
             * rank is this judge's (docs/multigpu.md); a comm's value is the
             * executor's own (CR_EXEC_ARG_COMM). */
            int64_t rank = J->rank;
            if (prm->role == CR_ROLE_SCALAR && cr_dtype_is_float(prm->dtype))
                cr_inputs_set(L->val[p], prm->dtype, 0, t->cases[c].fval[p]);
            else if (prm->role == CR_ROLE_RANK)
                memcpy(L->val[p], &rank, sizeof rank);
            else if (prm->role != CR_ROLE_COMM)
                memcpy(L->val[p], &t->cases[c].ival[p], sizeof(int64_t));
            continue;
        }
        int64_t n = 0;
        if (cr_task_numel(t, c, p, &n) != 0 || n < 0) {
            cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                          "case %d: %s: shape does not evaluate", c, prm->name);
            return -1;
        }
        L->numel[p] = (size_t)n;
        L->bytes[p] = (size_t)n * cr_dtype_size(prm->dtype);
        if (cr__cuda_is_out(prm))
            L->out_bytes += L->bytes[p];
    }
    return 0;
}

/* The layout of the whole a multi-GPU reference computes (docs/multigpu.md):
 * every buffer the ranks' buffers one after another, the rank -1. */
void cr__cuda_layout_whole(const cr__cuda_judge_t *J, cr__cuda_layout_t *L)
{
    const int n = J->nranks > 1 ? J->nranks : 1;
    L->parts = n;
    L->out_bytes *= (size_t)n;
    for (int p = 0; p < J->t->nparams; p++) {
        L->numel[p] *= (size_t)n;
        L->bytes[p] *= (size_t)n;
        if (J->t->params[p].role == CR_ROLE_RANK) {
            int64_t whole = -1;
            memcpy(L->val[p], &whole, sizeof whole);
        }
    }
}

/* Rank r's copy of the (per-rank) layout L: its rank's input keys and rank value. */
void cr__cuda_layout_rank(const cr__cuda_judge_t *J, const cr__cuda_layout_t *L, int r,
                          cr__cuda_layout_t *out)
{
    *out = *L;
    out->rank = r;
    if (J->t->rank_param >= 0) {
        int64_t v = r;
        memcpy(out->val[J->t->rank_param], &v, sizeof v);
    }
}

/* The arena whose buffers who (CR_CUDA_CAND, _REF, _BASE) is called on;
 * -1: the judge's own buffers. */
int cr__cuda_arena_of(int who)
{
    return who == CR_CUDA_CAND ? CR_CUDA_AR_CAND
           : who == CR_CUDA_REF || who == CR_CUDA_BASE ? CR_CUDA_AR_REF
                                                        : CR_CUDA_AR_JUDGE;
}

/* §9: sz bytes of arena a, CR_CUDA_ARENA_GRAIN-aligned, or NULL when it is
 * full. */
static void *s_arena_take(cr__cuda_judge_t *J, int a, size_t sz)
{
    cr__cuda_arena_t *A = &J->d.ar[a];
    sz = (sz + CR_CUDA_ARENA_GRAIN - 1) / CR_CUDA_ARENA_GRAIN * CR_CUDA_ARENA_GRAIN;
    if (!A->base || sz > A->bytes - A->top)
        return NULL;
    void *p = A->base + A->top;
    A->top += sz;
    return p;
}

/* Everything taken from the arenas after this call goes back with
 * cr__cuda_arena_release(J, &mark); a random gap first in each, so that the
 * next case's buffers do not start where this one's did. */
cr__cuda_mark_t cr__cuda_arena_mark(cr__cuda_judge_t *J)
{
    cr__cuda_mark_t m;
    memset(&m, 0, sizeof m);
    m.nranks = J->nranks;
    for (int r = 0; r < J->nranks || r == 0; r++) { /* every rank's GPU (docs/multigpu.md) */
        cr__cuda_judge_t *R = cr__cuda_rank(J, r);
        for (int a = 0; a < CR_CUDA_AR_N; a++) {
            cr__cuda_arena_t *A = &R->d.ar[a];
            if (r == 0)
                m.top[a] = A->top;
            else
                m.rtop[r][a] = A->top;
            size_t gap = (size_t)(cr_rng_next(&J->place) % S_ARENA_GAPS) * CR_CUDA_ARENA_GRAIN;
            A->top = gap <= A->bytes - A->top ? A->top + gap : A->bytes;
        }
    }
    return m;
}

void cr__cuda_arena_release(cr__cuda_judge_t *J, const cr__cuda_mark_t *mark)
{
    for (int a = 0; a < CR_CUDA_AR_N; a++)
        J->d.ar[a].top = mark->top[a];
    for (int r = 1; r < mark->nranks && r < J->nranks; r++)
        for (int a = 0; a < CR_CUDA_AR_N; a++)
            J->rk[r]->d.ar[a].top = mark->rtop[r][a];
}

/* One buffer of sz bytes in arena a. The judge's own may come from
 * cudaMalloc (*own = 1) when its arena is full; an executor's cannot: the
 * executor sees only what its arena's handle maps. */
cudaError_t cr__cuda_buf_get(cr__cuda_judge_t *J, int a, size_t sz, void **base,
                             unsigned char *own)
{
    *own = 0;
    if ((*base = s_arena_take(J, a, sz)))
        return cudaSuccess;
    if (a != CR_CUDA_AR_JUDGE)
        return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMalloc(base, sz);
    if (e != cudaSuccess)
        *base = NULL;
    *own = e == cudaSuccess;
    return e;
}

static void s_do_free(cr__cuda_judge_t *J, cr__cuda_bufs_t *B)
{
    if (B->ranks) { /* each rank's on its own GPU */
        for (int r = 1; r < J->nranks; r++) {
            cr__cuda_on(J->rk[r]);
            s_do_free(J->rk[r], &B->ranks[r - 1]);
        }
        cr__cuda_on(J);
        free(B->ranks);
        B->ranks = NULL;
    }
    for (int p = 0; p < CR_CUDA_NP; p++) {
        if (B->base[p] && B->own[p] && !J->dead)
            cudaFree(B->base[p]);
        B->base[p] = B->p[p] = NULL;
        B->room[p] = 0;
        B->own[p] = 0;
    }
}

/* s_do_X does the work; s_X adds its host time to J->step_ns (cr__cuda_step). */
void cr__cuda_free(cr__cuda_judge_t *J, cr__cuda_bufs_t *B)
{
    int64_t t0 = cr_time_mono_ns();
    s_do_free(J, B);
    cr__cuda_step(J, CR_CUDA_ST_FREE, t0, 0);
}

/* Moves every buffer of B to a new random S_ALIGN-aligned offset inside its
 * allocation (§5). */
void cr__cuda_place(cr__cuda_judge_t *J, cr__cuda_bufs_t *B)
{
    for (int r = 1; B->ranks && r < J->nranks; r++)
        cr__cuda_place(J, &B->ranks[r - 1]); /* offsets drawn from the one stream */
    for (int p = 0; p < CR_CUDA_NP; p++)
        if (B->base[p])
            B->p[p] = (char *)B->base[p] +
                      (B->room[p] >= S_ALIGN
                           ? S_ALIGN * (cr_rng_next(&J->place) % (B->room[p] / S_ALIGN + 1))
                           : 0);
}

/* Room for a timing slot's buffer of `bytes`: 3x the buffer (so each call
 * lands on mostly other physical pages), between S_JITTER and S_ROOM_MAX. */
static size_t s_room(size_t bytes)
{
    size_t r = 3 * bytes;
    r = r < S_JITTER ? S_JITTER : r > S_ROOM_MAX ? S_ROOM_MAX : r;
    return (r + S_ALIGN - 1) / S_ALIGN * S_ALIGN;
}

/* One device buffer per buffer param, with S_JITTER bytes of room (so a
 * zero-size buffer is still a distinct pointer, and cr__cuda_place can move it), or
 * s_room()'s with wide. Returns 0, or -1 with an OOM verdict and B empty;
 * with quiet, -1 without a verdict (the caller can do with less). */
static int s_do_alloc(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                      cr__cuda_bufs_t *B, int quiet, int wide)
{
    memset(B, 0, sizeof *B);
    B->arena = cr__cuda_arena_of(who);
    cr__cuda_mark_t top; /* given back if a buffer cannot be had: this judge's own arenas */
    memset(&top, 0, sizeof top);
    for (int a = 0; a < CR_CUDA_AR_N; a++)
        top.top[a] = J->d.ar[a].top;
    for (int p = 0; p < J->t->nparams; p++) {
        if (!cr__cuda_is_buf(&J->t->params[p]))
            continue;
        B->room[p] = wide ? s_room(L->bytes[p]) : S_JITTER;
        size_t sz = L->bytes[p] + B->room[p];
        cudaError_t e = cr__cuda_buf_get(J, B->arena, sz, &B->base[p], &B->own[p]);
        if (e != cudaSuccess) {
            cr__cuda_arena_release(J, &top);
            char what[200];
            snprintf(what, sizeof what, "case %d: %zu bytes for '%s' (the %s executor's "
                     "arena holds %zu MiB)", L->c, sz, J->t->params[p].name,
                     B->arena == CR_CUDA_AR_CAND ? "candidate" : "reference",
                     J->d.ar[B->arena].bytes >> 20);
            cr__cuda_free(J, B);
            if (quiet) {
                cudaGetLastError();
                return -1;
            }
            return cr__cuda_infra(J, e, what);
        }
    }
    cr__cuda_place(J, B);
    return 0;
}

/* With ranks (docs/multigpu.md), the candidate's and the baseline's buffers
 * are every rank's, each in its rank's arena on its GPU (B->ranks); the
 * reference's whole is rank 0's alone. */
static int s_do_alloc_ranks(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                            cr__cuda_bufs_t *B, int quiet, int wide)
{
    int rc = s_do_alloc(J, who, L, B, quiet, wide);
    if (rc != 0 || J->nranks < 2 || who == CR_CUDA_REF)
        return rc;
    B->ranks = (cr__cuda_bufs_t *)calloc((size_t)J->nranks - 1, sizeof *B->ranks);
    if (!B->ranks) {
        s_do_free(J, B);
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cuda judge: out of host memory");
        return -1;
    }
    for (int r = 1; r < J->nranks && rc == 0; r++) {
        cr__cuda_on(J->rk[r]);
        rc = s_do_alloc(J->rk[r], who, L, &B->ranks[r - 1], quiet, wide);
        if (rc != 0 && !quiet)
            cr__cuda_rank_fail(J, r);
    }
    cr__cuda_on(J);
    if (rc != 0)
        s_do_free(J, B);
    return rc;
}

int cr__cuda_alloc_q(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L,
                     cr__cuda_bufs_t *B, int quiet, int wide)
{
    int64_t t0 = cr_time_mono_ns();
    return cr__cuda_step(J, CR_CUDA_ST_ALLOC, t0, s_do_alloc_ranks(J, who, L, B, quiet, wide));
}

int cr__cuda_alloc(cr__cuda_judge_t *J, int who, const cr__cuda_layout_t *L, cr__cuda_bufs_t *B)
{
    return cr__cuda_alloc_q(J, who, L, B, 0, 0);
}

/* in/inout drawn on the device from (seed, case, set, param); out poisoned.
 * Queued on the legacy stream; nothing waits here. */
/* With ranks, a rank's inputs are drawn from (seed, case, set, param + rank x
 * CR_CUDA_NP), so rank 0's are a one-GPU task's and no two ranks share a
 * stream; a whole (L->parts ranks) draws each part from its rank's stream,
 * the same values the rank got (docs/multigpu.md). */
static int s_do_fill(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, uint32_t set,
                     const cr__cuda_bufs_t *B)
{
    const cr_task_t *t = J->t;
    const int parts = L->parts > 1 ? L->parts : 1;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!cr__cuda_is_buf(prm) || !B->p[p] || L->numel[p] == 0)
            continue;
        if (prm->role == CR_ROLE_OUT) {
            unsigned char pat[8] = {0};
            uint64_t v = 0;
            cr_inputs_poison(pat, prm->dtype, 1);
            memcpy(&v, pat, sizeof v);
            cr__cuda_launch_poison(cr__cuda_grid(J, L->numel[p]), B->p[p], L->numel[p],
                                   (int)cr_dtype_size(prm->dtype), v);
            continue;
        }
        const size_t n = L->numel[p] / (size_t)parts, bytes = L->bytes[p] / (size_t)parts;
        for (int q = 0; q < parts; q++) {
            const int rank = parts > 1 ? q : L->rank;
            cr_rng_t rng;
            cr_rng_seed(&rng, J->seed, (uint32_t)L->c, set,
                        (uint32_t)(p + rank * CR_CUDA_NP));
            cr__cuda_gen_t g;
            g.key = rng.s[0] ^ rng.s[1]; /* 64 bits of the BLAKE2b state (§5) */
            g.dtype = prm->dtype;
            g.dist = prm->init.kind;
            g.a = prm->init.a;
            g.b = prm->init.b;
            cr__cuda_launch_gen(cr__cuda_grid(J, cr__cuda_gen_blocks(&g, n)),
                                (char *)B->p[p] + (size_t)q * bytes, n, g);
        }
    }
    return cr__cuda_infra(J, cudaGetLastError(), "input generation launch");
}

int cr__cuda_fill(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, uint32_t set,
                  const cr__cuda_bufs_t *B)
{
    int rc = s_do_fill(J, L, set, B);
    for (int r = 1; rc == 0 && B->ranks && r < J->nranks; r++) {
        cr__cuda_layout_t Lr;
        cr__cuda_layout_rank(J, L, r, &Lr);
        cr__cuda_on(J->rk[r]);
        if ((rc = s_do_fill(J->rk[r], &Lr, set, &B->ranks[r - 1])) != 0)
            cr__cuda_rank_fail(J, r);
    }
    cr__cuda_on(J);
    return rc;
}

/* Queues the hash of every `in` buffer into dscratch[slot * CR_CUDA_NP + p]. */
static int s_hash_queue(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, const cr__cuda_bufs_t *B,
                        int slot)
{
    const cr_task_t *t = J->t;
    unsigned long long *d = J->d.dscratch + (size_t)slot * CR_CUDA_NP;
    cudaMemsetAsync(d, 0, CR_CUDA_NP * sizeof *d, cudaStreamLegacy);
    for (int p = 0; p < t->nparams; p++)
        if (t->params[p].role == CR_ROLE_IN && B->p[p])
            cr__cuda_launch_hash(cr__cuda_grid(J, L->bytes[p] / 4 + 1), B->p[p], L->bytes[p],
                                 J->hash_key, d + p);
    return cr__cuda_infra(J, cudaGetLastError(), "input hash launch");
}

/* ... of every rank's inputs, each into its rank's scratch. */
int cr__cuda_hash_queue(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, const cr__cuda_bufs_t *B,
                        int slot)
{
    int rc = s_hash_queue(J, L, B, slot);
    for (int r = 1; rc == 0 && B->ranks && r < J->nranks; r++) {
        cr__cuda_on(J->rk[r]);
        if ((rc = s_hash_queue(J->rk[r], L, &B->ranks[r - 1], slot)) != 0)
            cr__cuda_rank_fail(J, r);
    }
    cr__cuda_on(J);
    return rc;
}

/* Copies both hash slots back; names the first `in` param that changed
 * (of any rank: a rank's hashes are in its judge's scratch). */
static int s_do_hash_compare_one(cr__cuda_judge_t *J, const char **mutated);
static int s_do_hash_compare(cr__cuda_judge_t *J, const char **mutated)
{
    int rc = s_do_hash_compare_one(J, mutated);
    for (int r = 1; rc == 0 && !*mutated && r < J->nranks; r++) {
        cr__cuda_on(J->rk[r]);
        if ((rc = s_do_hash_compare_one(J->rk[r], mutated)) != 0)
            cr__cuda_rank_fail(J, r);
    }
    cr__cuda_on(J);
    return rc;
}

static int s_do_hash_compare_one(cr__cuda_judge_t *J, const char **mutated)
{
    unsigned long long h[2 * CR_CUDA_NP];
    *mutated = NULL;
    if (cr__cuda_infra(J, cudaMemcpy(h, J->d.dscratch, sizeof h, cudaMemcpyDeviceToHost),
                       "input hash"))
        return -1;
    for (int p = 0; p < J->t->nparams; p++)
        if (J->t->params[p].role == CR_ROLE_IN && h[p] != h[CR_CUDA_NP + p] && !*mutated)
            *mutated = J->t->params[p].name;
    return 0;
}

int cr__cuda_hash_compare(cr__cuda_judge_t *J, const char **mutated)
{
    int64_t t0 = cr_time_mono_ns();
    return cr__cuda_step(J, CR_CUDA_ST_HASH, t0, s_do_hash_compare(J, mutated));
}
