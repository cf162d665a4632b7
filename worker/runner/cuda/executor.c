/* executor.c — crucible-executor-cuda: the process that runs CUDA client
 * code (docs/judge.md §5; the CPU backend's is ../executor.c).
 *
 * Started by the CUDA judge (judge.c) with the descriptors of exec_proto.h
 * and, in the control block, the IPC handle of the device arena made for
 * it alone. In order: map the control block, create the CUDA context and
 * open the arena (the driver cannot initialise inside the sandbox on the
 * H200 VM), take the device limits of a fresh context, subscribe CUPTI
 * (§8), enter the sandbox, say ready, serve commands until killed. The
 * object is loaded only on LOAD, inside the sandbox, from the memfd the
 * judge filled.
 *
 * A call (CALL): restore the limits a candidate may have changed in this
 * context, record ev0, call the entry, record ev1, queue the tail (§12),
 * wait for all of its work device-wide, and report the event time, the
 * launches counted and any CUDA error. The judge stopped and flushed the
 * GPU's L2 before it let this process run, measures the command's wall
 * time itself, and waits until the GPU is idle before it stops counting:
 * every figure written back here is checked against that, or only ever
 * makes the verdict worse (call.c, timing.c). Nothing here is trusted; a
 * candidate can rewrite all of it from inside.
 *
 * Built with full RELRO and immediate binding (CMakeLists.txt). */
#include "cuda_int.h"

#include "exec_child.h"
#include "sandbox.h"

#ifdef CR_WITH_NCCL
#include <nccl.h>
#endif

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define S_SPIN_NS 2000000LL    /* 2 ms of busy polling before napping (call.c's §2) */
#define S_NAP_MIN_NS 20000LL
#define S_NAP_MAX_NS 1000000LL

static const char s_usage[] =
    "usage: crucible-executor-cuda --role candidate|reference|baseline [--threads]\n"
    "                              [--cap-memory] [--cpu N] [--uid UID] [--scratch DIR]\n"
    "\n"
    "Runs CUDA client code for crucible-runner, which starts it with the control\n"
    "block and the object on descriptors 3-6 and the device arena's IPC handle in\n"
    "the control block (docs/judge.md). Not meant to be run by hand.\n";

static cr_exec_ctl_t *s_ctl;
static char *s_arena;          /* the shared device arena, as mapped here */
static size_t s_arena_bytes;
static cr__cuda_judge_t s_J;   /* this process's launch checks and device state */
static void *s_comm;           /* its rank's NCCL communicator (ncclComm_t), made before the
                                  sandbox; NULL = none (docs/multigpu.md) */

/* The object in the memfd, its entry and its runtime's error function. */
static int s_load(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", CR_EXEC_FD_OBJ);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(s_ctl->msg, sizeof s_ctl->msg, "%s", e ? e : "dlopen failed");
        return -1;
    }
    void *sym = dlsym(h, CR_TASK_ENTRY);
    if (!sym) {
        snprintf(s_ctl->msg, sizeof s_ctl->msg,
                 "the object defines no %s (not built from the task's shim)", CR_TASK_ENTRY);
        return -1;
    }
    cr_task_entry_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    void *le = dlsym(h, "cr_cuda_last_error"); /* a shim's own runtime error (§1) */
    cr__cuda_last_error_fn lef = NULL;
    memcpy(&lef, &le, sizeof lef);
    for (int i = 0; i < 3; i++) {
        s_J.fn[i] = fn;
        s_J.last_error[i] = lef;
    }
    return 0;
}

/* Polls ev; its error, or cudaSuccess. The judge's deadline bounds it. */
static cudaError_t s_wait(cudaEvent_t ev)
{
    int64_t start = cr_time_mono_ns(), nap = S_NAP_MIN_NS;
    for (;;) {
        cudaError_t q = cudaEventQuery(ev);
        if (q != cudaErrorNotReady)
            return q;
        if (cr_time_mono_ns() - start > S_SPIN_NS) {
            struct timespec ts = {0, (long)nap};
            nanosleep(&ts, NULL);
            nap = nap * 2 > S_NAP_MAX_NS ? S_NAP_MAX_NS : nap * 2;
        }
    }
}

static void s_error(cudaError_t e, uint32_t at)
{
    s_ctl->cuda.cuda_error = (int32_t)e;
    s_ctl->cuda.error_at = at;
}

/* CALL (see the header). */
static void s_call(void)
{
    cr_exec_cuda_t *X = &s_ctl->cuda;
    unsigned n = s_ctl->nargs < CR_EXEC_MAX_ARGS ? s_ctl->nargs : CR_EXEC_MAX_ARGS;
    void *args[CR_EXEC_MAX_ARGS], *ptr[CR_EXEC_MAX_ARGS];
    alignas(16) unsigned char val[CR_EXEC_MAX_ARGS][16];
    for (unsigned i = 0; i < n; i++) {
        const cr_exec_arg_t *a = &s_ctl->args[i];
        if (a->kind == CR_EXEC_ARG_DEV) {
            ptr[i] = a->off < s_arena_bytes ? s_arena + a->off : NULL;
            args[i] = &ptr[i];
        } else if (a->kind == CR_EXEC_ARG_COMM) {
            ptr[i] = s_comm; /* the reference's is NULL: it computes the whole alone */
            args[i] = &ptr[i];
        } else {
            memcpy(val[i], a->val, sizeof val[i]);
            args[i] = val[i];
        }
    }
    X->ev_us = 0;
    s_error(cudaSuccess, CR_EXEC_CUDA_AT_NONE);
    cr__cuda_judge_t *J = &s_J;
    if (!J->fn[CR_CUDA_CAND]) {
        s_ctl->result = -1;
        return;
    }
    cr__cuda_reset_state(J); /* docs/hacks.md #19: this context's limits, as they began */
    int count = X->count && J->lc_on;
    J->lc_names = X->names_usable ? 1 : 0;
    if (J->last_error[CR_CUDA_CAND])
        J->last_error[CR_CUDA_CAND](); /* clears an error of an earlier call */
    cudaGetLastError();
    if (count)
        cr__cuda_lc_begin(J, CR_CUDA_CAND);
    cudaEventRecord(J->d.ev0, cudaStreamLegacy);
    J->fn[CR_CUDA_CAND](args);
    cudaError_t rec = cudaEventRecord(J->d.ev1, cudaStreamLegacy);
    if (count)
        cr__cuda_lc_end(J, CR_CUDA_CAND);
    cr__cuda_launch_tail((int)(X->tail < 1024 ? X->tail : 1024));
    cudaError_t launch = J->last_error[CR_CUDA_CAND]
                             ? (cudaError_t)J->last_error[CR_CUDA_CAND]() : cudaSuccess;
    if (count) {
        X->launches_ok = J->lc_ok[CR_CUDA_CAND];
        X->launches_failed = J->lc_failed[CR_CUDA_CAND];
        unsigned named, found;
        X->foreign[0] = X->foreign_path[0] = '\0';
        cr__cuda_lc_self(J, &named, &found, X->foreign, sizeof X->foreign, X->foreign_path,
                         sizeof X->foreign_path);
        X->names_seen = named;
        X->names_found = found;
    }
    if (launch != cudaSuccess) {
        s_error(launch, CR_EXEC_CUDA_AT_LAUNCH);
        return;
    }
    cudaError_t e = rec != cudaSuccess ? rec : s_wait(J->d.ev1);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize(); /* work on non-blocking streams (§2) */
    if (e != cudaSuccess) {
        s_error(e, CR_EXEC_CUDA_AT_DEVICE);
        return;
    }
    float ms = 0;
    if ((e = cudaEventElapsedTime(&ms, J->d.ev0, J->d.ev1)) != cudaSuccess) {
        s_error(e, CR_EXEC_CUDA_AT_TIMING);
        return;
    }
    X->ev_us = (double)ms * 1e3;
}

/* A rank of a task with "gpus" (docs/multigpu.md): its communicator, made
 * before the sandbox closes the sockets, /dev/shm and the thread creation
 * NCCL's setup needs, and one all-reduce of one float over it, so that
 * every connection and proxy thread exists before any client code loads
 * (NCCL_RUNTIME_CONNECT=0: NCCL 2.22 and later would otherwise connect at
 * the first collective, inside the sandbox), and one send and receive
 * between this rank and every other (point-to-point peers connect at their
 * first use whatever the setting). */
static void s_nccl_init(void)
{
    const cr_exec_cuda_t *X = &s_ctl->cuda;
    if (!X->world)
        return;
#ifdef CR_WITH_NCCL
    if (X->world > CR_TASK_MAX_GPUS || X->rank >= X->world)
        cr_exec_child_die("NCCL: rank %u of %u", X->rank, X->world);
    setenv("NCCL_RUNTIME_CONNECT", "0", 1);
    ncclUniqueId id;
    memcpy(&id, X->nccl_id, sizeof id);
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclCommInitRank(&comm, (int)X->world, id, (int)X->rank);
    if (r != ncclSuccess)
        cr_exec_child_die("NCCL: ncclCommInitRank, rank %u of %u: %s", X->rank, X->world,
                          ncclGetErrorString(r));
    /* one float all-reduced, then one sent to and received from every peer:
     * the collectives' connections are made at init (NCCL_RUNTIME_CONNECT=0),
     * ncclSend/ncclRecv's only at their first use, here */
    float *one = NULL;
    cudaError_t e = cudaMalloc((void **)&one, (1 + X->world) * sizeof *one);
    if (e == cudaSuccess && (r = ncclAllReduce(one, one, 1, ncclFloat, ncclSum, comm,
                                               cudaStreamLegacy)) == ncclSuccess &&
        X->world > 1 && (r = ncclGroupStart()) == ncclSuccess) {
        for (uint32_t p = 0; p < X->world && r == ncclSuccess; p++)
            if (p != X->rank && (r = ncclSend(one, 1, ncclFloat, (int)p, comm,
                                              cudaStreamLegacy)) == ncclSuccess)
                r = ncclRecv(one + 1 + p, 1, ncclFloat, (int)p, comm, cudaStreamLegacy);
        ncclResult_t g = ncclGroupEnd();
        r = r == ncclSuccess ? g : r;
    }
    if (e == cudaSuccess && r == ncclSuccess)
        e = cudaDeviceSynchronize();
    if (r != ncclSuccess || e != cudaSuccess)
        cr_exec_child_die("NCCL: the first collectives, rank %u of %u: %s", X->rank, X->world,
                          r != ncclSuccess ? ncclGetErrorString(r) : cudaGetErrorString(e));
    cudaFree(one);
    s_comm = comm;
#else
    cr_exec_child_die("this executor was built without NCCL: no communicator for rank %u of %u",
                      X->rank, X->world);
#endif
}

static void s_serve(void)
{
    uint32_t last = 0;
    for (;;) {
        uint32_t seq = last = cr_exec_child_next(s_ctl, last);
        s_ctl->result = 0;
        switch (s_ctl->op) {
        case CR_EXEC_OP_PING:
            break;
        case CR_EXEC_OP_LOAD:
            s_ctl->msg[0] = '\0';
            if (s_load() != 0) {
                s_ctl->result = -1;
                break;
            }
            cr__cuda_lc_start(&s_J); /* the object's images and the callbacks (§8) */
            s_ctl->cuda.lc_on = (uint32_t)s_J.lc_on;
            {
                int rc = cr_sandbox_lock_code(1);
                if (rc != 0)
                    fprintf(stderr, "crucible-executor-cuda: second seccomp filter: %s\n",
                            strerror(-rc));
            }
            break;
        case CR_EXEC_OP_CALL:
            s_call();
            break;
        case CR_EXEC_OP_LC_START:
            if (!s_J.fn[CR_CUDA_CAND]) {
                s_ctl->result = -1;
                break;
            }
            if (!s_J.lc_on)
                cr__cuda_lc_start(&s_J);
            s_ctl->cuda.lc_on = (uint32_t)s_J.lc_on;
            break;
        case CR_EXEC_OP_LC_STOP:
            if (s_J.lc_on)
                cr__cuda_lc_stop(&s_J); /* no callback in a timed window (§8) */
            s_ctl->cuda.lc_on = 0;
            break;
        default:
            s_ctl->result = -1;
            break;
        }
        cr_exec_child_done(s_ctl, seq);
    }
}

int main(int argc, char **argv)
{
    cr_exec_args_t A;
    int rc = cr_exec_child_args(argc, argv, "crucible-executor-cuda", s_usage, &A);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    /* always the runtime's threads, no address-space cap, not pinned: the
     * runtime's threads share the judge's cores */
    A.threads = 1;
    A.cap_memory = 0;
    cr_log_set_role("executor");
    struct stat st;
    if (fstat(CR_EXEC_FD_CTL, &st) != 0 || (size_t)st.st_size < sizeof *s_ctl)
        cr_exec_child_die("control block: descriptor %d is not one", CR_EXEC_FD_CTL);
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   CR_EXEC_FD_CTL, 0);
    if (p == MAP_FAILED)
        cr_exec_child_die("control block: mmap: %s", strerror(errno));
    s_ctl = (cr_exec_ctl_t *)p;
    cr_exec_child_set_ctl(s_ctl);
    close(CR_EXEC_FD_CTL);
    close(CR_EXEC_FD_RW); /* the host arenas: a CUDA call's buffers are on the device */
    close(CR_EXEC_FD_RO);

    int64_t t[5];
    t[0] = cr_time_mono_ns();
    /* a rank's GPU (docs/multigpu.md); 0 on one GPU */
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || (int)s_ctl->cuda.device >= ndev)
        cr_exec_child_die("CUDA device %u: this process sees %d", s_ctl->cuda.device, ndev);
    cudaError_t e = cudaSetDevice((int)s_ctl->cuda.device);
    if (e == cudaSuccess)
        e = cudaFree(0);
    if (e != cudaSuccess)
        cr_exec_child_die("CUDA context: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
    t[1] = cr_time_mono_ns();
    if (s_ctl->cuda.arena_bytes) {
        cudaIpcMemHandle_t h;
        memcpy(&h, s_ctl->cuda.arena_handle, sizeof h);
        void *a = NULL;
        if ((e = cudaIpcOpenMemHandle(&a, h, cudaIpcMemLazyEnablePeerAccess)) != cudaSuccess)
            cr_exec_child_die("opening the device arena: %s (%s)", cudaGetErrorName(e),
                  cudaGetErrorString(e));
        s_arena = (char *)a;
        s_arena_bytes = (size_t)s_ctl->cuda.arena_bytes;
    }
    if ((e = cudaEventCreate(&s_J.d.ev0)) != cudaSuccess ||
        (e = cudaEventCreate(&s_J.d.ev1)) != cudaSuccess)
        cr_exec_child_die("events: %s", cudaGetErrorString(e));
    cr__cuda_state_init(&s_J.d);
    s_nccl_init();
    t[2] = cr_time_mono_ns();
    char used[PATH_MAX + 64];
    if (cr__cuda_lc_subscribe(used, sizeof used) != 0)
        fprintf(stderr, "crucible-executor-cuda: %s: launch checks off: %s\n", A.role, used);
    t[3] = cr_time_mono_ns();
    cr_exec_child_enter(s_ctl, &A);
    t[4] = cr_time_mono_ns();
    /* what an executor's start costs (the serving judge waits for it before timing) */
    cr_info("%s executor started in %.3f s: context %.3f, arena and events %.3f, CUPTI "
            "%.3f, sandbox %.3f", A.role, (double)(t[4] - t[0]) / 1e9,
            (double)(t[1] - t[0]) / 1e9, (double)(t[2] - t[1]) / 1e9,
            (double)(t[3] - t[2]) / 1e9, (double)(t[4] - t[3]) / 1e9);
    s_serve();
    return 0;
}
