/* runner.c — crucible-runner: judges one candidate and reports one record.
 *
 * Protocol (docs/protocol.md, "Runner <-> worker"): one length-prefixed
 * RunnerRequest on stdin, one length-prefixed RewardRecord on the report
 * descriptor (the original stdout), exit 0. Everything else the process
 * prints goes to stderr.
 *
 * Phases: protect the report channel, read the request, load the task and
 * the shared objects, verify, time, report. Failures of the request or of
 * the judge itself are INFRA_ERROR (the worker retries them); failures the
 * candidate causes are its verdict. A crash, hang or exit() inside candidate
 * code ends this process without a report on purpose: the supervisor turns
 * how it ended into RUNTIME_ERROR or TIMEOUT, so no signal handler here
 * tries to hide one. */
#define _GNU_SOURCE /* F_DUPFD_CLOEXEC */
#include "audit.h"
#include "cpu_judge.h"
#ifdef CR_WITH_CUDA
#include "cuda_judge.h"
#endif
#include "error.h"
#include "exec.h"
#include "hash.h"
#include "log.h"
#include "sandbox.h"
#include "task.h"
#include "timeutil.h"
#include "topo.h"
#include "torch/torch_judge.h"
#include "wire.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

#define S_PARK_S 2 /* asleep after the report (supervisor.c note 6) */

#define CR_RUNNER_VERSION "0.1.0"
#ifdef CR_WITH_CUDA
#define S_BACKENDS "c, cuda, torch"
#else
#define S_BACKENDS "c, torch"
#endif
#define S_TIME_BUDGET_MAX_S 600.0 /* the worker's run timeout would end it sooner anyway */
/* The judge's deadline: 90% of the run timeout, leaving the rest for the
 * report before the worker kills the process group. */
#define S_DEADLINE_SHARE 0.9
/* 95%: an allocator that was told no stops within its last chunk of it;
 * no honest kernel's scratch comes near a quarter of the machine. */
#define S_OOM_SHARE 0.95

static const char s_usage[] =
    "usage: crucible-runner [--help | --version | --measure-device |\n"
    "                        [--prestart BACKEND] [--serve] |\n"
    "                        [--prestart BACKEND [--preload OBJECT]...] [--park]]\n"
    "\n"
    "Judges one candidate. Reads a 16-byte report token and one frame (4-byte\n"
    "little-endian length, then a packed crucible.RunnerRequest) from stdin,\n"
    "verifies the candidate against the reference, times both, and writes the\n"
    "token and one frame holding a crucible.RewardRecord to stdout, then exits 0.\n"
    "Started by crucible worker; not meant to be run by hand. Candidate output\n"
    "printed to stdout is redirected to stderr.\n"
    "\n"
    "  --prestart BACKEND  prepare BACKEND before reading the request (cuda: the\n"
    "                      CUDA context, NVML, the judge's buffers and the CUPTI\n"
    "                      subscription), so a worker can start the next runner\n"
    "                      while the current one measures.\n"
    "  --preload OBJECT    with --prestart: read OBJECT (a reference or baseline\n"
    "                      shared object the next request is likely to name)\n"
    "                      into the page cache before reading the request; it is\n"
    "                      loaded only inside the sandbox; at most 2; a failure\n"
    "                      is only logged.\n"
    "  --park              after the report, close stdout and sleep 2 s before\n"
    "                      exiting: a worker that sees this kills the runner and\n"
    "                      goes on while the kernel tears the process down.\n"
    "  --serve             judge one request after another: after each report,\n"
    "                      read the next token and request, until stdin ends\n"
    "                      (then exit 0). The judge process loads no client code,\n"
    "                      so it can outlive a job; each job's candidate runs in a\n"
    "                      fresh executor, and a CUDA judge keeps its context,\n"
    "                      its buffers and the reference's executor for the jobs\n"
    "                      that follow (docs/judge.md).\n"
    "  --measure-device    measure the GPU's device-to-device copy bandwidth and\n"
    "                      print \"copy_bw BYTES_PER_S peak_flops FLOP_PER_S\" (the\n"
    "                      second a rate above the GPU's peak); the worker does\n"
    "                      this once at start and passes the figures to every\n"
    "                      runner (the roofline floor). Exits 1 without a usable\n"
    "                      GPU or a plausible figure (1e9..1e14 bytes/s).\n";

/* Reads exactly len bytes from fd. 0, or CR_E_DECODE at an early end of
 * file, or -errno. */
static int s_read_all(int fd, uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : CR_E_DECODE;
        got += (size_t)r;
    }
    return 0;
}

/* Writes all of buf to fd. 0 or -errno. */
static int s_write_all(int fd, const uint8_t *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        done += (size_t)w;
    }
    return 0;
}

/* Reads stdin until one complete frame is there (or EOF / the cap). Returns 0
 * with *buf (caller frees) and the payload, or a negative code with err set. */
static int s_read_request(uint8_t **buf, const uint8_t **payload, size_t *plen, char *err,
                          size_t errlen)
{
    size_t cap = 64 * 1024, len = 0;
    uint8_t *b = malloc(cap);
    if (!b)
        return -ENOMEM;
    for (;;) {
        int rc = cr_wire_frame_parse(b, len, CR_RUNNER_MAX_REQUEST, payload, plen);
        if (rc == 0) {
            *buf = b;
            return 0;
        }
        if (rc == CR_E_TOO_BIG) {
            snprintf(err, errlen, "request frame larger than %u bytes", CR_RUNNER_MAX_REQUEST);
            free(b);
            return rc;
        }
        if (len == cap) {
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return -ENOMEM;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(0, b + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, errlen, "stdin ended after %zu bytes without a complete request", len);
            free(b);
            return r < 0 ? -errno : CR_E_DECODE;
        }
        len += (size_t)r;
    }
}

/* The judge failed in phase: a reference that broke the task's contract
 * (CR_E_TASK) is INVALID_TASK; anything else is the judge's own failure,
 * INFRA_ERROR (the worker retries it). */
static void s_fail_judge(Crucible__RewardRecord *rec, int rc, const char *phase, const char *err)
{
    if (rc == CR_E_TASK)
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INVALID_TASK, "%s: %s", phase, err);
    else
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s: %s", phase, err);
}

static double s_positive_or(double v, double dflt, double max)
{
    return v > 0 && v <= max ? v : dflt; /* also catches NaN */
}

/* The link audit (audit.h) reads the candidate's object before any of its
 * code can run (constructors run inside dlopen). Returns 1 when it passed;
 * 0 with the verdict on rec: HACK_DETECTED / link_audit, or RUNTIME_ERROR
 * for an object it cannot read. */
static int s_audit(const Crucible__RunnerRequest *req, const cr_task_t *task,
                   Crucible__RewardRecord *rec)
{
    char err[1024] = "";
    int audit = cr_audit_check(req->candidate_so, task, err, sizeof err);
    if (audit < 0)
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR, "candidate: link audit: %s", err);
    if (audit > 0) {
        cr_judge_flag(rec, "link_audit");
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "link audit: %s", err);
    }
    return audit == 0;
}

/* Two allowed cores: one for the executor that is timed, another for the
 * judge; -1 where there is no such core. */
static void s_pick_cpus(int want, int *exec_cpu, int *judge_cpu, int *ncpu)
{
    cpu_set_t set;
    *exec_cpu = *judge_cpu = -1;
    *ncpu = 1;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    *ncpu = CPU_COUNT(&set);
    if (want >= 0 && want < CPU_SETSIZE && CPU_ISSET(want, &set))
        *exec_cpu = want;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        if (*exec_cpu < 0)
            *exec_cpu = c;
        else if (c != *exec_cpu && *judge_cpu < 0)
            *judge_cpu = c;
    }
}

/* Starts the executor of one role and loads its object. Returns it, or NULL
 * with the verdict on rec. */
static cr_exec_t *s_executor(const Crucible__RunnerRequest *req, const cr_task_t *task,
                             int role, const char *object, int cpu, int64_t deadline,
                             cr_cpu_judge_t *j, Crucible__RewardRecord *rec)
{
    static const char *const names[] = {"candidate", "reference", "baseline"};
    char prog[PATH_MAX], err[700] = "";
    cr_exec_program("crucible-executor", prog, sizeof prog);
    cr_exec_opts_t o = {.program = prog, .role = names[role], .object = object,
                        .scratch_dir = req->scratch_dir, .uid = req->sandbox_uid,
                        .threads = task->threads_allowed, .cap_memory = 1, .cpu = cpu};
    if (cr_cpu_judge_arenas(task, role, &o.ro_bytes, &o.rw_bytes) != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "task %s: a shape does not "
                    "evaluate", task->name);
        return NULL;
    }
    cr_exec_t *x = NULL;
    if (cr_exec_new(&o, &x, err, sizeof err) != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s executor: %s", names[role],
                    err);
        return NULL;
    }
    cr_exec_set_deadline(x, deadline);
    int fp = 0;
    char why[160] = "";
    if (cr_exec_load(x, &fp, why, sizeof why) != 0) {
        cr_judge_exec_verdict(rec, x, role == CR_JUDGE_ROLE_CANDIDATE);
        cr_exec_destroy(&x);
        return NULL;
    }
    if (role == CR_JUDGE_ROLE_CANDIDATE) {
        j->load_fp_changed = fp;
        snprintf(j->load_fp_why, sizeof j->load_fp_why, "%s", why);
        rec->sandboxed_net = cr_exec_sandbox_net(x);
    }
    return x;
}

/* The CPU backend: the reference, the baseline and the candidate each in
 * an executor of their own (docs/judge.md); this process only judges. */
static void s_judge_cpu(const Crucible__RunnerRequest *req, cr_task_t *task, cr_cpu_judge_t *j,
                        Crucible__RewardRecord *rec)
{
    char err[1024] = "";
    int rc, exec_cpu;
    cr_exec_t *ref = NULL, *base = NULL, *cand = NULL;
    const Crucible__JobOptions *o = req->options;
    int64_t t0 = cr_time_mono_ns(), deadline = 0;
    /* The judge's own deadline comes before the worker's kill, so that a
     * hung reference is the task's fault and a hung candidate a TIMEOUT the
     * judge reports (S_DEADLINE_SHARE of the run timeout). */
    if (o && o->run_timeout_s > 0 && isfinite(o->run_timeout_s))
        deadline = t0 + (int64_t)(o->run_timeout_s * S_DEADLINE_SHARE * 1e9);
    s_pick_cpus(req->cpu, &exec_cpu, &j->judge_cpu, &j->ncpu);

    if (!s_audit(req, task, rec))
        return;
    if (!(ref = s_executor(req, task, CR_JUDGE_ROLE_REFERENCE, req->reference_so, exec_cpu,
                           deadline, j, rec)))
        goto done;
    base = ref;
    if (req->baseline_so && req->baseline_so[0] &&
        !(base = s_executor(req, task, CR_JUDGE_ROLE_BASELINE, req->baseline_so, exec_cpu,
                            deadline, j, rec)))
        goto done;
    if (!(cand = s_executor(req, task, CR_JUDGE_ROLE_CANDIDATE, req->candidate_so, exec_cpu,
                            deadline, j, rec)))
        goto done;
    cr_info("executors ready %.3f s after the request (empty command: reference %.2f us, "
            "candidate %.2f us)", (double)(cr_time_mono_ns() - t0) / 1e9,
            cr_exec_overhead_us(ref), cr_exec_overhead_us(cand));
    j->cand = cand;
    j->ref = ref;
    j->base = base;

    rec->status = CRUCIBLE__STATUS__STATUS_OK;
    rc = cr_cpu_judge_verify(j, rec, err, sizeof err);
    if (rc == 0 && rec->status == CRUCIBLE__STATUS__STATUS_OK && !req->verify_only)
        rc = cr_cpu_judge_time(j, rec, err, sizeof err);
    /* A candidate that took its address space up to the sandbox's cap is
     * OOM whatever it answered: on a shared host it would have taken the
     * memory from others (S_OOM_SHARE of the cap). */
    uint64_t peak, cap;
    if (cr_exec_memory(cand, &peak, &cap) == 0 && cap > 0 &&
        (double)peak >= S_OOM_SHARE * (double)cap)
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_OOM, "the candidate used %llu MiB of address "
                    "space, at the sandbox's address-space cap of %llu MiB",
                    (unsigned long long)(peak >> 20), (unsigned long long)(cap >> 20));
    else if (rc == CR_E_EXEC) {
        const cr_exec_t *x = cr_exec_fault(cand)->kind ? cand
                             : cr_exec_fault(ref)->kind ? ref : base;
        cr_judge_exec_verdict(rec, x, x == cand);
    } else if (rc != 0) {
        s_fail_judge(rec, rc, rec->profile ? "timing" : "verify", err);
    }
done:
    cr_exec_destroy(&cand);
    if (base != ref)
        cr_exec_destroy(&base);
    cr_exec_destroy(&ref);
}

/* CR_TORCH_DEVICE as the worker gave it (main): the torch judge sets the
 * variable for its executors, so a serving judge reads it once. */
static const char *s_torch_device;

/* The torch backend (torch/torch_judge.h): Python executors, this judge. */
static void s_judge_torch(const Crucible__RunnerRequest *req, cr_task_t *task,
                          Crucible__RewardRecord *rec)
{
    char prog[PATH_MAX];
    int ncpu;
    const Crucible__JobOptions *o = req->options;
    cr_exec_program("crucible-torch", prog, sizeof prog);
    cr_torch_env_t env = {.harness = prog};
#ifdef CR_WITH_CUDA
    env.head_queue = cr_cuda_head_queue;
    env.head_probe = cr_cuda_head_probe;
#endif
    env.host_copy_bw = req->host_copy_bw > 0 && isfinite(req->host_copy_bw) ? req->host_copy_bw : 0;
    env.device_copy_bw =
        req->device_copy_bw > 0 && isfinite(req->device_copy_bw) ? req->device_copy_bw : 0;
    env.device_peak_flops =
        req->device_peak_flops > 0 && isfinite(req->device_peak_flops) ? req->device_peak_flops : 0;
    /* the GPU where the host has one (the executors' torch opens it, not this
     * process); "device": "cpu" keeps a task on the CPU, and CR_TORCH_DEVICE=cpu
     * in the worker's environment every task (the CPU hack suite on a GPU host) */
    const char *force = s_torch_device; /* the worker's, not what a job before set */
    env.cuda = strcmp(task->device ? task->device : "auto", "cpu") != 0 &&
               !(force && !strcmp(force, "cpu")) && access("/dev/nvidia0", F_OK) == 0;
    s_pick_cpus(req->cpu, &env.exec_cpu, &env.judge_cpu, &ncpu);
    if (o && o->run_timeout_s > 0 && isfinite(o->run_timeout_s))
        env.deadline_ns = cr_time_mono_ns() + (int64_t)(o->run_timeout_s * S_DEADLINE_SHARE * 1e9);
    env.time_budget_s = s_positive_or(o ? o->time_budget_s : 0, CR_JUDGE_DEFAULT_BUDGET_S,
                                      S_TIME_BUDGET_MAX_S);
    env.rse_target = s_positive_or(o ? o->rse_target : 0, CR_JUDGE_DEFAULT_RSE, 1.0);
    cr_torch_judge_run(req, task, &env, rec);
}

/* The CUDA backend: the reference, the baseline and the candidate each in
 * an executor of its own (cuda/judge.c, docs/judge.md §5); this process
 * judges, with a CUDA context of its own. */
#ifdef CR_WITH_CUDA
static void s_judge_cuda(const Crucible__RunnerRequest *req, cr_task_t *task,
                         Crucible__RewardRecord *rec)
{
    if (!s_audit(req, task, rec))
        return;
    /* This process _exits after its report (unless it serves): the judge
     * leaves its device state to that exit. */
    cr_cuda_judge_leave_device(1);
    if (cr_cuda_judge_run(req, task, rec) != 0)
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "cuda judge: out of memory");
}
#endif

/* Everything after the request is read: fills rec with the verdict. */
static void s_judge(const Crucible__RunnerRequest *req, Crucible__RewardRecord *rec)
{
    char err[1024] = "";
    cr_task_t *task = NULL;
    cr_cpu_judge_t j;
    memset(&j, 0, sizeof j);

    if (req->seed.len != sizeof j.seed) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                    "request: seed has %zu bytes, expected 32", req->seed.len);
        return;
    }
    if (req->scratch_dir && req->scratch_dir[0] && chdir(req->scratch_dir) != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "request: chdir %s: %s",
                    req->scratch_dir, strerror(errno));
        return;
    }
    if (cr_task_parse(req->task_json, "request.task_json", &task, err, sizeof err) != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "request: %s", err);
        return;
    }
    int cuda = strcmp(task->language, "cuda") == 0;
#ifdef CR_WITH_CUDA
    int have = cuda || strcmp(task->language, "c") == 0;
#else
    int have = !cuda && strcmp(task->language, "c") == 0;
#endif
    if (strcmp(task->language, "torch") == 0) { /* the backend's row */
        s_judge_torch(req, task, rec);
        goto done;
    }
    cr_torch_judge_drop_spares(); /* their imports would share this job's timing core */
    if (!have) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                    "task %s: language '%s' needs a backend this runner was built without",
                    task->name, task->language);
        goto done;
    }
#ifdef CR_WITH_CUDA
    if (cuda) { /* the CUDA judge names its GPU; until then the CPU is not the device */
        cr_judge_set_str(&rec->backend, "cuda");
        cr_judge_set_str(&rec->device, "");
        s_judge_cuda(req, task, rec);
        goto done;
    }
#endif
    memcpy(j.seed, req->seed.data, sizeof j.seed);
    j.task = task;
    const Crucible__JobOptions *o = req->options;
    j.time_budget_s = s_positive_or(o ? o->time_budget_s : 0, CR_JUDGE_DEFAULT_BUDGET_S,
                                    S_TIME_BUDGET_MAX_S);
    j.rse_target = s_positive_or(o ? o->rse_target : 0, CR_JUDGE_DEFAULT_RSE, 1.0);
    j.llc_bytes = req->llc_bytes;
    j.host_copy_bw = req->host_copy_bw > 0 && isfinite(req->host_copy_bw) ? req->host_copy_bw : 0;
    j.cached_ref_us = cr_judge_cached_ref(req, task, &j.cached_ref_rse);
    if (j.llc_bytes == 0 && cr_topo_llc_bytes(&j.llc_bytes) != 0)
        cr_info("hwloc reports no cache; flushing for %llu MiB",
                (unsigned long long)(j.llc_bytes >> 20));
    s_judge_cpu(req, task, &j, rec);
done:
    explicit_bzero(j.seed, sizeof j.seed);
    cr_task_destroy(&task);
}

/* Serving, after a job: ends every process of this judge's process group
 * but itself and the executors it keeps (a kept reference, the next job's
 * executors started ahead). A candidate's executor is killed with its job,
 * but what it started (a torch executor with the GPU may fork: Triton's
 * compilers) would otherwise outlive it in the group the worker no longer
 * kills after each job (docs/judge.md §6). Returns how many it ended. */
static int s_sweep_group(void)
{
    pid_t me = getpid(), grp = getpgrp();
    DIR *d = opendir("/proc");
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == me || cr_exec_is_live_pid((pid_t)pid))
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *p = strrchr(buf, ')'); /* the name may hold anything */
        char state;
        int ppid, pgrp;
        if (p && sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == grp &&
            state != 'Z' && kill((pid_t)pid, SIGKILL) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* Reads one request and writes its report: 0, 1 when stdin ended before a
 * request began (serve: the worker is done with this judge), or 2 when the
 * report could not be written. serve: stdin stays open for the next
 * request, and the process state a judge changed is put back. */
static int s_one(int report_fd, int serve)
{
    Crucible__RewardRecord *rec = malloc(sizeof *rec);
    if (!rec)
        return 2;
    crucible__reward_record__init(rec);
    rec->status = CRUCIBLE__STATUS__STATUS_INFRA_ERROR;
    cr_judge_set_str(&rec->backend, "c");
    char model[256], device[300];
    cr_topo_cpu_model(model, sizeof model);
    snprintf(device, sizeof device, "cpu:%s", model);
    cr_judge_set_str(&rec->device, device);

    uint8_t *raw = NULL;
    const uint8_t *payload = NULL;
    size_t plen = 0;
    char err[256] = "";
    Crucible__RunnerRequest *req = NULL;
    /* The report token comes first (wire.h): it stays on this stack, and
     * goes out first on the report descriptor, so the worker can tell this
     * code's report from bytes anything else wrote there. */
    uint8_t token[CR_RUNNER_TOKEN_LEN] = {0};
    int rc;
    ssize_t first;
    while ((first = read(0, token, 1)) < 0 && errno == EINTR) {
    }
    if (first == 0 && serve) {
        crucible__reward_record__free_unpacked(rec, NULL);
        return 1;
    }
    rc = first < 0 ? -errno : first == 0 ? CR_E_DECODE : s_read_all(0, token + 1, sizeof token - 1);
    if (rc == 0)
        rc = s_read_request(&raw, &payload, &plen, err, sizeof err);
    else
        snprintf(err, sizeof err, "stdin ended inside the %d-byte report token",
                 CR_RUNNER_TOKEN_LEN);
    if (rc != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "request: %s",
                    err[0] ? err : cr_strerror(rc));
    } else if (!(req = crucible__runner_request__unpack(NULL, plen, payload))) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR,
                    "request: not a valid RunnerRequest (%zu bytes)", plen);
    } else if (cr_hash_global_init() != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "libsodium did not initialise");
    } else {
        /* One request a process: nothing is left to read on stdin. */
        int devnull = serve ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull >= 0) {
            dup2(devnull, 0);
            close(devnull);
        }
        cpu_set_t cpus;
        int have_cpus = sched_getaffinity(0, sizeof cpus, &cpus) == 0;
        s_judge(req, rec);
        if (serve) { /* what a judge changed of this process: its core, its folder */
            if (have_cpus)
                sched_setaffinity(0, sizeof cpus, &cpus);
            if (chdir("/") != 0)
                cr_warn("serve: chdir /: %s", strerror(errno));
        }
    }
    free(raw);
    if (req)
        crucible__runner_request__free_unpacked(req, NULL);

    uint8_t *out = NULL;
    size_t outlen = 0;
    rc = cr_wire_record_pack(rec, &out, &outlen);
    if (rc == 0)
        rc = s_write_all(report_fd, token, sizeof token);
    explicit_bzero(token, sizeof token);
    if (rc == 0)
        rc = cr_wire_frame_write(report_fd, out, outlen);
    if (rc != 0)
        fprintf(stderr, "crucible-runner: could not write the report: %s\n", cr_strerror(rc));
    free(out);
    crucible__reward_record__free_unpacked(rec, NULL);
    if (serve) { /* after the report, which it would hold back by a /proc scan */
        int swept = s_sweep_group();
        if (swept)
            cr_info("serve: %d processes the job left behind ended", swept);
    }
    fflush(stderr);
    return rc == 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
    /* Not dumpable, before anything: a process of this uid (an executor,
     * when the worker is not root and every process shares its uid) could
     * otherwise open this judge's descriptors through /proc/<pid>/fd (the
     * report pipe, a serving judge's request pipe with the next job's seed)
     * or, where ptrace is allowed, read its memory (docs/sandbox.md). */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* Then keep the real stdout for the report and point fd 1 at stderr,
     * so nothing the candidate prints can forge or corrupt it. */
    int report_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (report_fd < 0 || dup2(2, 1) < 0) {
        perror("crucible-runner: report descriptor");
        return 2;
    }
    cr_log_set_role("runner");
    const int64_t t_start = cr_time_mono_ns();
    int park = 0, serve = 0, npreload = 0, prestarted = 0;
    const char *preload[2];
    /* Same variable as the config table's log-level row (the worker passes
     * its environment on), so `CRUCIBLE_LOG_LEVEL=debug` reaches the judge. */
    const char *lvl = getenv("CRUCIBLE_LOG_LEVEL");
    cr_log_level_t level;
    if (lvl && cr_log_parse_level(lvl, &level) == 0)
        cr_log_set_level(level);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            dprintf(report_fd, "%s", s_usage);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            dprintf(report_fd, "crucible-runner %s (protocol %d, backends: " S_BACKENDS ")\n",
                    CR_RUNNER_VERSION, CR_PROTOCOL_VERSION);
            return 0;
        }
        if (!strcmp(argv[i], "--measure-device")) {
#ifdef CR_WITH_CUDA
            double bw = 0, flops = 0;
            if (cr_cuda_judge_measure(&bw, &flops) != 0)
                return 1; /* the judge said why on stderr */
            dprintf(report_fd, "copy_bw %.0f peak_flops %.0f\n", bw, flops);
            return 0;
#else
            fprintf(stderr, "crucible-runner: --measure-device: built without CUDA (%s)\n",
                    S_BACKENDS);
            return 1;
#endif
        }
        if (!strcmp(argv[i], "--park")) {
            park = 1;
            continue;
        }
        if (!strcmp(argv[i], "--serve")) {
            serve = 1;
            continue;
        }
        if (!strcmp(argv[i], "--preload") && i + 1 < argc) {
            if (npreload == 2) {
                fprintf(stderr, "crucible-runner: --preload: at most 2 objects\n");
                return 2;
            }
            preload[npreload++] = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--prestart") && i + 1 < argc) {
            /* Started ahead of its job (the worker's spare, supervisor.c
             * note 5): get the slow part of the backend ready, then block on
             * stdin as usual. A failure here is left for the judge to meet
             * and report; the request has not even arrived. */
            const char *backend = argv[++i];
            prestarted = 1;
#ifdef CR_WITH_CUDA
            if (!strcmp(backend, "cuda")) {
                if (cr_cuda_judge_prestart() != 0)
                    cr_info("prestart: CUDA context not created; the judge will retry");
                else /* how much head start a spare needs (supervisor.c note 5) */
                    cr_info("prestart: cuda ready %.3f s after the runner started",
                            (double)(cr_time_mono_ns() - t_start) / 1e9);
                continue;
            }
#endif
            if (!strcmp(backend, "c") || !strcmp(backend, "torch"))
                continue;
            fprintf(stderr, "crucible-runner: --prestart: backend '%s' is not built in (%s)\n",
                    backend, S_BACKENDS);
            return 2;
        }
        fprintf(stderr, "crucible-runner: unknown argument '%s'\n%s", argv[i], s_usage);
        return 2;
    }
    if (serve && (park || npreload)) {
        fprintf(stderr, "crucible-runner: --serve takes neither --park nor --preload\n%s",
                s_usage);
        return 2;
    }
#ifdef CR_WITH_CUDA
    cr_cuda_judge_serve(serve);
#endif
    cr_torch_judge_serve(serve);
    if (getenv("CR_TORCH_DEVICE"))
        s_torch_device = strdup(getenv("CR_TORCH_DEVICE"));
    if (npreload > 0 && !prestarted) {
        fprintf(stderr, "crucible-runner: --preload needs --prestart\n%s", s_usage);
        return 2;
    }
    /* Read ahead, never loaded: an object's constructors are client code,
     * which runs only inside the sandbox, and a prestarted runner is not in
     * it yet. Reading the file now keeps it in the page cache for the load. */
    for (int k = 0; k < npreload; k++) {
        int fd = open(preload[k], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            cr_info("prestart: %s not read ahead: %s", preload[k], strerror(errno));
            continue;
        }
        posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
        close(fd);
        cr_info("prestart: %s read ahead (loaded inside the sandbox with the request)",
                preload[k]);
    }

    if (serve) {
        /* one request after another until the worker closes stdin; a
         * report that cannot be written ends it (the worker starts another) */
        int rc;
        while ((rc = s_one(report_fd, 1)) == 0) {
#ifdef CR_WITH_CUDA
            if (cr_cuda_judge_broken())
                break; /* the worker starts another judge for the next job */
#endif
        }
        _exit(rc == 1 ? 0 : 2);
    }
    int rc = s_one(report_fd, 0);
    close(report_fd);
    fflush(stderr);
    /* --park: the worker, seeing the report complete and this thread
     * asleep, kills the process and starts the next job while the kernel
     * tears this one down (supervisor.c note 6); alone, it exits by itself.
     * _exit: candidate destructors and atexit handlers never run after the
     * report, so a report is always followed by exit status 0. */
    if (rc == 0 && park)
        nanosleep(&(struct timespec){.tv_sec = S_PARK_S}, NULL);
    _exit(rc == 0 ? 0 : 2);
}
