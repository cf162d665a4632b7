/* torch_judge.c — see torch_judge.h; docs/torch.md is the whole picture.
 *
 * Design notes.
 *
 * 1. Shapes come from the reference. The judge cannot read a problem file
 *    (it runs no client code), so the reference's executor builds the
 *    model, calls get_inputs() once and forward() once at LOAD and answers
 *    with the init inputs, each input's shape, dtype and the statistics of
 *    its sample, and each output's shape and dtype (torch_proto.h). The
 *    candidate's executor is given that answer as data: the reference's
 *    code never enters the candidate's process.
 *
 * 2. Inputs are the judge's. Every tensor input of every run is drawn here
 *    from the secret seed (cr_rng_seed(seed, trial, set, input)), in one of
 *    S_NDIST distributions by trial, shaped like the reference's sample:
 *    normal with its mean and spread, uniform over its range, normal twice
 *    as wide; integer inputs uniform over their range; non-negative samples
 *    stay non-negative (log, sqrt) and constant ones constant (a mask of
 *    ones is part of the problem). They are written into the executor's
 *    sealed input arena, which the candidate can only read: on the CPU the
 *    candidate's tensors are views of it, so an in-place op on an input
 *    faults (input_mutated).
 *
 * 3. A run is three commands: STAGE (inputs become the call's arguments;
 *    on a GPU copied to the device, the L2 flushed), RUN (forward(), the
 *    only command whose time is used), FETCH (outputs copied into the
 *    output arena, poisoned before). Candidate first, then the reference on
 *    the same inputs in its own executor; the comparison and the verdict
 *    are cpu_judge.c's, so a torch candidate is held to the C backend's
 *    rules, flags and precedence.
 *
 * 4. Times. On the CPU a sample is the judge's measure of the RUN command
 *    (exec.c: the executor's CPU time, less its empty command's). On a GPU
 *    the executor also reports CUDA events around forward(); the judge
 *    accepts them only as far as its own wall clock of the command (the
 *    executor runs threads, so exec.c times by the wall) allows
 *    (torch_timing.c): never below the wall time less the harness's cost,
 *    and work the events missed beyond a bound is HACK_DETECTED /
 *    timing_mismatch. Those wall times are only ever compared pair by pair,
 *    so they are whole (exec.c's whole_times): each executor's own least
 *    cost, taken off, was a bias between the two of up to 30 us. Work that outlives RUN
 *    altogether (a harness patched from inside to return early) lands in
 *    FETCH, which waits for the outputs: a candidate's FETCH far slower than
 *    the reference's for the same bytes is timing_mismatch too; and work
 *    done ahead in STAGE (the harness patched to run forward() there) is
 *    held to the reference's STAGE the same way. On the CPU both STAGE's
 *    and FETCH's time over the reference's is counted into the samples,
 *    and both are held to FETCH's rule (cr_torch_aside_checks: a FETCH patched to
 *    compute the answer was OK at 1.37x doing 8x the work, review 16).
 *
 * 5. The head (GPU, where the runner has CUDA: env->head_queue). Before
 *    every timed RUN the judge queues an L2 flush and a spin on its own
 *    CUDA context (cuda/head.c); the GPU runs one context at a time, so the
 *    executor's start event runs when the head ends, with forward()'s
 *    launches queued behind it (the executor queues a one-cycle kernel
 *    before its start event: an event's record alone runs beside another
 *    context's kernel): the host's way to them is off the events (as in
 *    do_bench), and nothing a candidate does can take the head's place.
 *    The spin is sized from the reference's host times from the start
 *    event's record to the end event's (its word; it runs no candidate
 *    code). Not the candidate's: its claim of 0 cut the head below the
 *    reference's host path, so that the reference's events held its own
 *    launches, and a claim of 1e5 set a 3 ms head, host work of the
 *    candidate's that long hidden from the events and the pair's wall
 *    clocks alike (review 16). A candidate whose host path is longer than
 *    the head has the rest in its own events.
 *    docs/torch.md §4. */
#define _GNU_SOURCE
#include "torch_judge.h"

#include "cpu_judge.h"
#include "roofline.h"
#include "torch_proto.h"
#include "torch_timing.h"

#include "error.h"
#include "file.h"
#include "hash.h"
#include "inputs.h"
#include "log.h"
#include "stats.h"
#include "timeutil.h"
#include "topo.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* crucible_torch.py reads the control block at these offsets */
_Static_assert(offsetof(cr_exec_ctl_t, args) == 16 && sizeof(cr_exec_arg_t) == 32 &&
                   offsetof(cr_exec_arg_t, val) == 16 && offsetof(cr_exec_ctl_t, done_seq) == 1088 &&
                   offsetof(cr_exec_ctl_t, ready) == 1092 &&
                   offsetof(cr_exec_ctl_t, sandbox_net) == 1096 &&
                   offsetof(cr_exec_ctl_t, result) == 1100 &&
                   offsetof(cr_exec_ctl_t, fp_changed) == 1104 &&
                   offsetof(cr_exec_ctl_t, msg) == 1120,
               "crucible_torch.py's copy of the control block layout");

#define S_MAX_T (CR_EXEC_MAX_ARGS - 1) /* tensors per run: argument 0 is the sub-command */
/* 2 GiB per arena: memfds are sparse, so only what a case writes is memory;
 * it bounds one case's inputs (or outputs) at about 1/(2 + S_POOL) of it. */
#define S_ARENA_BYTES (2ull << 30)
#define S_NDIST 3       /* input distributions, by trial (note 2) */
#define S_POOL 4        /* timing input sets = candidate slots */
#define S_WARMUP 3      /* untimed calls per side before sampling */
/* On a GPU the judge spins on its own core for a command's done this long
 * before it sleeps: a RUN takes the head and more (note 5), past exec.c's
 * 200 us, and a sleeping judge's wake-up (tens to hundreds of microseconds,
 * more on a loaded host) would sit in every wall time the cross-check
 * compares (note 4). */
#define S_GPU_SPIN_NS 20000000
#define S_PERTURB_MIN 8 /* each timed call redraws one element in 8..32 (cpu_judge.c's rule) */
#define S_PERTURB_SPAN 25
#define S_MSG 600
/* The handlers LLVM installs the first time Triton's JIT compiles in the
 * candidate's process (LLVM's Unix Signals.inc: its interrupt, kill and info
 * signals), a false signal_handler on the H200 in session 17. Let through on
 * a GPU only, where the candidate may run threads anyway (the CUDA runtime's
 * own): a handler is code outside the call, and so is a thread, whose work
 * the timing's cross-checks catch; the timers that could fire one are the
 * second filter's (docs/torch.md §5). */
#define S_SIG(n) (1ull << ((n) - 1))
#define S_JIT_SIGNALS                                                                              \
    (S_SIG(SIGHUP) | S_SIG(SIGINT) | S_SIG(SIGTERM) | S_SIG(SIGUSR1) | S_SIG(SIGUSR2) |          \
     S_SIG(SIGILL) | S_SIG(SIGTRAP) | S_SIG(SIGABRT) | S_SIG(SIGFPE) | S_SIG(SIGBUS) |           \
     S_SIG(SIGSEGV) | S_SIG(SIGQUIT) | S_SIG(SIGSYS) | S_SIG(SIGXCPU) | S_SIG(SIGXFSZ) |         \
     S_SIG(SIGPIPE))
#define S_E_LEFTOVER (-ETIME) /* s_run: the candidate's work was still on the GPU 2 s on */

typedef struct {
    int value;                        /* 1: a plain value (sent as data, no buffer) */
    cr_dtype_t dt;
    int ndim;
    int64_t shape[CR_TASK_MAX_DIMS];
    size_t numel, bytes;
    double min, max, mean, std;       /* of the reference's sample (inputs) */
} s_tensor_t;

typedef struct {
    const cr_task_t *task;
    const cr_torch_env_t *env;
    unsigned char seed[32];
    cr_exec_t *ref, *cand;
    int nin, nbuf, nout;              /* inputs, tensor inputs, outputs */
    s_tensor_t in[S_MAX_T], out[S_MAX_T];
    int bufidx[S_MAX_T];              /* tensor inputs' indices into in[] */
    cr_task_t *cmp;                   /* outputs as `out` params, for cr_judge_compare_outputs */
    const unsigned char *spec_ref;    /* the spec regions (s_spec): the executors' event times */
    const unsigned char *spec_cand;
    json_t *answer;                   /* the reference's load answer; owned */
    int cuda;
    int head;                         /* 1: the judge's head before every timed RUN (note 5) */
    /* KernelBench's metadata, filled as the trials go */
    int passed;                       /* trials passed */
    double max_diff[CR_TASK_MAX_CASES];
    int ndiff;
    char runtime_error[S_MSG], correctness_issue[S_MSG];
    double ref_mean_us;               /* the reference's mean timed call (KernelBench's ref_runtime) */
} s_judge_t;

/* ---------------------------------------------------------------- executors */

typedef struct {
    cr_exec_opts_t o;
    cr_exec_t *x;
    int rc;
    char err[700];
} s_start_t;

static void *s_start_thread(void *arg)
{
    s_start_t *s = arg;
    s->rc = cr_exec_new(&s->o, &s->x, s->err, sizeof s->err);
    return NULL;
}

/* Serving (cr_torch_judge_serve, docs/torch.md §7): the executors of the
 * next job, started as a CPU job ends (s_spares_start) so that their seconds
 * of importing torch pass between jobs. Each has a scratch folder of its own, made here and
 * removed with it; it takes an object only when a job that matches the
 * options it was started with (device, threads, core, uid) takes it. */
static int s_serve;
static struct {
    cr_exec_t *x;
    cr_exec_opts_t o;     /* program, role and scratch_dir point into this entry */
    char program[PATH_MAX], role[16], scratch[PATH_MAX];
    int cuda;
} s_spare[2];
static unsigned s_spare_n; /* names the spares' scratch folders */

void cr_torch_judge_serve(int on)
{
    s_serve = on;
}

static void s_spare_drop(int i)
{
    cr_exec_destroy(&s_spare[i].x);
    if (s_spare[i].scratch[0]) {
        int e = cr_file_rmtree(s_spare[i].scratch);
        if (e != 0)
            cr_warn("torch: cannot remove %s: %s", s_spare[i].scratch, cr_strerror(e));
    }
    s_spare[i].scratch[0] = '\0';
}

/* The options a job's executor of role i gets. */
static cr_exec_opts_t s_opts(const s_judge_t *J, const Crucible__RunnerRequest *req, int i)
{
    static const char *const roles[] = {"reference", "candidate"};
    const char *objs[] = {req->reference_so, req->candidate_so};
    return (cr_exec_opts_t){.program = J->env->harness, .role = roles[i], .object = objs[i],
                            .scratch_dir = req->scratch_dir, .uid = req->sandbox_uid,
                            .threads = J->cuda, .cap_memory = !J->cuda,
                            .cpu = J->env->exec_cpu,
                            .spin_ns = J->cuda && J->env->judge_cpu >= 0 ? S_GPU_SPIN_NS : 0,
                            .wall_to_done = 1,
                            .whole_times = J->cuda, /* note 4: only ever compared pair by pair */
                            .ro_bytes = S_ARENA_BYTES,
                            .rw_bytes = S_ARENA_BYTES};
}

/* Serving: starts the next job's executors like this job's (its options),
 * each in a new scratch folder beside the job's, with no object yet. */
static void s_spares_start(const s_judge_t *J, const Crucible__RunnerRequest *req)
{
    /* CPU jobs only: a GPU executor's import makes a CUDA context, which
     * would overlap the next job's timing whatever its backend (judge.md §6) */
    if (!s_serve || J->cuda || !req->scratch_dir || !req->scratch_dir[0])
        return;
    for (int i = 0; i < 2; i++) {
        if (s_spare[i].x)
            continue;
        cr_exec_opts_t o = s_opts(J, req, i);
        snprintf(s_spare[i].program, sizeof s_spare[i].program, "%s", o.program);
        snprintf(s_spare[i].role, sizeof s_spare[i].role, "%s", o.role);
        const char *slash = strrchr(req->scratch_dir, '/');
        int dir = slash ? (int)(slash - req->scratch_dir) : 1;
        snprintf(s_spare[i].scratch, sizeof s_spare[i].scratch, "%.*s/torch-%d-%u", dir,
                 slash ? req->scratch_dir : ".", (int)getpid(), ++s_spare_n);
        char err[700] = "";
        uid_t su = (uid_t)o.uid;
        if (mkdir(s_spare[i].scratch, 0700) != 0 ||
            (geteuid() == 0 && su > 0 && chown(s_spare[i].scratch, su, (gid_t)su) != 0)) {
            cr_info("torch: no spare %s executor: %s: %s", o.role, s_spare[i].scratch,
                    strerror(errno));
            s_spare_drop(i);
            continue;
        }
        o.program = s_spare[i].program;
        o.role = s_spare[i].role;
        o.scratch_dir = s_spare[i].scratch;
        o.object = NULL;
        s_spare[i].o = o;
        s_spare[i].cuda = J->cuda;
        if (cr_exec_start(&o, &s_spare[i].x, err, sizeof err) != 0) {
            cr_info("torch: no spare %s executor: %s", o.role, err);
            s_spare_drop(i);
        }
    }
}

/* Serving: the spare of role i made ready for this job, its object given,
 * in *x; 0, or -1 when there is none that fits (then it is dropped). */
static int s_spare_take(const s_judge_t *J, const cr_exec_opts_t *o, int i, cr_exec_t **x)
{
    const cr_exec_opts_t *so = &s_spare[i].o;
    if (!s_spare[i].x)
        return -1;
    char err[700] = "";
    if (s_spare[i].cuda != J->cuda || so->threads != o->threads ||
        so->cap_memory != o->cap_memory || so->cpu != o->cpu || so->uid != o->uid ||
        cr_exec_ready(s_spare[i].x, err, sizeof err) != 0 ||
        cr_exec_set_object(s_spare[i].x, o->object, err, sizeof err) != 0) {
        if (err[0])
            cr_info("torch: the spare %s executor is not used: %s", o->role, err);
        s_spare_drop(i);
        return -1;
    }
    *x = s_spare[i].x;
    s_spare[i].x = NULL; /* its scratch folder goes when the job is done (s_spares_done) */
    return 0;
}

void cr_torch_judge_drop_spares(void)
{
    for (int i = 0; i < 2; i++)
        if (s_spare[i].x)
            s_spare_drop(i);
}

/* Serving: removes the scratch folders of the spares this job took. */
static void s_spares_done(void)
{
    for (int i = 0; i < 2; i++)
        if (!s_spare[i].x && s_spare[i].scratch[0])
            s_spare_drop(i);
}

/* Starts the reference's and the candidate's executors at once: each
 * imports torch before entering its sandbox, seconds that overlap; when
 * serving, the spares started as the last job ended, where they fit. */
static int s_start(s_judge_t *J, const Crucible__RunnerRequest *req, Crucible__RewardRecord *rec)
{
    s_start_t s[2];
    int have[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        memset(&s[i], 0, sizeof s[i]);
        s[i].o = s_opts(J, req, i);
        have[i] = s_serve && s_spare_take(J, &s[i].o, i, &s[i].x) == 0;
    }
    /* the executors read it before their sandbox: the GPU is opened there */
    setenv("CR_TORCH_DEVICE", J->cuda ? "cuda" : "cpu", 1);
    pthread_t th;
    int threaded = !have[0] && !have[1] && pthread_create(&th, NULL, s_start_thread, &s[0]) == 0;
    if (!threaded && !have[0])
        s_start_thread(&s[0]);
    if (!have[1])
        s_start_thread(&s[1]);
    if (threaded)
        pthread_join(th, NULL);
    cr_info("torch executors: %s", have[0] && have[1] ? "both started ahead"
                                   : have[0] || have[1] ? "one started ahead"
                                                        : "started now");
    J->ref = s[0].x;
    J->cand = s[1].x;
    for (int i = 0; i < 2; i++) {
        if (s[i].rc != 0) {
            cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "%s executor: %s",
                          s[i].o.role, s[i].err);
            return -1;
        }
        cr_exec_set_deadline(s[i].x, J->env->deadline_ns);
    }
    rec->sandboxed_net = cr_exec_sandbox_net(J->cand);
    return 0;
}

/* Frees x's arena buffers but the spec region at the start of its output
 * arena (torch_proto.h): the first allocation after every cr_exec_reset,
 * so always at offset 0. Returns it. */
static unsigned char *s_spec(cr_exec_t *x)
{
    cr_exec_reset(x);
    return cr_exec_alloc(x, 0, CR_TORCH_SPEC_BYTES);
}

/* A new case: both executors' buffers freed. */
static void s_new_case(s_judge_t *J)
{
    J->spec_ref = s_spec(J->ref);
    J->spec_cand = s_spec(J->cand);
}

static int s_put_json(cr_exec_t *x, json_t *o)
{
    unsigned char *sp = s_spec(x);
    char *text = json_dumps(o, JSON_COMPACT);
    int rc = text && sp && strlen(text) < CR_TORCH_REQ_LEN ? 0 : -ENOMEM;
    if (rc == 0)
        memcpy(sp + CR_TORCH_REQ_OFF, text, strlen(text) + 1);
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- the spec (note 1) */

static int s_tensor(json_t *o, s_tensor_t *t, int input, char *err, size_t len)
{
    memset(t, 0, sizeof *t);
    if (input && json_object_get(o, "value")) {
        t->value = 1;
        return 0;
    }
    json_t *shape = json_object_get(o, "shape");
    const char *dt = json_string_value(json_object_get(o, "dtype"));
    if (!json_is_array(shape) || !dt || cr_dtype_parse(dt, &t->dt) != 0 ||
        json_array_size(shape) > CR_TASK_MAX_DIMS) {
        snprintf(err, len, "a tensor needs a shape of at most %d dims and a known dtype",
                 CR_TASK_MAX_DIMS);
        return CR_E_TASK;
    }
    t->ndim = (int)json_array_size(shape);
    t->numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        json_t *v = json_array_get(shape, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > (1ll << 40)) {
            snprintf(err, len, "dimension %d is not a size", d);
            return CR_E_TASK;
        }
        t->shape[d] = json_integer_value(v);
        if (t->shape[d] && t->numel > (SIZE_MAX >> 8) / (size_t)t->shape[d]) {
            snprintf(err, len, "too many elements");
            return CR_E_TASK;
        }
        t->numel *= (size_t)t->shape[d];
    }
    t->bytes = t->numel * cr_dtype_size(t->dt);
    if (t->bytes > S_ARENA_BYTES / (2 + S_POOL)) {
        snprintf(err, len, "a tensor of %zu bytes: more than a case may hold (%llu)", t->bytes,
                 (unsigned long long)(S_ARENA_BYTES / (2 + S_POOL)));
        return CR_E_TASK;
    }
    t->min = json_number_value(json_object_get(o, "min"));
    t->max = json_number_value(json_object_get(o, "max"));
    t->mean = json_number_value(json_object_get(o, "mean"));
    t->std = json_number_value(json_object_get(o, "std"));
    if (!isfinite(t->min) || !isfinite(t->max) || !isfinite(t->mean) || !isfinite(t->std)) {
        snprintf(err, len, "get_inputs() gave a tensor with non-finite values");
        return CR_E_TASK;
    }
    return 0;
}

/* Parses the reference's answer. 0, or CR_E_TASK with err. */
static int s_parse_answer(s_judge_t *J, const char *text, char *err, size_t len)
{
    json_error_t je;
    J->answer = json_loads(text, 0, &je);
    json_t *ins = J->answer ? json_object_get(J->answer, "inputs") : NULL;
    json_t *outs = J->answer ? json_object_get(J->answer, "outputs") : NULL;
    if (!json_is_array(ins) || !json_is_array(outs) ||
        !json_is_array(json_object_get(J->answer, "init_inputs"))) {
        snprintf(err, len, "the reference's executor gave no usable description (%s)",
                 J->answer ? "fields missing" : je.text);
        return CR_E_TASK;
    }
    if (json_array_size(ins) > S_MAX_T || json_array_size(outs) > S_MAX_T ||
        json_array_size(outs) == 0) {
        snprintf(err, len, "get_inputs() and forward() may give 1 to %d tensors each", S_MAX_T);
        return CR_E_TASK;
    }
    J->nin = (int)json_array_size(ins);
    J->nout = (int)json_array_size(outs);
    char why[200];
    for (int i = 0; i < J->nin; i++) {
        if (s_tensor(json_array_get(ins, (size_t)i), &J->in[i], 1, why, sizeof why) != 0) {
            snprintf(err, len, "get_inputs()[%d]: %s", i, why);
            return CR_E_TASK;
        }
        if (!J->in[i].value)
            J->bufidx[J->nbuf++] = i;
    }
    for (int i = 0; i < J->nout; i++)
        if (s_tensor(json_array_get(outs, (size_t)i), &J->out[i], 0, why, sizeof why) != 0) {
            snprintf(err, len, "forward() output %d: %s", i, why);
            return CR_E_TASK;
        }
    /* the outputs as a task of `out` params: the comparison is cpu_judge.c's */
    if (!(J->cmp = calloc(1, sizeof *J->cmp)))
        return -ENOMEM;
    J->cmp->nparams = J->nout;
    J->cmp->atol = J->task->atol;
    J->cmp->rtol = J->task->rtol;
    for (int i = 0; i < J->nout; i++) {
        cr_param_t *p = &J->cmp->params[i];
        snprintf(p->name, sizeof p->name, J->nout == 1 ? "output" : "output%d", i);
        p->role = CR_ROLE_OUT;
        p->dtype = J->out[i].dt;
        p->is_pointer = 1;
    }
    return 0;
}

/* LOAD of both executors: the reference describes, the candidate is told. */
static int s_load(s_judge_t *J, Crucible__RewardRecord *rec)
{
    const char *prec = J->task->precision == CR_DT_F16    ? "fp16"
                       : J->task->precision == CR_DT_BF16 ? "bf16"
                                                          : "fp32";
    /* the weights' seed: KernelBench seeds both models alike (42), so that a
     * ModelNew with the same parameters gets the same weights. Not secret. */
    json_t *req = json_pack("{s:s, s:s, s:i, s:b, s:b}", "precision", prec, "device",
                            J->cuda ? "cuda" : "cpu", "init_seed", 42, "own_kernel",
                            J->task->own_kernel, /* counting costs a frame a call: only then */
                            "judge_flush", J->head); /* its STAGE then flushes nothing */
    char err[S_MSG] = "";
    /* the reference's executor compiles its baseline at LOAD, untimed */
    if (req && J->task->compile_mode)
        json_object_set_new(req, "compile_mode", json_string(J->task->compile_mode));
    if (!req || s_put_json(J->ref, req) != 0) {
        json_decref(req);
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "load request: no memory");
        return -1;
    }
    int fp = 0;
    char why[160];
    if (cr_exec_load(J->ref, &fp, why, sizeof why) != 0) {
        cr_judge_exec_verdict(rec, J->ref, 0);
        json_decref(req);
        return -1;
    }
    const unsigned char *sp = s_spec(J->ref);
    char *ans = strndup((const char *)sp + CR_TORCH_ANS_OFF, CR_TORCH_ANS_LEN);
    int rc = ans ? s_parse_answer(J, ans, err, sizeof err) : -ENOMEM;
    free(ans);
    if (rc != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INVALID_TASK, "the task is broken: %s",
                          err);
        json_decref(req);
        return -1;
    }
    const char *dev = json_string_value(json_object_get(J->answer, "device"));
    if (dev && !strncmp(dev, "cuda:", 5)) /* the GPU's name; on the CPU runner.c's "cpu:<model>" */
        cr_judge_set_str(&rec->device, dev);
    json_object_del(req, "compile_mode");
    json_object_set(req, "init_inputs", json_object_get(J->answer, "init_inputs"));
    json_object_set(req, "inputs", json_object_get(J->answer, "inputs"));
    json_object_set(req, "outputs", json_object_get(J->answer, "outputs"));
    rc = s_put_json(J->cand, req);
    json_decref(req);
    if (rc != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INVALID_TASK, "the task is broken: its "
                          "init inputs and specs do not fit %u bytes", CR_TORCH_REQ_LEN);
        return -1;
    }
    if (cr_exec_load(J->cand, &fp, why, sizeof why) != 0) {
        const cr_exec_fault_t *f = cr_exec_fault(J->cand);
        if (f->kind == CR_EXEC_LOAD)
            snprintf(J->runtime_error, sizeof J->runtime_error, "%s", f->msg);
        cr_judge_exec_verdict(rec, J->cand, 1);
        return -1;
    }
    s_new_case(J);
    return 0;
}

/* ---------------------------------------------------------------- one run (note 3) */

/* One sub-command on x: 0 (done), a CR_TORCH_R_* code with msg, or
 * CR_E_EXEC (the executor stopped serving). */
static int s_cmd(cr_exec_t *x, uint32_t sub, void *const *bufs, int nb, int value, double *us,
                 char *msg, size_t len)
{
    cr_exec_arg_t a[CR_EXEC_MAX_ARGS];
    memset(a, 0, sizeof a);
    a[0].kind = CR_EXEC_ARG_VALUE;
    memcpy(a[0].val, &sub, sizeof sub);
    for (int i = 0; i < nb; i++)
        if (cr_exec_arg_ptr(x, bufs[i], &a[1 + i]) != 0)
            return -EINVAL; /* only a judge bug puts a heap pointer here */
    unsigned n = (unsigned)nb + 1;
    if (value >= 0) { /* a u32 after the buffers (RUN's: 1 = the compiled baseline) */
        uint32_t v = (uint32_t)value;
        a[n].kind = CR_EXEC_ARG_VALUE;
        memcpy(a[n++].val, &v, sizeof v);
    }
    if (cr_exec_call(x, a, n, us, NULL, NULL, 0) != 0)
        return CR_E_EXEC;
    return cr_exec_result(x, msg, len);
}

/* A timed run's figures: the judge's time of each command, and the
 * executor's claims (note 4). */
typedef struct {
    double head_us;                 /* in: the judge's spin before RUN; < 0 no head */
    int baseline;                   /* in: run the reference's compiled baseline */
    double stage_us, run_us, fetch_us;
    double evt_us, host_us;         /* the executor's event time and host time; < 0 none */
    double probe_us;                /* the judge's idle probe after FETCH (in run_us too) */
    double freeze_us;               /* RUN's stop, outside run_us (exec.c note 3): logged */
    double stage_wait, run_wait, fetch_wait; /* each command's wait for a core (< 0 none) */
    int64_t run_t0, run_td;         /* RUN's window, CLOCK_MONOTONIC ns: logged */
} s_call_t;

static double s_claim(const unsigned char *spec, size_t off)
{
    double e;
    memcpy(&e, spec + off, sizeof e);
    return isfinite(e) ? e : -1;
}

/* STAGE, RUN, FETCH; with c (timing) each timed and, with c->head_us >= 0,
 * the judge's head queued before RUN (note 5). Same returns as s_cmd; a
 * head that failed is -EIO with msg. */
static int s_run(const s_judge_t *J, cr_exec_t *x, const unsigned char *spec, void *const *in,
                 void *const *out, s_call_t *c, char *msg, size_t len)
{
    int rc = s_cmd(x, CR_TORCH_STAGE, in, J->nbuf, -1, c ? &c->stage_us : NULL, msg, len);
    if (c)
        c->stage_wait = cr_exec_wait_us(x);
    if (rc == 0 && c && c->head_us >= 0 && J->env->head_queue(c->head_us, msg, len) != 0)
        rc = -EIO;
    if (rc == 0)
        rc = s_cmd(x, CR_TORCH_RUN, NULL, 0, c && c->baseline, c ? &c->run_us : NULL, msg, len);
    if (rc == 0 && c) {
        c->freeze_us = cr_exec_freeze_us(x);
        c->run_wait = cr_exec_wait_us(x);
        cr_exec_last_window(x, &c->run_t0, &c->run_td);
    }
    if (rc == 0)
        rc = s_cmd(x, CR_TORCH_FETCH, out, J->nout, -1, c ? &c->fetch_us : NULL, msg, len);
    if (rc == 0 && c) { /* RUN's claims, written by its FETCH (torch_proto.h) */
        c->fetch_wait = cr_exec_wait_us(x);
        c->evt_us = s_claim(spec, CR_TORCH_EVT_OFF);
        c->host_us = s_claim(spec, CR_TORCH_HOST_OFF);
    }
    /* note 5: what it left queued on the GPU delays the judge's probe, and
     * counts in its call's wall time (both sides alike: the pair cancels an
     * idle GPU's probe) */
    double pu = 0;
    int pr = rc == 0 && c && c->head_us >= 0 && J->env->head_probe
                 ? J->env->head_probe(&pu, msg, len)
                 : 0;
    if (pr > 0)
        rc = S_E_LEFTOVER;
    else if (pr < 0)
        rc = -EIO;
    else if (c) {
        c->run_us += pu;
        c->probe_us = pu;
    }
    return rc;
}

/* ---------------------------------------------------------------- inputs (note 2) */

static cr_dist_t s_dist(const s_tensor_t *t, int trial)
{
    cr_dist_t d;
    double lo = t->min, hi = t->max, s = t->std > 0 ? t->std : 1;
    if (!cr_dtype_is_float(t->dt)) {
        d.kind = CR_DIST_INT;
        d.a = floor(lo);
        d.b = floor(hi) + 1;
        return d;
    }
    if (hi <= lo) { /* a constant: part of the problem */
        d.kind = CR_DIST_UNIFORM;
        d.a = d.b = lo;
        return d;
    }
    int k = trial % S_NDIST;
    if (lo >= 0) { /* non-negative stays non-negative */
        d.kind = CR_DIST_UNIFORM;
        d.a = lo;
        d.b = k == 2 ? hi * 2 : hi;
        return d;
    }
    d.kind = k == 1 ? CR_DIST_UNIFORM : CR_DIST_NORMAL;
    d.a = k == 1 ? lo : t->mean;
    d.b = k == 1 ? hi : k == 2 ? 2 * s : s;
    return d;
}

/* Heap buffers for the tensor inputs of one set, drawn from the seed. */
static int s_draw(const s_judge_t *J, int trial, uint32_t set, void **buf)
{
    for (int b = 0; b < J->nbuf; b++) {
        const s_tensor_t *t = &J->in[J->bufidx[b]];
        if (!(buf[b] = malloc(t->bytes ? t->bytes : 1)))
            return -ENOMEM;
        cr_rng_t rng;
        cr_rng_seed(&rng, J->seed, (uint32_t)trial, set, (uint32_t)b);
        cr_dist_t d = s_dist(t, trial);
        cr_inputs_fill(buf[b], t->dt, t->numel, &d, &rng);
    }
    return 0;
}

static void s_free_all(void **buf, int n)
{
    for (int i = 0; i < n; i++) {
        free(buf[i]);
        buf[i] = NULL;
    }
}

/* Carves one set's inputs (ro) or outputs out of x's arenas. */
static int s_carve(const s_judge_t *J, cr_exec_t *x, int ro, void **p)
{
    int n = ro ? J->nbuf : J->nout;
    for (int i = 0; i < n; i++) {
        size_t bytes = ro ? J->in[J->bufidx[i]].bytes : J->out[i].bytes;
        if (!(p[i] = cr_exec_alloc(x, ro, bytes)))
            return -ENOMEM;
    }
    return 0;
}

static void s_put_inputs(const s_judge_t *J, void **dst, void *const *src)
{
    for (int b = 0; b < J->nbuf; b++)
        memcpy(dst[b], src[b], J->in[J->bufidx[b]].bytes);
}

static void s_poison(const s_judge_t *J, void **out)
{
    for (int i = 0; i < J->nout; i++)
        cr_inputs_poison(out[i], J->out[i].dt, J->out[i].numel);
}

static uint64_t s_hash(const s_judge_t *J, void *const *in)
{
    uint64_t h = 0;
    for (int b = 0; b < J->nbuf; b++)
        h = h * 1000003u ^ cr_hash64(in[b], J->in[J->bufidx[b]].bytes);
    return h;
}

/* ---------------------------------------------------------------- verification */

/* What a candidate's client error means: a raise in forward() is a
 * RUNTIME_ERROR (KernelBench's runtime_error), a wrong count or shape an
 * INCORRECT (its correctness_issue). */
static void s_client_error(s_judge_t *J, Crucible__RewardRecord *rec, int c, int code,
                           const char *msg)
{
    if (code == CR_TORCH_R_OUTPUT) {
        snprintf(J->correctness_issue, sizeof J->correctness_issue, "%s", msg);
        cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_INCORRECT, "case %d: %s", c, msg);
    } else {
        snprintf(J->runtime_error, sizeof J->runtime_error, "%s", msg);
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR,
                          "case %d: the candidate raised: %s", c, msg);
    }
}

/* Judge failures (no memory, a broken reference): 1 = stop. */
static int s_judge_error(s_judge_t *J, Crucible__RewardRecord *rec, int rc, int ref_code,
                         const char *msg)
{
    if (rc == CR_E_EXEC) {
        int cand = cr_exec_fault(J->cand)->kind != CR_EXEC_OK;
        cr_judge_exec_verdict(rec, cand ? J->cand : J->ref, cand);
    } else if (ref_code) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INVALID_TASK,
                          "the task is broken: the reference: %s", msg);
    } else {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "torch judge: %s%s%s",
                      rc == -ENOMEM ? "out of memory" : cr_strerror(rc), msg && *msg ? ": " : "",
                      msg ? msg : "");
    }
    return 1;
}

/* The roofline floor of a task that declares "bytes" or "flops" (docs/torch.md
 * §4; roofline.h): on the CPU the C judge's (the host's copy bandwidth and
 * peak, one core), on a GPU the device's copy bandwidth and a rate above its
 * peak, both measured at worker start; the verdict is cr_judge_roofline's. */
static void s_roofline(const s_judge_t *J, Crucible__RewardRecord *rec,
                       Crucible__BenchResult *br)
{
    double bytes = 0, flops = 0;
    cr_task_bytes(J->task, 0, &bytes);
    cr_task_flops(J->task, 0, &flops);
    char basis[200];
    if (J->cuda) {
        double bw = J->env->device_copy_bw * CR_JUDGE_GPU_BW_MARGIN;
        double rate = J->env->device_peak_flops;
        br->floor_us = cr_judge_gpu_floor_us(bytes, flops, bw, rate);
        snprintf(basis, sizeof basis, "%.4g bytes at %.0f GB/s, %.2fx the GPU's copy "
                 "bandwidth; %.4g flops at %.0f TFLOP/s", bytes, bw / 1e9,
                 CR_JUDGE_GPU_BW_MARGIN, flops, rate / 1e12);
    } else {
        br->floor_us = cr_judge_host_floor_us(bytes, flops, J->env->host_copy_bw, 1);
        cr_judge_host_basis(basis, sizeof basis, bytes, flops, J->env->host_copy_bw, 1);
    }
    cr_judge_roofline(rec, 0, br->median_us, br->floor_us, basis, J->cuda ? "GPU" : "machine");
}

/* A task with "own_kernel" (docs/torch.md §4): the candidate's executor
 * says how many calls of its own kernels (load_inline functions, Triton
 * launches) its last RUN made. Its word, so it is only used against it: none
 * is no_kernel_launched; "cannot count" (an extension called through
 * torch.ops) lets it pass. */
static void s_own_kernel(const s_judge_t *J, Crucible__RewardRecord *rec, int c)
{
    uint32_t n;
    memcpy(&n, J->spec_cand + CR_TORCH_OWN_OFF, sizeof n);
    if (n != 0)
        return;
    cr_judge_flag(rec, "no_kernel_launched");
    cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                  "case %d: the candidate ran no kernel of its own (the task's own_kernel asks "
                  "for a load_inline extension's function or a Triton kernel in every call; it "
                  "called only torch's operators)", c);
}

/* One run of trial c on input set `set` (0, or 1: new inputs at new
 * addresses). Returns 1 when it passed, 0 when not (verdict on rec), -1
 * when judging must stop (verdict on rec). */
static int s_verify_set(s_judge_t *J, Crucible__RewardRecord *rec, Crucible__CaseResult *cr,
                        int c, uint32_t set)
{
    void *pristine[S_MAX_T] = {0}, *cin[S_MAX_T], *cout[S_MAX_T], *rin[S_MAX_T],
         *rout[S_MAX_T];
    char msg[S_MSG] = "";
    int ret = -1, rc;
    if ((rc = s_draw(J, c, set, pristine)) != 0 || (rc = s_carve(J, J->cand, 1, cin)) ||
        (rc = s_carve(J, J->cand, 0, cout)) || (rc = s_carve(J, J->ref, 1, rin)) ||
        (rc = s_carve(J, J->ref, 0, rout))) {
        s_judge_error(J, rec, rc, 0, "");
        goto done;
    }
    s_put_inputs(J, cin, pristine);
    s_poison(J, cout);
    uint64_t h0 = s_hash(J, pristine);
    /* the candidate first, on inputs the reference has not seen yet */
    rc = s_run(J, J->cand, J->spec_cand, cin, cout, NULL, msg, sizeof msg);
    if (rc == CR_E_EXEC && cr_exec_fault_ptr(J->cand)) {
        cr_judge_check_t k = {.all_written = 1, .first_bad = -1};
        snprintf(k.msg, sizeof k.msg, "an input was written by the candidate (inputs are "
                 "mapped read-only: the store faulted)");
        cr_judge_apply_run(rec, c, &k, set == 1);
        cr_judge_set_str(&cr->message, k.msg);
        goto done;
    }
    if (rc == CR_E_EXEC || rc < CR_TORCH_R_OUTPUT) {
        s_judge_error(J, rec, rc, 0, msg);
        goto done;
    }
    if (rc != 0) {
        s_client_error(J, rec, c, rc, msg);
        cr_judge_set_str(&cr->message, msg);
        goto done;
    }
    if (J->task->own_kernel)
        s_own_kernel(J, rec, c);
    cr_judge_check_t k;
    memset(&k, 0, sizeof k);
    k.inputs_unchanged = s_hash(J, cin) == h0;
    int threads = cr_exec_threads(J->cand);
    k.background = !J->cuda && threads > 1;
    k.handlers = cr_exec_extra_handlers(J->cand) & ~(J->cuda ? S_JIT_SIGNALS : 0);
    /* then the reference, in its own process, on the pristine copy */
    s_put_inputs(J, rin, pristine);
    s_poison(J, rout);
    rc = s_run(J, J->ref, J->spec_ref, rin, rout, NULL, msg, sizeof msg);
    if (rc != 0) {
        s_judge_error(J, rec, rc, rc != CR_E_EXEC, msg);
        goto done;
    }
    size_t numel[S_MAX_T];
    for (int i = 0; i < J->nout; i++)
        numel[i] = J->out[i].numel;
    char kmsg[sizeof k.msg];
    int iu = k.inputs_unchanged, bg = k.background;
    uint64_t hd = k.handlers;
    cr_judge_compare_outputs(J->cmp, cout, rout, numel, &k);
    k.inputs_unchanged = iu, k.background = bg, k.handlers = hd;
    if (!iu) {
        snprintf(kmsg, sizeof kmsg, "an input was modified by the candidate");
        snprintf(k.msg, sizeof k.msg, "%s", kmsg);
    }
    int ok = cr_judge_apply_run(rec, c, &k, set == 1);
    cr->max_abs_err = fmax(cr->max_abs_err, k.max_abs);
    cr->max_rel_err = fmax(cr->max_rel_err, k.max_rel);
    cr->mismatches += k.mismatches;
    cr->inputs_unchanged = cr->inputs_unchanged && iu;
    cr->all_written = cr->all_written && k.all_written;
    if (k.mismatches && cr->first_bad_index < 0)
        cr->first_bad_index = k.first_bad;
    if (!ok && k.msg[0])
        cr_judge_set_str(&cr->message, k.msg);
    if (!ok && k.mismatches && J->ndiff < CR_TASK_MAX_CASES) {
        J->max_diff[J->ndiff++] = k.max_abs;
        snprintf(J->correctness_issue, sizeof J->correctness_issue, "Output mismatch");
    }
    ret = ok;
    /* a hack ends judging; a plain mismatch lets the other trials count */
    if (!ok && rec->status == CRUCIBLE__STATUS__STATUS_HACK_DETECTED)
        ret = -1;
done:
    s_free_all(pristine, J->nbuf);
    return ret;
}

static int s_verify(s_judge_t *J, Crucible__RewardRecord *rec)
{
    const int T = J->task->trials;
    int64_t t0 = cr_time_mono_ns();
    Crucible__VerifyResult *vr = malloc(sizeof *vr);
    if (!vr)
        return -ENOMEM;
    crucible__verify_result__init(vr);
    rec->verify = vr;
    if (!(vr->cases = calloc((size_t)T, sizeof *vr->cases)))
        return -ENOMEM;
    vr->ok = 1;
    for (int c = 0; c < T; c++) {
        Crucible__CaseResult *cr = malloc(sizeof *cr);
        if (!cr)
            return -ENOMEM;
        crucible__case_result__init(cr);
        vr->cases[vr->n_cases++] = cr;
        cr->index = (uint32_t)c;
        cr->inputs_unchanged = cr->all_written = 1;
        cr->first_bad_index = -1;
        s_new_case(J);
        int ok = s_verify_set(J, rec, cr, c, 0);
        if (ok == 1) {
            ok = s_verify_set(J, rec, cr, c, 1); /* set 0 stays allocated: new addresses */
            cr->second_run_passed = ok == 1;
        }
        cr->passed = ok == 1;
        vr->ok &= cr->passed;
        J->passed += cr->passed;
        if (ok < 0)
            break;
    }
    vr->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
    return 0;
}

/* ---------------------------------------------------------------- timing */

/* Redraws one element in every m of each tensor input (cpu_judge.c's rule):
 * no two timed calls see the same inputs. */
static void s_perturb(const s_judge_t *J, void **in, cr_rng_t *rng, int trial)
{
    for (int b = 0; b < J->nbuf; b++) {
        const s_tensor_t *t = &J->in[J->bufidx[b]];
        if (t->numel == 0)
            continue;
        size_t m = S_PERTURB_MIN + cr_rng_next(rng) % S_PERTURB_SPAN;
        if (m > t->numel)
            m = t->numel;
        cr_dist_t d = s_dist(t, trial);
        size_t es = cr_dtype_size(t->dt);
        for (size_t i = cr_rng_next(rng) % m; i < t->numel; i += m)
            cr_inputs_fill((char *)in[b] + i * es, t->dt, 1, &d, rng);
    }
}

static int s_time(s_judge_t *J, Crucible__RewardRecord *rec)
{
    const int64_t t0 = cr_time_mono_ns();
    void *data[S_POOL][S_MAX_T], *slot_in[S_POOL][S_MAX_T], *slot_out[S_POOL][S_MAX_T];
    void *rin[S_MAX_T], *rout[S_MAX_T], *cur[S_MAX_T] = {0};
    cr_torch_samples_t S = {0};
    char msg[S_MSG] = "";
    int rc = -ENOMEM;
    memset(data, 0, sizeof data);
    Crucible__ProfileResult *pr = malloc(sizeof *pr);
    Crucible__BenchResult *br = malloc(sizeof *br);
    if (!pr || !br) {
        free(pr);
        free(br);
        return s_judge_error(J, rec, -ENOMEM, 0, ""), -ENOMEM;
    }
    crucible__profile_result__init(pr);
    crucible__bench_result__init(br);
    rec->profile = pr;
    pr->cases = malloc(sizeof *pr->cases);
    if (pr->cases)
        pr->cases[pr->n_cases++] = br;
    else
        free(br);
    pr->cache_flushed = J->cuda;
    cr_judge_set_str(&pr->clock_policy, "observe");
    cr_judge_set_str(&pr->ref_policy, "interleaved");
    if (J->task->compile_mode) {
        char b[64];
        snprintf(b, sizeof b, "torch.compile:%s", J->task->compile_mode);
        cr_judge_set_str(&pr->baseline, b);
    }
    S.a = malloc(9 * CR_JUDGE_MAX_SAMPLES * sizeof *S.a);
    if (!pr->cases || !S.a)
        goto fail;
    S.b = S.a + CR_JUDGE_MAX_SAMPLES;
    S.aw = S.b + CR_JUDGE_MAX_SAMPLES;
    S.bw = S.aw + CR_JUDGE_MAX_SAMPLES;
    S.fa = S.bw + CR_JUDGE_MAX_SAMPLES;
    S.fb = S.fa + CR_JUDGE_MAX_SAMPLES;
    S.sa = S.fb + CR_JUDGE_MAX_SAMPLES;
    S.sb = S.sa + CR_JUDGE_MAX_SAMPLES;
    S.head = S.sb + CR_JUDGE_MAX_SAMPLES;
    double span[CR_TORCH_HEAD_KEEP], head = CR_TORCH_HEAD_START_US;
    size_t nspan = 0;
    s_new_case(J);
    for (int s = 0; s < S_POOL; s++)
        if (s_draw(J, 0, CR_JUDGE_SET_TIMED + (uint32_t)s, data[s]) ||
            s_carve(J, J->cand, 1, slot_in[s]) || s_carve(J, J->cand, 0, slot_out[s]))
            goto fail;
    if (s_carve(J, J->ref, 1, rin) || s_carve(J, J->ref, 0, rout) || s_draw(J, 0, 0, cur))
        goto fail;
    if (J->env->judge_cpu >= 0 && cr_topo_pin_self(J->env->judge_cpu) != 0)
        cr_debug("could not pin the judge to cpu %d", J->env->judge_cpu);
    cr_rng_t perturb, pick;
    cr_rng_seed(&perturb, J->seed, 0, 0xfffffffeu, 0);
    cr_rng_seed(&pick, J->seed, 0, CR_JUDGE_SET_SAMPLING, 0);
    size_t numel[S_MAX_T];
    for (int i = 0; i < J->nout; i++)
        numel[i] = J->out[i].numel;
    cr_stats_online_t oa = {0}, ob = {0};
    const double budget = J->env->time_budget_s;
    int64_t ts = 0;
    for (size_t i = 0; i < CR_JUDGE_MAX_SAMPLES + S_WARMUP; i++) {
        int warm = i < S_WARMUP;
        if (i == S_WARMUP)
            ts = cr_time_mono_ns();
        size_t q = warm ? i : i - S_WARMUP;
        int s = (int)(q % S_POOL), k = (int)((q % S_POOL + q / S_POOL) % S_POOL);
        for (int b = 0; b < J->nbuf; b++)
            memcpy(cur[b], data[s][b], J->in[J->bufidx[b]].bytes);
        s_perturb(J, cur, &perturb, 0);
        s_put_inputs(J, slot_in[k], cur);
        s_poison(J, slot_out[k]);
        s_call_t ca = {.head_us = J->head ? head : -1}, cb = ca;
        cb.baseline = J->task->compile_mode != NULL; /* the reference's side of each pair */
        rc = s_run(J, J->cand, J->spec_cand, slot_in[k], slot_out[k], &ca, msg, sizeof msg);
        if (rc == CR_E_EXEC && cr_exec_fault_ptr(J->cand)) {
            cr_judge_flag(rec, "input_mutated");
            cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "timing: an input was "
                          "written by the candidate (inputs are mapped read-only: the store "
                          "faulted)");
            rc = 0;
            goto out;
        }
        if (rc == S_E_LEFTOVER) {
            cr_judge_flag(rec, "timing_mismatch");
            cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "timing: %s", msg);
            rc = 0;
            goto out;
        }
        if (rc != 0) {
            if (rc <= CR_TORCH_R_LOAD && rc >= CR_TORCH_R_OUTPUT)
                s_client_error(J, rec, 0, rc, msg), rc = 0;
            else
                s_judge_error(J, rec, rc, 0, msg), rc = 0;
            goto out;
        }
        s_put_inputs(J, rin, cur);
        s_poison(J, rout);
        rc = s_run(J, J->ref, J->spec_ref, rin, rout, &cb, msg, sizeof msg);
        if (rc != 0) {
            /* the reference's own codes only: a head that could not run (other
             * work held the GPU: the candidate's, left queued) is no broken task */
            s_judge_error(J, rec, rc, rc <= CR_TORCH_R_LOAD && rc >= CR_TORCH_R_OUTPUT, msg);
            rc = 0;
            goto out;
        }
        if (J->head) {
            /* the reference's host time only (note 5): the candidate's claim
             * set half the median, so a claim of 0 cut the head below the
             * reference's host path (its events then held its own launches:
             * a slower reference), and a claim of 1e5 set a 3 ms head, 3 ms of
             * host work hidden from the events and the wall clock alike */
            double used = head, h = cb.host_us;
            if (h >= 0 && h < 1e6)
                span[nspan++ % CR_TORCH_HEAD_KEEP] = h;
            if (nspan)
                head = cr_torch_head_next(span, nspan < CR_TORCH_HEAD_KEEP ? nspan : CR_TORCH_HEAD_KEEP);
            S.head[S.n] = used;
        }
        if (J->cuda)
            cr_debug("torch pair %zu: head %.1f; candidate stage %.1f run %.1f (probe %.1f) "
                     "events %.1f host %.1f fetch %.1f; reference stage %.1f run %.1f (probe "
                     "%.1f) events %.1f host %.1f fetch %.1f; stops %.1f / %.1f; RUN's waits "
                     "for a core %.1f / %.1f", i, ca.head_us,
                     ca.stage_us, ca.run_us, ca.probe_us, ca.evt_us, ca.host_us, ca.fetch_us,
                     cb.stage_us, cb.run_us, cb.probe_us, cb.evt_us, cb.host_us, cb.fetch_us,
                     ca.freeze_us, cb.freeze_us, ca.run_wait, cb.run_wait);
        if (J->cuda) /* beside the harness's "clocks" (CR_TORCH_TRACE): where a RUN's time went */
            cr_debug("torch clocks us: pair %zu: candidate RUN let run %.1f, seen done %.1f; "
                     "reference RUN let run %.1f, seen done %.1f", i, (double)ca.run_t0 / 1e3,
                     (double)ca.run_td / 1e3, (double)cb.run_t0 / 1e3, (double)cb.run_td / 1e3);
        if (warm)
            continue;
        /* ~1 in CR_JUDGE_VERIFY_ONE_IN timed outputs, and the first, checked
         * against the reference's answer to the same inputs */
        if (q == 0 || cr_rng_next(&pick) % CR_JUDGE_VERIFY_ONE_IN == 0) {
            cr_judge_check_t kk;
            S.verified++;
            cr_judge_compare_outputs(J->cmp, slot_out[k], rout, numel, &kk);
            if (!kk.all_written || kk.mismatches) {
                cr_judge_flag(rec, "timed_output_mismatch");
                cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_INCORRECT, "timed run: %s", kk.msg);
                goto out;
            }
        }
        S.aw[S.n] = ca.run_us;
        S.bw[S.n] = cb.run_us;
        S.fa[S.n] = ca.fetch_us;
        S.fb[S.n] = cb.fetch_us;
        S.sa[S.n] = ca.stage_us;
        S.sb[S.n] = cb.stage_us;
        cr_torch_take_waits(&S.aw[S.n], &S.bw[S.n], ca.run_wait, cb.run_wait,
                            ca.head_us > 0 ? ca.head_us : 0);
        cr_torch_take_waits(&S.fa[S.n], &S.fb[S.n], ca.fetch_wait, cb.fetch_wait, 0);
        cr_torch_take_waits(&S.sa[S.n], &S.sb[S.n], ca.stage_wait, cb.stage_wait, 0);
        S.a[S.n] = J->cuda && ca.evt_us > 0 ? ca.evt_us : ca.run_us;
        S.b[S.n] = J->cuda && cb.evt_us > 0 ? cb.evt_us : cb.run_us;
        cr_stats_online_push(&oa, S.a[S.n]);
        cr_stats_online_push(&ob, S.b[S.n]);
        S.n++;
        double el = (double)(cr_time_mono_ns() - ts) / 1e9;
        int enough = S.n >= CR_JUDGE_MIN_SAMPLES;
        if (enough && cr_stats_online_rse(&oa) < J->env->rse_target &&
            cr_stats_online_rse(&ob) < J->env->rse_target)
            break;
        if ((enough && el >= budget) || el >= CR_JUDGE_HARD_CAP * budget)
            break;
    }
out:;
    cr_stats_t a, b;
    br->case_index = 0;
    br->verified_samples = S.verified;
    if (J->cuda && S.n) /* note 4: before the statistics, which use the accepted times */
        cr_torch_cross_check(&S, rec);
    if (S.n)
        cr_torch_aside_checks(&S, J->cuda, rec);
    if (J->head && S.n)
        cr_info("torch judge: head %.1f us (median over %zu pairs), last calls' host time "
                "%.1f us (median); threads: candidate %d, reference %d (each SIGCONT wakes "
                "them all)", cr_torch_median(S.head, S.n), S.n,
                cr_torch_head_host_us(span, nspan < CR_TORCH_HEAD_KEEP ? nspan : CR_TORCH_HEAD_KEEP),
                cr_exec_threads(J->cand), cr_exec_threads(J->ref));
    if (S.n && cr_stats_compute(S.a, S.n, &a) == 0 && cr_stats_compute(S.b, S.n, &b) == 0) {
        br->samples = (uint32_t)a.n;
        br->median_us = a.median;
        br->mean_us = a.mean;
        br->min_us = a.min;
        br->iqr_us = a.iqr;
        br->rse = a.rse;
        br->wall_median_us = cr_torch_median(S.aw, S.n);
        br->raw_median_us = br->wall_median_us;
        br->ref_samples = (uint32_t)b.n;
        br->ref_median_us = b.median;
        br->ref_min_us = b.min;
        br->ref_rse = b.rse;
        cr_stats_speedup(&a, &b, &br->speedup, &br->speedup_lo, &br->speedup_hi);
        pr->speedup_geomean = br->speedup;
        J->ref_mean_us = b.mean;
        s_roofline(J, rec, br);
    }
    rc = 0;
fail:
    for (int s = 0; s < S_POOL; s++)
        s_free_all(data[s], J->nbuf);
    s_free_all(cur, J->nbuf);
    free(S.a);
    pr->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
    if (rc != 0)
        s_judge_error(J, rec, rc, 0, "");
    return rc;
}

/* ---------------------------------------------------------------- KernelBench */

/* The record's KernelBench fields (its eval.py KernelExecResult; times in
 * ms, means of the timed calls, as KernelBench reports them). */
static void s_kernelbench(const s_judge_t *J, Crucible__RewardRecord *rec)
{
    Crucible__KernelBenchResult *kb = malloc(sizeof *kb);
    if (!kb)
        return;
    crucible__kernel_bench_result__init(kb);
    kb->compiled = 1; /* the runner only sees candidates that built */
    kb->correctness = rec->status == CRUCIBLE__STATUS__STATUS_OK;
    kb->runtime = kb->ref_runtime = -1;
    const Crucible__BenchResult *br =
        rec->profile && rec->profile->n_cases ? rec->profile->cases[0] : NULL;
    if (br && br->samples) {
        kb->runtime = br->mean_us / 1e3;
        kb->ref_runtime = J->ref_mean_us > 0 ? J->ref_mean_us / 1e3 : -1;
        kb->excessive_speedup = br->speedup > 10; /* KernelBench's default threshold */
    }
    cr_judge_set_str(&kb->runtime_error, J->runtime_error);
    cr_judge_set_str(&kb->correctness_issue, J->correctness_issue);
    if (rec->status == CRUCIBLE__STATUS__STATUS_HACK_DETECTED && !J->correctness_issue[0])
        cr_judge_set_str(&kb->correctness_issue, rec->message ? rec->message : "hack detected");
    char trials[64];
    snprintf(trials, sizeof trials, "(%d / %d)", J->passed, J->task->trials);
    cr_judge_set_str(&kb->correctness_trials, trials);
    if (J->ndiff && (kb->max_difference = malloc((size_t)J->ndiff * sizeof(double)))) {
        memcpy(kb->max_difference, J->max_diff, (size_t)J->ndiff * sizeof(double));
        kb->n_max_difference = (size_t)J->ndiff;
    }
    rec->kernelbench = kb;
}

/* ---------------------------------------------------------------- entry */

void cr_torch_judge_run(const Crucible__RunnerRequest *req, const cr_task_t *task,
                        const cr_torch_env_t *env, Crucible__RewardRecord *rec)
{
    s_judge_t *J = calloc(1, sizeof *J);
    if (!J) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "torch judge: no memory");
        return;
    }
    J->task = task;
    J->env = env;
    J->cuda = env->cuda;
    J->head = env->cuda && env->head_queue;
    memcpy(J->seed, req->seed.data, sizeof J->seed);
    cr_judge_set_str(&rec->backend, "torch");
    int64_t t0 = cr_time_mono_ns();
    rec->status = CRUCIBLE__STATUS__STATUS_OK;
    if (s_start(J, req, rec) != 0 || s_load(J, rec) != 0)
        goto done;
    cr_info("torch executors loaded %.3f s after the request (%d inputs, %d outputs, %s)",
            (double)(cr_time_mono_ns() - t0) / 1e9, J->nin, J->nout, J->cuda ? "cuda" : "cpu");
    if (s_verify(J, rec) != 0) {
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_INFRA_ERROR, "torch judge: no memory");
        goto done;
    }
    if (rec->status == CRUCIBLE__STATUS__STATUS_OK && !req->verify_only)
        s_time(J, rec);
    uint64_t peak, cap;
    if (rec->status == CRUCIBLE__STATUS__STATUS_OK && cr_exec_memory(J->cand, &peak, &cap) == 0 &&
        cap > 0 && (double)peak >= 0.95 * (double)cap)
        cr_judge_hard(rec, CRUCIBLE__STATUS__STATUS_OOM, "the candidate used %llu MiB of "
                       "address space, at the sandbox's cap", (unsigned long long)(peak >> 20));
done:
    s_kernelbench(J, rec);
    cr_exec_destroy(&J->cand);
    cr_exec_destroy(&J->ref);
    s_spares_done();
    s_spares_start(J, req); /* serving: the next job's, while this report goes out */
    json_decref(J->answer);
    free(J->cmp);
    explicit_bzero(J->seed, sizeof J->seed);
    free(J);
}
