/* judge_driver.c — runs the CUDA judge on one candidate, for GPU tests.
 *
 *   cr_cuda_judge_driver [options] TASK_DIR CANDIDATE.cu
 *
 * Does what the worker and crucible-runner do together, in one process:
 * builds the task's reference (and baseline) and the candidate from the
 * task's shim with nvcc and the judge's flags (CR_CUDA_COMPILE_FLAGS),
 * loads them, calls cr_cuda_judge_run with a RunnerRequest and prints the
 * RewardRecord as one JSON line on stdout. Objects already in the work dir
 * are reused, so repeated runs (the precision test) skip the compiler.
 *
 * The shim gets one addition the task's shim lacks: an exported
 * cr_cuda_last_error() returning the object's own runtime's launch error
 * (docs/cuda-judge.md §1); --no-last-error leaves it out.
 *
 * Options: --policy P (clock policy), --budget S, --rse R, --timeout S (run
 * timeout), --nvml-lib PATH (tests pass the fake), --verify-only, --work DIR
 * (the candidate's object), --task-work DIR (the reference's and baseline's,
 * shared by the candidates of a task; default: the work dir),
 * --build-only (print the work dir and stop), --no-last-error, --repeat N
 * (judge the candidate N times in this process, one record each: tells a
 * level that belongs to the process from one that changes per run),
 * --anchors FILE (the worker's reference cache across runs, as the
 * interleaved policy uses it, docs/cuda-judge.md §11: when FILE holds one
 * reference median per bench case they go in the request as ref_anchor_us;
 * when it does not exist, an OK run writes its reference medians there),
 * --cached FILE (the same for the cached policy: the medians go in the
 * request as cached_ref_median_us, and the judge times only the candidate). The
 * environment may name the compiler (NVCC) and, to build without a GPU, the
 * target (CR_CUDA_ARCH=90).
 * Exit 0 with a record printed (whatever its status), 2 on a usage or
 * setup error. Like crucible-runner it leaves with _exit() after the report. */
#define _GNU_SOURCE
#include "cuda_judge.h"
#include "error.h"
#include "file.h"
#include "hash.h"
#include "log.h"
#include "proc.h"
#include "record.h"
#include "task.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CR_NVCC
#define CR_NVCC "nvcc"
#endif

enum { D_CAND, D_REF, D_BASE, D_N };
static const char *const s_names[D_N] = {"cand", "ref", "base"};

typedef struct {
    const char *policy, *nvml_lib, *work, *task_work, *anchors, *cached;
    double budget, rse, timeout;
    int verify_only, build_only, no_last_error, repeat;
} s_opts_t;

static void s_usage(void)
{
    fprintf(stderr, "usage: cr_cuda_judge_driver [--policy P] [--budget S] [--rse R] "
                    "[--timeout S] [--nvml-lib PATH] [--verify-only] [--work DIR] [--task-work DIR] "
                    "[--build-only] [--no-last-error] [--repeat N] [--anchors FILE] "
                    "[--cached FILE] TASK_DIR CANDIDATE.cu\n");
}

/* --anchors, --cached: reads up to max reference medians (whitespace-separated) from
 * path into v; returns how many, 0 when the file is missing or unreadable. */
static size_t s_read_medians(const char *path, double *v, size_t max)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    size_t n = 0;
    while (f && n < max && fscanf(f, "%lf", &v[n]) == 1)
        n++;
    if (f)
        fclose(f);
    return n;
}

/* --anchors, --cached: writes the reference medians of an OK record to path. */
static void s_write_medians(const char *path, const Crucible__RewardRecord *rec)
{
    if (!path || rec->status != CRUCIBLE__STATUS__STATUS_OK || !rec->profile)
        return;
    FILE *f = fopen(path, "w");
    for (size_t b = 0; f && b < rec->profile->n_cases; b++)
        fprintf(f, "%.6f\n", rec->profile->cases[b]->ref_median_us);
    if (f)
        fclose(f);
}

/* Writes DIR/<name>_src.cu (a copy of src) and DIR/<name>_shim.cu. */
static int s_write_shim(const cr_task_t *t, const s_opts_t *o, const char *dir,
                        const char *name, const char *src)
{
    char *text = NULL, path[4096], incl[256];
    size_t len = 0;
    int rc = cr_file_read(src, CR_TASK_MAX_FILE, &text, &len);
    if (rc != 0) {
        fprintf(stderr, "driver: %s: %s\n", src, cr_strerror(rc));
        return rc;
    }
    snprintf(path, sizeof path, "%s/%s_src.cu", dir, name);
    rc = cr_file_write_atomic(path, text, len);
    free(text);
    snprintf(incl, sizeof incl, "%s_src.cu", name);
    char *shim = cr_task_shim_source(t, incl);
    if (rc != 0 || !shim) {
        free(shim);
        return rc ? rc : -ENOMEM;
    }
    /* the shim exports cr_cuda_last_error; --no-last-error cuts it off to
     * test the judge without it */
    char *cut = strstr(shim, "\nextern \"C\" __attribute__((visibility(\"default\")))\n"
                             "int cr_cuda_last_error");
    if (o->no_last_error && cut)
        *cut = '\0';
    char *all = shim;
    snprintf(path, sizeof path, "%s/%s_shim.cu", dir, name);
    rc = cr_file_write_atomic(path, all, strlen(all));
    free(all);
    return rc;
}

/* Builds the missing objects in parallel (one shell, one nvcc each), object
 * k in dirs[k]. Each is compiled under a temporary name and renamed, so
 * drivers sharing a task dir never load a half-written object. Returns 0,
 * or 1 when the candidate did not compile (log in *log), or a negative code. */
static int s_build(const cr_task_t *t, const s_opts_t *o, const char *const dirs[D_N],
                   const char *srcs[D_N], char **log)
{
    int major = 0, minor = 0;
    const char *arch = getenv("CR_CUDA_ARCH"); /* "90": build without asking a GPU */
    if (arch && strlen(arch) >= 2) {
        major = arch[0] - '0';
        minor = atoi(arch + 1);
    } else if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess ||
               cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) != cudaSuccess) {
        fprintf(stderr, "driver: no CUDA device\n");
        return -ENODEV;
    }
    const char *nvcc = getenv("NVCC") ? getenv("NVCC") : CR_NVCC;
    if (access(nvcc, X_OK) != 0)
        nvcc = "nvcc";
    /* the libraries the task allows, as the worker links them (cr_task_libs):
     * -lcublas, and -lnccl for a task with "gpus" */
    char libs[256] = "";
    for (int i = 0; i < t->nallow; i++) {
        const cr_task_lib_t *l = cr_task_lib_find(t->allow[i]);
        if (l && strlen(libs) + strlen(l->link_flag) + 2 < sizeof libs)
            snprintf(libs + strlen(libs), sizeof libs - strlen(libs), " %s", l->link_flag);
    }
    char cmd[16384];
    size_t n = 0;
    int nbuild = 0;
    for (int k = 0; k < D_N; k++) {
        char so[4096];
        snprintf(so, sizeof so, "%s/%s.so", dirs[k], s_names[k]);
        if (!srcs[k] || cr_file_exists(so))
            continue;
        int rc = s_write_shim(t, o, dirs[k], s_names[k], srcs[k]);
        if (rc != 0)
            return rc;
        /* The judge's flags (cuda_judge.h); each compile's output to its own log. */
        n += (size_t)snprintf(cmd + n, sizeof cmd - n,
                              "( cd '%s' && '%s' %s -arch=sm_%d%d -o %s.so.tmp$$ %s_shim.cu %s "
                              "> %s.log 2>&1 && mv -f %s.so.tmp$$ %s.so ) & ",
                              dirs[k], nvcc, CR_CUDA_COMPILE_FLAGS, major, minor, s_names[k],
                              s_names[k], libs, s_names[k],
                              s_names[k], s_names[k]);
        nbuild++;
    }
    if (!nbuild)
        return 0;
    snprintf(cmd + n, sizeof cmd - n, "wait");
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    cr_proc_opts_t po = {.argv = argv, .out_cap = 1 << 16, .err_cap = 1 << 16,
                         .merge_stderr = 1, .timeout_ms = 600000};
    cr_proc_result_t r;
    int rc = cr_proc_run(&po, &r);
    if (rc != 0)
        return rc;
    cr_proc_result_close(&r);
    for (int k = 0; k < D_N; k++) {
        char so[4096], lp[4096];
        snprintf(so, sizeof so, "%s/%s.so", dirs[k], s_names[k]);
        if (!srcs[k] || cr_file_exists(so))
            continue;
        snprintf(lp, sizeof lp, "%s/%s.log", dirs[k], s_names[k]);
        char *text = NULL;
        cr_file_read(lp, 1 << 20, &text, NULL);
        if (k == D_CAND) {
            *log = text;
            return 1;
        }
        fprintf(stderr, "driver: the task's %s did not compile:\n%s\n", s_names[k],
                text ? text : "");
        free(text);
        return CR_E_COMPILE;
    }
    return 0;
}

/* The built object of k (the judge's executors load it), in so. 0 or -1. */
static int s_object(const char *const dirs[D_N], int k, char *so, size_t len)
{
    snprintf(so, len, "%s/%s.so", dirs[k], s_names[k]);
    if (access(so, R_OK) != 0) {
        fprintf(stderr, "driver: %s: %s\n", so, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    s_opts_t o = {.policy = "observe", .budget = 0.5, .timeout = 60, .repeat = 1};
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--verify-only")) {
            o.verify_only = 1;
        } else if (!strcmp(a, "--build-only")) {
            o.build_only = 1;
        } else if (!strcmp(a, "--no-last-error")) {
            o.no_last_error = 1;
        } else if (v && !strcmp(a, "--policy")) {
            o.policy = argv[++i];
        } else if (v && !strcmp(a, "--nvml-lib")) {
            o.nvml_lib = argv[++i];
        } else if (v && !strcmp(a, "--work")) {
            o.work = argv[++i];
        } else if (v && !strcmp(a, "--task-work")) {
            o.task_work = argv[++i];
        } else if (v && !strcmp(a, "--budget")) {
            o.budget = atof(argv[++i]);
        } else if (v && !strcmp(a, "--rse")) {
            o.rse = atof(argv[++i]);
        } else if (v && !strcmp(a, "--timeout")) {
            o.timeout = atof(argv[++i]);
        } else if (v && !strcmp(a, "--repeat")) {
            o.repeat = atoi(argv[++i]);
        } else if (v && !strcmp(a, "--anchors")) {
            o.anchors = argv[++i];
        } else if (v && !strcmp(a, "--cached")) {
            o.cached = argv[++i];
        } else {
            s_usage();
            return 2;
        }
    }
    if (argc - i != 2) {
        s_usage();
        return 2;
    }
    const char *task_dir = argv[i], *cand_src = argv[i + 1];
    /* As crucible-runner: the report keeps the real stdout; prints go to stderr. */
    int report_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (report_fd < 0 || dup2(2, 1) < 0)
        return 2;
    cr_log_set_role("cuda-judge-driver");
    if (cr_hash_global_init() != 0)
        return 2;
    char err[1024];
    cr_task_t *t = NULL;
    if (cr_task_load_dir(task_dir, &t, err, sizeof err) != 0) {
        fprintf(stderr, "driver: %s\n", err);
        return 2;
    }
    char tmpl[] = "/tmp/cr_judge_driver.XXXXXX";
    const char *dir = o.work;
    if (!dir && !(dir = mkdtemp(tmpl)))
        return 2;
    const char *tdir = o.task_work ? o.task_work : dir;
    if (cr_file_mkdirs(dir, 0700) != 0 || cr_file_mkdirs(tdir, 0700) != 0)
        return 2;
    const char *dirs[D_N] = {dir, tdir, tdir};
    char ref[4096], base[4096];
    snprintf(ref, sizeof ref, "%s/%s", task_dir, t->reference);
    if (t->baseline)
        snprintf(base, sizeof base, "%s/%s", task_dir, t->baseline);
    const char *srcs[D_N] = {cand_src, ref, t->baseline ? base : NULL};

    char *log = NULL;
    int rc = s_build(t, &o, dirs, srcs, &log);
    if (rc < 0)
        return 2;
    if (o.build_only) {
        dprintf(report_fd, "%s\n", dir);
        _exit(rc == 0 ? 0 : 1);
    }
    char so[D_N][4096];
    char *json = NULL;
    if (rc == 0) {
        if (s_object(dirs, D_CAND, so[D_CAND], sizeof so[D_CAND]) != 0 ||
            s_object(dirs, D_REF, so[D_REF], sizeof so[D_REF]) != 0 ||
            (t->baseline && s_object(dirs, D_BASE, so[D_BASE], sizeof so[D_BASE]) != 0))
            return 2;
        char tj[4096];
        snprintf(tj, sizeof tj, "%s/task.json", task_dir);
        if (cr_file_read(tj, CR_TASK_MAX_FILE, &json, NULL) != 0)
            return 2;
        if (o.nvml_lib)
            cr_cuda_judge_set_nvml_library(o.nvml_lib);
    }
    int ok = 1;
    for (int r = 0; r < (o.repeat > 0 ? o.repeat : 1); r++) {
        Crucible__RewardRecord rec;
        crucible__reward_record__init(&rec);
        rec.status = CRUCIBLE__STATUS__STATUS_INFRA_ERROR;
        rec.task = t->name;
        Crucible__CompileResult comp;
        crucible__compile_result__init(&comp);
        rec.compile = &comp;
        if (rc == 1) {
            rec.status = CRUCIBLE__STATUS__STATUS_COMPILE_ERROR;
            rec.message = (char *)"candidate did not compile";
            comp.log = log ? log : (char *)"";
        } else {
            comp.ok = 1;
            unsigned char seed[32];
            cr_random_bytes(seed, sizeof seed);
            Crucible__JobOptions jo;
            crucible__job_options__init(&jo);
            jo.time_budget_s = o.budget;
            jo.rse_target = o.rse;
            jo.run_timeout_s = o.timeout;
            jo.clock_policy = (char *)o.policy;
            Crucible__RunnerRequest req;
            crucible__runner_request__init(&req);
            req.task_json = json;
            req.seed.data = seed;
            req.seed.len = sizeof seed;
            req.options = &jo;
            req.cpu = -1;
            req.verify_only = o.verify_only;
            double anchor[64], cached[64];
            req.n_ref_anchor_us = s_read_medians(o.anchors, anchor, 64);
            req.ref_anchor_us = anchor;
            req.n_cached_ref_median_us = s_read_medians(o.cached, cached, 64);
            req.cached_ref_median_us = cached;
            req.candidate_so = so[D_CAND];
            req.reference_so = so[D_REF];
            req.baseline_so = t->baseline ? so[D_BASE] : (char *)"";
            int jr = cr_cuda_judge_run(&req, t, &rec);
            if (jr != 0)
                fprintf(stderr, "driver: judge returned %s\n", cr_strerror(jr));
            if (o.anchors && req.n_ref_anchor_us == 0)
                s_write_medians(o.anchors, &rec);
            if (o.cached && req.n_cached_ref_median_us == 0)
                s_write_medians(o.cached, &rec);
        }
        char *line = cr_record_to_json(&rec);
        if (line)
            dprintf(report_fd, "%s\n", line);
        else
            ok = 0;
        free(line);
        /* after a fault or a timeout the context is gone: no second run */
        if (rec.status != CRUCIBLE__STATUS__STATUS_OK || !ok)
            break;
    }
    /* After a fault or timeout the context must not be torn down: _exit. */
    fflush(stderr);
    _exit(ok ? 0 : 2);
}
