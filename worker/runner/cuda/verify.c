/* verify.c — the CUDA judge's verification (see cuda_int.h; docs/design.md
 * §4 steps 1-3): the candidate first, the reference afterwards in fresh
 * buffers, a second run on new inputs at new addresses, outputs compared on
 * the device. A run's findings are a cr_judge_check_t, shared with the CPU
 * judge, whose comparison rules (cr_judge_compare_outputs) s_cmp_kernel
 * applies on the device, and whose verdict (cr_judge_apply_run) this judge
 * uses as is. */
#include "cuda_int.h"

/* Copies B's out/inout buffers into K (allocated here) on the device: tens
 * of microseconds where a copy to the host takes milliseconds, so checking
 * timed outputs does not eat the sampling time. Returns 0 or -1 with a
 * verdict. */
static int s_do_keep_out(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, const cr__cuda_bufs_t *B,
                         cr__cuda_bufs_t *K)
{
    memset(K, 0, sizeof *K);
    const cr__cuda_mark_t top = {{J->d.ar[0].top, J->d.ar[1].top, J->d.ar[2].top}}; /* given
                                                                    back on failure */
    K->arena = CR_CUDA_AR_JUDGE;
    for (int p = 0; p < J->t->nparams; p++) {
        if (!cr__cuda_is_out(&J->t->params[p]))
            continue;
        cudaError_t e = cr__cuda_buf_get(J, CR_CUDA_AR_JUDGE, L->bytes[p] ? L->bytes[p] : 1,
                                         &K->base[p], &K->own[p]);
        if (e == cudaSuccess) {
            K->p[p] = K->base[p];
            e = cudaMemcpyAsync(K->p[p], B->p[p], L->bytes[p], cudaMemcpyDeviceToDevice,
                                cudaStreamLegacy);
        }
        if (e != cudaSuccess) {
            cr__cuda_arena_release(J, &top);
            cr__cuda_free(J, K);
            return cr__cuda_infra(J, e, "keeping a timed output");
        }
    }
    return 0;
}

/* ... and every rank's outputs on its own GPU, into K->ranks (docs/multigpu.md). */
static int s_do_keep_out_ranks(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                               const cr__cuda_bufs_t *B, cr__cuda_bufs_t *K)
{
    int rc = s_do_keep_out(J, L, B, K);
    if (rc != 0 || !B->ranks)
        return rc;
    K->ranks = (cr__cuda_bufs_t *)calloc((size_t)J->nranks - 1, sizeof *K->ranks);
    if (!K->ranks) {
        cr__cuda_free(J, K);
        cr__cuda_hard(J, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cuda judge: out of host memory");
        return -1;
    }
    for (int r = 1; r < J->nranks && rc == 0; r++) {
        cr__cuda_on(J->rk[r]);
        if ((rc = s_do_keep_out(J->rk[r], L, &B->ranks[r - 1], &K->ranks[r - 1])) != 0)
            cr__cuda_rank_fail(J, r);
    }
    cr__cuda_on(J);
    if (rc != 0)
        cr__cuda_free(J, K);
    return rc;
}

int cr__cuda_keep_out(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, const cr__cuda_bufs_t *B,
                      cr__cuda_bufs_t *K)
{
    int64_t t0 = cr_time_mono_ns();
    return cr__cuda_step(J, CR_CUDA_ST_KEEP, t0, s_do_keep_out_ranks(J, L, B, K));
}

/* Element i of device buffer b as a double (cr_inputs_get), for a message. */
static double s_elem(const void *b, cr_dtype_t d, size_t i)
{
    unsigned char v[8] = {0};
    size_t es = cr_dtype_size(d);
    if (cudaMemcpy(v, (const char *)b + i * es, es, cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        return NAN;
    }
    return cr_inputs_get(v, d, 0);
}

/* cr_judge_compare_outputs for device buffers: the candidate's outputs in
 * cand against the expected ones in exp, compared by s_cmp_kernel; only
 * counts, maxima, first indices and the two elements a message quotes come
 * back to the host. Sets every field of *k but inputs_unchanged. Returns 0,
 * or -1 with a verdict. */
static int s_do_compare_dev(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                            const cr__cuda_bufs_t *cand, const cr__cuda_bufs_t *exp,
                            cr_judge_check_t *k)
{
    const cr_task_t *t = J->t;
    unsigned long long h[6 * CR_CUDA_NP];
    unsigned long long *cnt = J->d.dcmp, *first = J->d.dcmp + 4 * CR_CUDA_NP;
    k->all_written = 1;
    k->mismatches = 0;
    k->max_abs = k->max_rel = 0;
    k->first_bad = -1;
    k->msg[0] = '\0';
    cudaMemsetAsync(cnt, 0, 4 * CR_CUDA_NP * sizeof *cnt, cudaStreamLegacy);
    cudaMemsetAsync(first, 0xff, 2 * CR_CUDA_NP * sizeof *first, cudaStreamLegacy);
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!cr__cuda_is_out(prm) || L->numel[p] == 0)
            continue;
        unsigned char pat[8] = {0};
        uint64_t v = 0;
        cr_inputs_poison(pat, prm->dtype, 1);
        memcpy(&v, pat, sizeof v);
        int es = prm->role == CR_ROLE_OUT ? (int)cr_dtype_size(prm->dtype) : 0;
        cr__cuda_launch_cmp(cr__cuda_grid(J, L->numel[p]), cand->p[p], exp->p[p],
                            (int)prm->dtype, es, v, L->numel[p], t->atol, t->rtol, cnt + 4 * p,
                            first + 2 * p);
    }
    if (cr__cuda_infra(J, cudaGetLastError(), "output comparison launch") ||
        cr__cuda_infra(J, cudaMemcpy(h, J->d.dcmp, sizeof h, cudaMemcpyDeviceToHost),
                       "output comparison"))
        return -1;
    for (int p = 0; p < t->nparams; p++) {
        const cr_param_t *prm = &t->params[p];
        if (!cr__cuda_is_out(prm))
            continue;
        const unsigned long long *c = h + 4 * p, *f = h + 4 * CR_CUDA_NP + 2 * p;
        if (c[1]) {
            k->all_written = 0;
            if (!k->msg[0])
                snprintf(k->msg, sizeof k->msg,
                         "output '%s': %llu of %zu elements never written (first at [%llu])",
                         prm->name, c[1], L->numel[p], f[1]);
        }
        double ma, mr;
        memcpy(&ma, &c[2], sizeof ma);
        memcpy(&mr, &c[3], sizeof mr);
        k->max_abs = fmax(k->max_abs, ma);
        k->max_rel = fmax(k->max_rel, mr);
        if (c[0] && k->first_bad < 0) {
            k->first_bad = (int64_t)f[0];
            if (!k->msg[0])
                snprintf(k->msg, sizeof k->msg,
                         "output '%s': %llu of %zu elements differ; first at [%llu]: got %.9g, "
                         "expected %.9g (atol %g, rtol %g)",
                         prm->name, c[0], L->numel[p], f[0],
                         s_elem(cand->p[p], prm->dtype, (size_t)f[0]),
                         s_elem(exp->p[p], prm->dtype, (size_t)f[0]), t->atol, t->rtol);
        }
        k->mismatches += c[0];
    }
    return 0;
}

int cr__cuda_compare_one(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                         const cr__cuda_bufs_t *cand, const cr__cuda_bufs_t *exp,
                         cr_judge_check_t *k)
{
    return s_do_compare_dev(J, L, cand, exp, k);
}

/* With ranks, every rank's outputs against its part of the reference's
 * whole (ranks.c). */
int cr__cuda_compare_dev(cr__cuda_judge_t *J, const cr__cuda_layout_t *L,
                         const cr__cuda_bufs_t *cand, const cr__cuda_bufs_t *exp,
                         cr_judge_check_t *k)
{
    int64_t t0 = cr_time_mono_ns();
    int rc = J->nranks > 1 ? cr__cuda_ranks_compare(J, L, cand, exp, k)
                           : s_do_compare_dev(J, L, cand, exp, k);
    return cr__cuda_step(J, CR_CUDA_ST_CMP, t0, rc);
}

/* The reference on set `set` of case L->c, in fresh buffers R (allocated
 * here; the caller frees them). Returns 0 or -1 with a verdict (R freed). */
int cr__cuda_reference(cr__cuda_judge_t *J, const cr__cuda_layout_t *Lr, uint32_t set,
                       cr__cuda_bufs_t *R)
{
    /* a task with "gpus": the reference computes the whole, on rank 0's GPU
     * (docs/multigpu.md) */
    cr__cuda_layout_t Lw = *Lr;
    if (J->nranks > 1 || J->t->gpus > 0)
        cr__cuda_layout_whole(J, &Lw);
    const cr__cuda_layout_t *L = &Lw;
    if (cr__cuda_alloc(J, CR_CUDA_REF, L, R) != 0)
        return -1;
    int rc = cr__cuda_fill(J, L, set, R);
    if (rc == 0)
        rc = cr__cuda_ready(J);
    if (rc == 0) {
        cr__cuda_reset_state(J);
        rc = cr__cuda_call(J, CR_CUDA_REF, L, R, NULL);
    }
    if (rc != 0)
        cr__cuda_free(J, R);
    return rc;
}

/* One verification run of case L->c on set `set` (docs/design.md §4 steps 1-2):
 * the candidate into *cand (allocated here, freed by the caller so that a
 * later run gets new addresses), then the reference in fresh buffers.
 * Returns 0 with the findings in *k, or -1 with a verdict. */
static int s_verify_set(cr__cuda_judge_t *J, const cr__cuda_layout_t *L, uint32_t set,
                        cr__cuda_bufs_t *cand, cr_judge_check_t *k)
{
    cr__cuda_bufs_t R;
    const char *mut = NULL;
    memset(k, 0, sizeof *k);
    J->lc_flagged = 0;
    if (cr__cuda_alloc(J, CR_CUDA_CAND, L, cand) != 0 || cr__cuda_fill(J, L, set, cand) != 0 ||
        cr__cuda_hash_queue(J, L, cand, 0) != 0 || cr__cuda_ready(J))
        return -1;
    cr__cuda_reset_state(J);
    if (cr__cuda_call(J, CR_CUDA_CAND, L, cand, NULL) != 0 ||
        cr__cuda_hash_queue(J, L, cand, 1) != 0 || cr__cuda_hash_compare(J, &mut) != 0)
        return -1;
    k->inputs_unchanged = mut == NULL;
    /* The outputs as they were when the call returned, then the reference,
     * in buffers the candidate never saw. */
    cr__cuda_bufs_t got;
    if (cr__cuda_keep_out(J, L, cand, &got) != 0)
        return -1;
    if (cr__cuda_reference(J, L, set, &R) != 0) {
        cr__cuda_free(J, &got);
        return -1;
    }
    int rc = cr__cuda_compare_dev(J, L, &got, &R, k);
    cr__cuda_free(J, &R);
    cr__cuda_free(J, &got);
    if (rc != 0)
        return -1;
    if (mut) /* the most serious finding leads the message */
        snprintf(k->msg, sizeof k->msg, "input '%s' was modified by the candidate", mut);
    char lm[sizeof k->msg];
    int passed = k->inputs_unchanged && k->all_written && k->mismatches == 0;
    if (cr__cuda_lc_verdict(J, L->c, set != 0, passed, lm, sizeof lm)) {
        J->lc_flagged = 1; /* the run fails, whatever its outputs (cr__cuda_verify) */
        if (!k->msg[0])
            snprintf(k->msg, sizeof k->msg, "%s", lm);
    }
    return 0;
}

/* Applies one run's findings to the record; 1 when the run passed. */
static int s_judge_run(Crucible__RewardRecord *rec, int c, const cr_judge_check_t *k, int second)
{
    return cr_judge_apply_run(rec, c, k, second);
}

static void s_case_fields(Crucible__CaseResult *cr, const cr_judge_check_t *k)
{
    cr->inputs_unchanged = k->inputs_unchanged;
    cr->all_written = k->all_written;
    cr->mismatches = k->mismatches;
    cr->first_bad_index = k->first_bad;
    cr->max_abs_err = fmax(cr->max_abs_err, k->max_abs);
    cr->max_rel_err = fmax(cr->max_rel_err, k->max_rel);
}

/* Verifies every case. Returns 0 (verdict on the record, J->verdict set for
 * a hard one) or -ENOMEM. */
int cr__cuda_verify(cr__cuda_judge_t *J)
{
    const cr_task_t *t = J->t;
    int64_t t0 = cr_time_mono_ns();
    Crucible__VerifyResult *vr = (Crucible__VerifyResult *)malloc(sizeof *vr);
    if (!vr)
        return -ENOMEM;
    crucible__verify_result__init(vr);
    J->rec->verify = vr;
    vr->cases = (Crucible__CaseResult **)calloc((size_t)t->ncases, sizeof *vr->cases);
    if (!vr->cases)
        return -ENOMEM;
    vr->ok = 1;
    for (int c = 0; c < t->ncases && !J->verdict; c++) {
        Crucible__CaseResult *cr = (Crucible__CaseResult *)malloc(sizeof *cr);
        if (!cr)
            return -ENOMEM;
        crucible__case_result__init(cr);
        vr->cases[vr->n_cases++] = cr;
        cr->index = (uint32_t)c;
        cr->first_bad_index = -1;
        cr__cuda_layout_t L;
        cr__cuda_bufs_t first, second;
        cr_judge_check_t k1, k2;
        memset(&first, 0, sizeof first);
        memset(&second, 0, sizeof second);
        const cr__cuda_mark_t mark = cr__cuda_arena_mark(J); /* this case's buffers, back at its end */
        if (cr__cuda_layout(J, c, &L) != 0 || s_verify_set(J, &L, 0, &first, &k1) != 0) {
            cr_judge_set_str(&cr->message, J->rec->message);
            vr->ok = 0;
            cr__cuda_free(J, &first);
            cr__cuda_arena_release(J, &mark);
            break;
        }
        int ok = s_judge_run(J->rec, c, &k1, 0) && !J->lc_flagged;
        s_case_fields(cr, &k1);
        if (k1.msg[0])
            cr_judge_set_str(&cr->message, k1.msg);
        if (ok) {
            /* `first` is still allocated: set 1 lands at new addresses (step 3). */
            int rc = s_verify_set(J, &L, 1, &second, &k2);
            cr__cuda_free(J, &first);
            cr__cuda_free(J, &second);
            if (rc != 0) {
                cr_judge_set_str(&cr->message, J->rec->message);
                vr->ok = 0;
                cr__cuda_arena_release(J, &mark);
                break;
            }
            ok = s_judge_run(J->rec, c, &k2, 1) && !J->lc_flagged;
            cr->second_run_passed = ok;
            if (!ok) {
                s_case_fields(cr, &k2);
                char m[600];
                snprintf(m, sizeof m, "second run: %s", k2.msg);
                cr_judge_set_str(&cr->message, m);
            }
        } else {
            cr__cuda_free(J, &first);
        }
        cr->passed = ok;
        vr->ok &= ok;
        cr__cuda_arena_release(J, &mark);
        cr_debug("case %d: %s", c, ok ? "passed" : cr->message);
    }
    vr->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
    return 0;
}
