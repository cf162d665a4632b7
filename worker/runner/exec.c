/* exec.c — see exec.h.
 *
 * Design notes (docs/judge.md has the whole picture).
 *
 * 1. The arenas are memfds. The judge maps each read-write once, then seals
 *    it against growing and shrinking (an executor that truncated one would
 *    fault the judge on its next read); the input arena is also sealed with
 *    F_SEAL_FUTURE_WRITE, so the executor's only possible mapping of it is
 *    read-only and mprotect can never make it writable, while the judge's
 *    existing mapping stays writable.
 *
 * 2. States of an executor, as the judge drives them:
 *
 *      started --(ready, s_wait_ready)--> running --(s_freeze)--> frozen
 *      frozen --(s_command: SIGCONT)--> running --(done_seq, s_freeze)--> frozen
 *      any --(death, timeout, s_fail)--> faulted --(cr_exec_destroy)--> gone
 *
 *    Between commands it is frozen (SIGSTOP stops every thread), so a
 *    candidate can neither compute ahead on inputs the judge has written
 *    nor finish a call's work after saying it is done: all of that would
 *    happen inside some command's window, where it is timed.
 *
 * 3. A command's time is what the kernel charged the executor for it: its
 *    sum_exec_runtime (/proc/<pid>/schedstat, nanoseconds, user and system
 *    time alike) read while it is frozen before and after. Time it spent
 *    waiting for a core the judge or another process held is not its work
 *    and is not counted, so a busy host does not swell the samples; no
 *    work it does can escape the count, since it has no other process and
 *    (without threads) no other thread. A task that allows threads is timed
 *    by the wall clock instead (its threads' CPU times would add up), from
 *    just before SIGCONT to the moment waitid reports it stopped, or, with
 *    opts.wall_to_done (the torch judge's), to the moment the judge sees it
 *    done. A group stop waits for every thread to be scheduled into it: for
 *    a torch executor's threads that took 1-7 ms a command on the H200 host
 *    while its cores ran compilers (session 18, docs/torch.md §4), and
 *    95-160 us on the idle build VM (4-34 threads), different between two processes of
 *    different threads: the noise of every torch timing cross-check. No
 *    user code runs after the SIGSTOP is sent (a thread stops on its way
 *    back to user mode) and the judge sends it as soon as it sees done
 *    (spinning, opts.spin_ns), so what a candidate could do between its
 *    done and its stop is that signal's microseconds; its GPU work queued
 *    then is still on the GPU, where the torch judge's probe and next head
 *    look (torch_judge.c note 5). The CUDA judge keeps the stop inside: its
 *    rules were measured so, and with it taken out four hostile candidates
 *    of its red team and hack suite came back OK (slower than the
 *    reference) instead of HACK_DETECTED (session 18). SIGCONT stays in the
 *    window either way: a candidate that starts thousands of threads to make
 *    that signal slow pays for it. The stop's own time is kept
 *    (cr_exec_freeze_us) for the logs. A wall_to_done command also reports
 *    how long the executor's main thread waited for a core inside its window
 *    (cr_exec_wait_us: the growth of schedstat's run_delay, read while it
 *    is frozen before and as done is seen): on the H200 the way from
 *    SIGCONT to the torch harness seeing its command took 30-50 us, either
 *    executor of a pair the longer by up to 11 us, and a compiler that
 *    takes the core makes it milliseconds (docs/torch.md §4). Either
 *    way, the empty command (PING) measured before the object is loaded,
 *    the fastest of S_CALIBRATE_N, is this executor's least cost of a
 *    command, taken off every call's time; reference and candidate pay it
 *    alike (with opts.whole_times nothing is taken off: the torch judge
 *    on a GPU only compares its two executors' times pair by pair, where
 *    two least costs measured apart were a bias of up to 30 us, s_least_cost).
 *    What remains of the command's cost (its jitter above that least
 *    cost) stays in the sample: a call far shorter than it is measured long,
 *    never absurdly short. waitid reports the stop before the stopped task
 *    has left its CPU, and its runtime is only added up when it does:
 *    reading its /proc/<pid>/syscall, which waits until the task is
 *    inactive, comes before the second CPU-time read (without it one empty
 *    command read 0.00 us on the H200 host, and a call could lose its last
 *    slice). */
#define _GNU_SOURCE
#include "exec.h"

#include "error.h"
#include "file.h"
#include "log.h"
#include "sandbox.h"
#include "stats.h"
#include "task.h"
#include "timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

_Static_assert(CR_EXEC_MAX_ARGS == CR_TASK_MAX_PARAMS, "one argument per task parameter");

#define S_ALIGN 64                /* cache line: what a vectorised kernel may assume */
#define S_ARENA_MIN 4096u         /* an empty arena still maps one page */
#define S_READY_S 30.0            /* s: an executor not in its sandbox by then is stuck */
#define S_SPIN_NS 200000          /* 200 us of spinning for done before sleeping on it,
                                     unless the options say otherwise */
#define S_SLEEP_NS 10000000       /* 10 ms sleeps on done: a dead executor is seen that soon */
#define S_FREEZE_S 5.0            /* s: SIGSTOP takes microseconds; 5 s means it never will */
#define S_RANKS_SPIN_NS 50000000  /* 50 ms of spinning on several executors' done: a nap on
                                     one would let another's finish be seen late */
#define S_RANKS_NAP_NS 200000     /* then naps of 200 us: 0.4% of a call that long */
#define S_CALIBRATE_WARM 8        /* empty commands not counted (first-touch costs) */
#define S_CALIBRATE_N 64          /* counted: the fastest of 64 */

struct cr_exec {
    pid_t pid;              /* the executor; 0 once reaped */
    pid_t pid0;             /* the executor as started (s_live), kept after the reap */
    char role[16];          /* "candidate" / "reference" */
    cr_exec_ctl_t *ctl;     /* shared control block; owned mapping */
    unsigned char *ro;      /* input arena, the judge's writable mapping; owned */
    size_t ro_len;          /* bytes */
    size_t ro_used;         /* bump offset */
    unsigned char *rw;      /* output arena; owned */
    size_t rw_len;          /* bytes */
    size_t rw_used;         /* bump offset */
    uint32_t seq;           /* last command's sequence number */
    int64_t deadline_ns;    /* CLOCK_MONOTONIC; 0 = none */
    int spin;               /* 1: another core is free to spin on */
    int64_t spin_ns;        /* how long to spin for done before sleeping on it */
    double freeze_us;       /* the last command's stop, from done to stopped (note 3) */
    int64_t last_t0, last_td; /* the last command's let-run and done-seen, CLOCK_MONOTONIC ns */
    int64_t wait0;          /* wall_to_done: the main thread's run_delay at let-run, ns; < 0 none */
    double wait_us;         /* ... and its growth to done (note 3); < 0 unknown */
    int wall;               /* 1: time by the wall clock (threads); 0: by CPU time (note 3) */
    int to_done;            /* wall: a command ends when done is seen, not at its stop */
    int whole;              /* opts.whole_times: overhead_us is logged, not taken off */
    int stat_fd;            /* /proc/<pid>/schedstat, open; -1 = unreadable (then wall) */
    int sys_fd;             /* /proc/<pid>/syscall, open; -1 = unreadable (note 3) */
    double overhead_us;     /* us: the empty command's least cost (note 3) */
    uint64_t base_handlers; /* SigCgt after the sandbox, before any load */
    int obj_fd;             /* the object memfd of an executor started ahead; -1 = none */
    int ready;              /* cr_exec_ready has seen it in its sandbox and calibrated it */
    cr_exec_fault_t fault;  /* the first fault; kind 0 while none */
};

/* ---------------------------------------------------------------- arenas */

static int s_memfd(const char *name, size_t len, int ro, void **map)
{
    int fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL | (ro ? F_SEAL_FUTURE_WRITE : 0);
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)len) != 0 ||
        (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED ||
        fcntl(fd, F_ADD_SEALS, seals) != 0) {
        int e = -errno;
        if (p != MAP_FAILED)
            munmap(p, len);
        close(fd);
        return e;
    }
#ifdef MADV_HUGEPAGE
    if (len >= (2u << 20))
        madvise(p, len, MADV_HUGEPAGE); /* advice only: fewer first-touch faults */
#endif
    *map = p;
    return fd;
}

static size_t s_round(size_t n)
{
    n = (n + S_ALIGN - 1) / S_ALIGN * S_ALIGN;
    return n < S_ARENA_MIN ? S_ARENA_MIN : n;
}

void *cr_exec_alloc(cr_exec_t *x, int ro, size_t bytes)
{
    size_t *used = ro ? &x->ro_used : &x->rw_used;
    size_t len = ro ? x->ro_len : x->rw_len;
    size_t sz = (bytes + S_ALIGN - 1) / S_ALIGN * S_ALIGN;
    if (sz == 0)
        sz = S_ALIGN; /* a zero-element buffer is still a distinct pointer */
    if (*used > len || sz > len - *used)
        return NULL;
    void *p = (ro ? x->ro : x->rw) + *used;
    *used += sz;
    return p;
}

void cr_exec_reset(cr_exec_t *x)
{
    x->ro_used = x->rw_used = 0;
}

int cr_exec_arg_ptr(const cr_exec_t *x, const void *p, cr_exec_arg_t *a)
{
    const unsigned char *c = p;
    memset(a, 0, sizeof *a);
    if (c >= x->ro && c < x->ro + x->ro_len) {
        a->kind = CR_EXEC_ARG_RO;
        a->off = (uint64_t)(c - x->ro);
    } else if (c >= x->rw && c < x->rw + x->rw_len) {
        a->kind = CR_EXEC_ARG_RW;
        a->off = (uint64_t)(c - x->rw);
    } else {
        return -EINVAL;
    }
    return 0;
}

/* ---------------------------------------------------------------- faults */

static void s_fail(cr_exec_t *x, cr_exec_fault_kind_t kind, uint64_t value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void s_fail(cr_exec_t *x, cr_exec_fault_kind_t kind, uint64_t value, const char *fmt, ...)
{
    if (x->fault.kind != CR_EXEC_OK)
        return; /* the first fault is the one that happened */
    x->fault.kind = kind;
    x->fault.value = value;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->fault.msg, sizeof x->fault.msg, fmt, ap);
    va_end(ap);
    cr_debug("%s executor pid %d: %s", x->role, (int)x->pid, x->fault.msg);
}

/* The executor's last words, for a message: printable ASCII only. */
static void s_said(const cr_exec_t *x, char *out, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof x->ctl->msg && x->ctl->msg[i] && n + 1 < len; i++) {
        unsigned char c = (unsigned char)x->ctl->msg[i];
        out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[n] = '\0';
}

/* The executor ended with status si (reaped): names how. */
static void s_ended(cr_exec_t *x, const siginfo_t *si)
{
    char said[sizeof x->ctl->msg];
    s_said(x, said, sizeof said);
    x->pid = 0;
    if (si->si_code == CLD_EXITED) {
        int st = si->si_status;
        if (st == CR_EXEC_EXIT_RO_WRITE)
            s_fail(x, CR_EXEC_RO_WRITE, x->ctl->fault_off,
                   "the %s stored into a read-only input (input arena offset %llu)", x->role,
                   (unsigned long long)x->ctl->fault_off);
        else if (st == CR_RUNNER_EXIT_SANDBOX) /* the sandbox's SIGSYS handler */
            s_fail(x, CR_EXEC_SANDBOX, (uint64_t)st, "the %s made a system call the sandbox "
                   "forbids: %s", x->role, said[0] ? said : "(unnamed)");
        else if (st == CR_EXEC_EXIT_SETUP && !x->ready)
            /* the judge's own flag: once it is ready, the candidate's code
             * may be loaded, and its exit 88 would make its failure the
             * judge's (INFRA_ERROR: no reward, a retry, a worker drained) */
            s_fail(x, CR_EXEC_SETUP, (uint64_t)st, "the %s executor could not start: %s",
                   x->role, said[0] ? said : "no reason given");
        else /* what the control block says last: client code may have written it */
            s_fail(x, CR_EXEC_EXITED, (uint64_t)st, "the %s ended its process (exit %d)%s%.120s%s",
                   x->role, st, said[0] ? "; its last message: \"" : "", said,
                   said[0] ? "\"" : "");
    } else {
        int sig = si->si_status;
        if (sig == SIGSYS)
            s_fail(x, CR_EXEC_SANDBOX, (uint64_t)sig,
                   "the %s was killed by SIGSYS: a forbidden system call", x->role);
        else
            s_fail(x, CR_EXEC_SIGNALED, (uint64_t)sig, "the %s was killed by signal %d (%s)",
                   x->role, sig, strsignal(sig));
    }
}

/* 1 when the executor has ended (then reaped, and the fault set). */
static int s_gone(cr_exec_t *x)
{
    if (x->pid <= 0)
        return 1;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)x->pid, &si, WEXITED | WNOHANG) == 0 && si.si_pid == x->pid) {
        s_ended(x, &si);
        return 1;
    }
    return 0;
}

/* Field k of the executor's main thread's schedstat (ns): 0 its
 * sum_exec_runtime, 1 its run_delay (the time it spent runnable, waiting for
 * a core); -1 unreadable. */
static int64_t s_schedstat(const cr_exec_t *x, int k)
{
    char buf[96];
    if (x->stat_fd < 0)
        return -1;
    ssize_t n = pread(x->stat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = buf, *e = buf;
    long long v = -1;
    for (int i = 0; i <= k; i++, p = e)
        if ((v = strtoll(p, &e, 10)) < 0 || e == p)
            return -1;
    return v;
}

static int64_t s_cpu_ns(const cr_exec_t *x)
{
    return s_schedstat(x, 0);
}

static int64_t s_wait_ns(const cr_exec_t *x)
{
    return s_schedstat(x, 1);
}

static void s_futex_wait(uint32_t *word, uint32_t val, long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

/* Kills the executor for good (a timeout, a broken protocol). */
static void s_kill(cr_exec_t *x)
{
    if (x->pid <= 0)
        return;
    kill(x->pid, SIGKILL);
    while (waitpid(x->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    x->pid = 0;
}

/* ---------------------------------------------------------------- commands */

/* Note 2: only the judge resumes a frozen executor. A continue the judge did
 * not send (a child's SIGCONT, a timer armed before the second filter whose
 * signal is SIGCONT: no handler needed), or a stop after one, is reported by
 * waitid; the judge takes its own continue's report right after sending it
 * (s_let_run), so any other is the executor's doing. Returns 1 when one is
 * waiting, having failed x as a sandbox violation and killed it. */
static int s_resumed(cr_exec_t *x, int stopped_too)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)x->pid, &si, WCONTINUED | (stopped_too ? WSTOPPED : 0) | WNOHANG) !=
            0 ||
        si.si_pid != x->pid || (si.si_code != CLD_CONTINUED && si.si_code != CLD_STOPPED))
        return 0;
    s_kill(x);
    s_fail(x, CR_EXEC_SANDBOX, 0, "the %s executor ran while the judge held it stopped: "
           "something of its own resumed it (SIGCONT)", x->role);
    return 1;
}

/* Stops every thread of the executor and returns once the kernel says it
 * is stopped (or has ended). Returns 0 or CR_E_EXEC. */
static int s_freeze(cr_exec_t *x)
{
    if (kill(x->pid, SIGSTOP) != 0) {
        s_gone(x);
        s_fail(x, CR_EXEC_SETUP, 0, "the %s executor could not be stopped: %s", x->role,
               strerror(errno));
        return CR_E_EXEC;
    }
    int64_t t0 = cr_time_mono_ns();
    for (unsigned i = 0;; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)x->pid, &si, WSTOPPED | WEXITED | WCONTINUED | WNOHANG) != 0) {
            s_fail(x, CR_EXEC_SETUP, 0, "waitid on the %s executor: %s", x->role,
                   strerror(errno));
            return CR_E_EXEC;
        }
        if (si.si_pid == x->pid) {
            if (si.si_code == CLD_STOPPED) {
                /* reading it waits until the task is off its CPU (note 3) */
                char buf[128];
                if (!x->wall && x->sys_fd >= 0 && pread(x->sys_fd, buf, sizeof buf, 0) < 0)
                    cr_debug("%s executor: /proc syscall: %s", x->role, strerror(errno));
                return 0;
            }
            if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED ||
                si.si_code == CLD_DUMPED) {
                s_ended(x, &si);
                return CR_E_EXEC;
            }
            if (si.si_code == CLD_CONTINUED) { /* not ours: s_resumed */
                s_kill(x);
                s_fail(x, CR_EXEC_SANDBOX, 0, "the %s executor was resumed while the judge "
                       "stopped it: something of its own sent SIGCONT", x->role);
                return CR_E_EXEC;
            }
        }
        if ((i & 255) == 255 &&
            (double)(cr_time_mono_ns() - t0) / 1e9 > S_FREEZE_S) {
            s_kill(x);
            s_fail(x, CR_EXEC_SETUP, 0, "the %s executor did not stop in %.0f s", x->role,
                   S_FREEZE_S);
            return CR_E_EXEC;
        }
        if (!x->spin)
            sched_yield();
    }
}

/* Waits for done_seq == seq: spins while that is cheap, then sleeps on the
 * futex in S_SLEEP_NS steps, checking between them that the executor lives
 * and the deadline has not passed. Returns 0 or CR_E_EXEC. */
static int s_wait_done(cr_exec_t *x, uint32_t seq, int64_t t0)
{
    for (unsigned i = 0;; i++) {
        uint32_t d = __atomic_load_n(&x->ctl->done_seq, __ATOMIC_ACQUIRE);
        if (d == seq)
            return 0;
        if (x->spin && (i & 1023) != 1023)
            continue;
        int64_t now = cr_time_mono_ns();
        if (x->spin && now - t0 < x->spin_ns)
            continue;
        if (s_gone(x))
            return CR_E_EXEC;
        if (x->deadline_ns && now >= x->deadline_ns) {
            s_kill(x);
            s_fail(x, CR_EXEC_TIMEOUT, 0, "the %s did not return before the run's deadline "
                   "(%.1f s into the call)", x->role, (double)(now - t0) / 1e9);
            return CR_E_EXEC;
        }
        s_futex_wait(&x->ctl->done_seq, d, S_SLEEP_NS);
    }
}

/* Lets a frozen executor run command op: its start time in *t0 (and CPU
 * time in *c0). Returns 0 or CR_E_EXEC. */
static int s_let_run(cr_exec_t *x, uint32_t op, uint32_t *seq, int64_t *t0, int64_t *c0)
{
    if (x->fault.kind != CR_EXEC_OK)
        return CR_E_EXEC;
    if (s_resumed(x, 1))
        return CR_E_EXEC;
    x->ctl->op = op;
    *seq = ++x->seq;
    *c0 = x->wall ? 0 : s_cpu_ns(x);
    x->wait0 = x->wall && x->to_done ? s_wait_ns(x) : -1; /* frozen: no wait under way */
    *t0 = cr_time_mono_ns();
    __atomic_store_n(&x->ctl->cmd_seq, *seq, __ATOMIC_RELEASE);
    if (kill(x->pid, SIGCONT) != 0) {
        s_gone(x);
        s_fail(x, CR_EXEC_SETUP, 0, "SIGCONT to the %s executor: %s", x->role, strerror(errno));
        return CR_E_EXEC;
    }
    /* our own continue's report (the kernel notes it within kill), taken so
     * that another is seen (s_resumed, s_freeze) */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    waitid(P_PID, (id_t)x->pid, &si, WCONTINUED | WNOHANG);
    return 0;
}

/* Once done: frozen again, and its time into *us: by the wall clock to
 * the moment done was seen, or its CPU time to its stop (note 3). */
static int s_settle(cr_exec_t *x, int64_t t0, int64_t c0, double *us)
{
    int64_t td = cr_time_mono_ns();
    x->last_t0 = t0;
    x->last_td = td;
    /* before the stop: waits that ended in the window (a wait is counted
     * when the thread gets its core), none of the stop's own; the read is a
     * few microseconds more between done and the stop (note 3) */
    int64_t w1 = x->wait0 >= 0 ? s_wait_ns(x) : -1;
    x->wait_us = w1 >= x->wait0 && x->wait0 >= 0 ? (double)(w1 - x->wait0) / 1e3 : -1;
    int rc = s_freeze(x);
    int64_t t1 = cr_time_mono_ns();
    x->freeze_us = (double)(t1 - td) / 1e3;
    if (rc == 0 && us) {
        int64_t c1 = x->wall ? 0 : s_cpu_ns(x);
        *us = (double)(x->wall && x->to_done     ? td - t0
                       : x->wall || c0 < 0 || c1 < c0 ? t1 - t0
                                                       : c1 - c0) /
              1e3;
    }
    return rc;
}

/* One command (op, with whatever args the caller wrote) from frozen to
 * frozen. us gets the judge's time of it, less nothing. */
static int s_command(cr_exec_t *x, uint32_t op, double *us)
{
    uint32_t seq;
    int64_t t0, c0;
    int rc = s_let_run(x, op, &seq, &t0, &c0);
    if (rc == 0)
        rc = s_wait_done(x, seq, t0);
    if (rc == 0)
        rc = s_settle(x, t0, c0, us);
    return rc;
}

/* cr_exec_command_all's wait: every executor of xs polled in turn, each
 * frozen as soon as it is done (its time is read then: a rank seen late would
 * read long); spinning for the first S_RANKS_SPIN_NS, then napping at most
 * S_RANKS_NAP_NS on the first not done, so a rank that finished is seen
 * within a nap; the first to end or pass the deadline ends the wait.
 * Returns -1, or the index that failed. */
static int s_wait_all(cr_exec_t *const *xs, int n, const uint32_t *seq, const int64_t *t0,
                      const int64_t *c0, double *us)
{
    unsigned char done[64] = {0};
    int left = n;
    for (unsigned i = 0; left > 0; i++) {
        int first = -1;
        for (int k = 0; k < n; k++) {
            if (done[k])
                continue;
            if (__atomic_load_n(&xs[k]->ctl->done_seq, __ATOMIC_ACQUIRE) == seq[k]) {
                done[k] = 1;
                left--;
                if (s_settle(xs[k], t0[k], c0[k], us ? &us[k] : NULL) != 0)
                    return k;
                /* it says its call failed (a CUDA error): its peers may now wait
                 * for it in a collective, so nobody is waited for any longer */
                if (left > 0 && (xs[k]->ctl->result != 0 || xs[k]->ctl->cuda.cuda_error != 0))
                    return k;
            } else if (first < 0) {
                first = k;
            }
        }
        if (left == 0)
            break;
        int64_t now = cr_time_mono_ns();
        if (xs[first]->spin && ((i & 1023) != 1023 || now - t0[first] < S_RANKS_SPIN_NS))
            continue;
        for (int k = 0; k < n; k++) {
            if (done[k])
                continue;
            if (s_gone(xs[k]))
                return k;
            if (xs[k]->deadline_ns && now >= xs[k]->deadline_ns) {
                s_kill(xs[k]);
                s_fail(xs[k], CR_EXEC_TIMEOUT, 0, "the %s did not return before the run's "
                       "deadline (%.1f s into the call)", xs[k]->role,
                       (double)(now - t0[k]) / 1e9);
                return k;
            }
        }
        uint32_t d = __atomic_load_n(&xs[first]->ctl->done_seq, __ATOMIC_ACQUIRE);
        s_futex_wait(&xs[first]->ctl->done_seq, d, S_RANKS_NAP_NS);
    }
    return -1;
}

/* What note 3 takes off a command's time: its least cost, or nothing for a
 * judge that compares two executors pair by pair (opts.whole_times: two
 * torch executors' least costs read 36-97 us on the H200 and differed by
 * up to 30 us, a bias in every pair's difference; session 19). */
static double s_least_cost(const cr_exec_t *x)
{
    return x->whole ? 0 : x->overhead_us;
}

int cr_exec_command_all(cr_exec_t *const *xs, int n, uint32_t op, double *us, int *failed)
{
    *failed = -1;
    if (n == 1) {
        double t = 0;
        int rc = cr_exec_command(xs[0], op, us ? &t : NULL);
        if (rc == 0 && us)
            us[0] = t;
        *failed = rc ? 0 : -1;
        return rc;
    }
    if (n < 1 || n > 64)
        return -EINVAL;
    uint32_t seq[64];
    int64_t t0[64], c0[64];
    int bad = -1;
    /* the barrier: every rank released back to back, none waited for yet */
    for (int k = 0; k < n && bad < 0; k++)
        if (s_let_run(xs[k], op, &seq[k], &t0[k], &c0[k]) != 0)
            bad = k;
    if (bad < 0)
        bad = s_wait_all(xs, n, seq, t0, c0, us);
    if (bad < 0) {
        for (int k = 0; us && k < n; k++) {
            us[k] -= s_least_cost(xs[k]);
            if (us[k] < 1e-3)
                us[k] = 1e-3;
        }
        return 0;
    }
    /* One rank failed: its peers may wait in a collective for it until the
     * deadline. They are ended now, and say why. */
    for (int k = 0; k < n; k++)
        if (k != bad && xs[k]->fault.kind == CR_EXEC_OK) {
            s_kill(xs[k]);
            s_fail(xs[k], CR_EXEC_SIGNALED, SIGKILL, "the %s was ended by the judge: another "
                   "rank of its job stopped serving", xs[k]->role);
        }
    *failed = bad;
    return CR_E_EXEC;
}

static void s_calibrate(cr_exec_t *x)
{
    double v[S_CALIBRATE_N];
    size_t n = 0;
    for (int i = 0; i < S_CALIBRATE_WARM + S_CALIBRATE_N; i++) {
        double us = 0;
        if (s_command(x, CR_EXEC_OP_PING, &us) != 0)
            return;
        if (i >= S_CALIBRATE_WARM)
            v[n++] = us;
    }
    /* The fastest, not the median: what is taken off every sample must be a
     * lower bound of a command's own cost, or calls shorter than its jitter
     * would come out at nothing (a 1 us call less a median that half the
     * commands undercut) and their speedups absurd. */
    cr_stats_t st;
    if (cr_stats_compute(v, n, &st) == 0)
        x->overhead_us = st.min;
}

/* ---------------------------------------------------------------- /proc */

/* The value of "key:" in /proc/<pid>/status, as text; 0 or -1. */
static int s_status_field(pid_t pid, const char *key, char *out, size_t len)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    size_t kl = strlen(key);
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, key, kl) == 0 && l[kl] == ':') {
            const char *v = l + kl + 1;
            v += strspn(v, " \t");
            snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
            return 0;
        }
    }
    return -1;
}

int cr_exec_threads(const cr_exec_t *x)
{
    char v[32];
    if (x->pid <= 0 || s_status_field(x->pid, "Threads", v, sizeof v) != 0)
        return -1;
    return atoi(v);
}

static uint64_t s_handlers(pid_t pid)
{
    char v[32];
    if (pid <= 0 || s_status_field(pid, "SigCgt", v, sizeof v) != 0)
        return 0;
    return strtoull(v, NULL, 16);
}

/* The C library's own handlers, installed with the first thread: signals
 * 32 and 33 (bits 31, 32). */
#define S_LIBC_SIGNALS ((1ull << 31) | (1ull << 32))

uint64_t cr_exec_extra_handlers(const cr_exec_t *x)
{
    return s_handlers(x->pid) & ~x->base_handlers & ~S_LIBC_SIGNALS;
}

int cr_exec_memory(const cr_exec_t *x, uint64_t *peak, uint64_t *cap)
{
    char v[64], path[64], buf[4096];
    *peak = *cap = 0;
    if (x->pid <= 0 || s_status_field(x->pid, "VmPeak", v, sizeof v) != 0)
        return -1;
    *peak = strtoull(v, NULL, 10) * 1024; /* "123456 kB" */
    snprintf(path, sizeof path, "/proc/%d/limits", (int)x->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    const char *l = strstr(buf, "Max address space");
    if (l) {
        l += strlen("Max address space");
        l += strspn(l, " ");
        if (strncmp(l, "unlimited", 9) != 0)
            *cap = strtoull(l, NULL, 10); /* soft limit, bytes */
    }
    return 0;
}

/* ---------------------------------------------------------------- lifecycle */

void cr_exec_program(const char *name, char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(out, len, "%s", name);
        return;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, len, "%.4000s/%s", self, name);
}

/* The child's side of the fork: the descriptors of exec_proto.h in place,
 * nothing else open but stdin (/dev/null), stdout and stderr, then exec. */
static void s_child(const char *program, char **argv, const int *src)
{
    int hi[4];
    for (int i = 0; i < 4; i++)
        if ((hi[i] = fcntl(src[i], F_DUPFD, 100)) < 0)
            _exit(CR_EXEC_EXIT_SETUP);
    for (int i = 0; i < 4; i++)
        if (dup2(hi[i], CR_EXEC_FD_CTL + i) < 0)
            _exit(CR_EXEC_EXIT_SETUP);
    syscall(SYS_close_range, CR_EXEC_FD_OBJ + 1, ~0u, 0);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0 && null != 0) {
        dup2(null, 0);
        close(null);
    }
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    execv(program, argv);
    _exit(127);
}

static int s_wait_ready(cr_exec_t *x, char *err, size_t errlen)
{
    int64_t t0 = cr_time_mono_ns();
    while (!__atomic_load_n(&x->ctl->ready, __ATOMIC_ACQUIRE)) {
        if (s_gone(x)) {
            snprintf(err, errlen, "%s", x->fault.msg);
            return CR_E_EXEC;
        }
        if ((double)(cr_time_mono_ns() - t0) / 1e9 > S_READY_S) {
            s_kill(x);
            snprintf(err, errlen, "the %s executor was not ready after %.0f s", x->role,
                     S_READY_S);
            return CR_E_EXEC;
        }
        s_futex_wait(&x->ctl->ready, 0, S_SLEEP_NS);
    }
    return 0;
}

/* The executors started and not yet destroyed or abandoned, by pid:
 * cr_exec_is_live_pid's (the serving judge's sweep, runner.c). */
static pid_t s_live[64];

static void s_live_set(pid_t pid, int on)
{
    for (size_t i = 0; i < sizeof s_live / sizeof *s_live; i++)
        if (on ? s_live[i] == 0 : s_live[i] == pid) {
            s_live[i] = on ? pid : 0;
            return;
        }
}

int cr_exec_is_live_pid(pid_t pid)
{
    for (size_t i = 0; i < sizeof s_live / sizeof *s_live; i++)
        if (pid > 0 && s_live[i] == pid)
            return 1;
    return 0;
}

int cr_exec_new(const cr_exec_opts_t *o, cr_exec_t **out, char *err, size_t errlen)
{
    int rc = cr_exec_start(o, out, err, errlen);
    if (rc == 0 && (rc = cr_exec_ready(*out, err, errlen)) != 0)
        cr_exec_destroy(out);
    return rc;
}

int cr_exec_start(const cr_exec_opts_t *o, cr_exec_t **out, char *err, size_t errlen)
{
    *out = NULL;
    cr_exec_t *x = calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    snprintf(x->role, sizeof x->role, "%s", o->role);
    x->stat_fd = x->sys_fd = x->obj_fd = -1;
    x->ro_len = s_round(o->ro_bytes);
    x->rw_len = s_round(o->rw_bytes);
    int fd[4] = {-1, -1, -1, -1};
    int rc;
    void *ctl = NULL;
    if ((rc = fd[0] = s_memfd("crucible-ctl", s_round(sizeof *x->ctl), 0, &ctl)) < 0 ||
        (rc = fd[1] = s_memfd("crucible-out", x->rw_len, 0, (void **)&x->rw)) < 0 ||
        (rc = fd[2] = s_memfd("crucible-in", x->ro_len, 1, (void **)&x->ro)) < 0) {
        snprintf(err, errlen, "shared memory for the %s executor (%zu + %zu bytes): %s",
                 o->role, x->ro_len, x->rw_len, cr_strerror(rc));
        goto fail;
    }
    x->ctl = ctl;
    x->ctl->threads = (uint32_t)o->threads;
    if (o->cuda)
        x->ctl->cuda = *o->cuda;
    if (!o->object) { /* started ahead: the judge fills it before LOAD (cr_exec_set_object) */
        if ((fd[3] = x->obj_fd = (int)syscall(SYS_memfd_create, "crucible-object",
                                              MFD_CLOEXEC)) < 0 ||
            (x->obj_fd = fcntl(fd[3], F_DUPFD_CLOEXEC, 0)) < 0) {
            rc = -errno;
            snprintf(err, errlen, "%s object memfd: %s", o->role, strerror(errno));
            goto fail;
        }
    } else if ((fd[3] = open(o->object, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = -errno;
        snprintf(err, errlen, "%s object %s: %s", o->role, o->object, strerror(errno));
        goto fail;
    }
    char cpu[16], uid[16];
    snprintf(cpu, sizeof cpu, "%d", o->cpu);
    snprintf(uid, sizeof uid, "%u", o->uid);
    char *argv[16];
    int a = 0;
    argv[a++] = (char *)"crucible-executor";
    argv[a++] = (char *)"--role";
    argv[a++] = x->role;
    argv[a++] = (char *)"--cpu";
    argv[a++] = cpu;
    argv[a++] = (char *)"--uid";
    argv[a++] = uid;
    if (o->threads)
        argv[a++] = (char *)"--threads";
    if (o->cap_memory)
        argv[a++] = (char *)"--cap-memory";
    if (o->scratch_dir && o->scratch_dir[0]) {
        argv[a++] = (char *)"--scratch";
        argv[a++] = (char *)o->scratch_dir;
    }
    argv[a] = NULL;
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        rc = -errno;
        snprintf(err, errlen, "fork for the %s executor: %s", o->role, strerror(errno));
        goto fail;
    }
    if (pid == 0)
        s_child(o->program, argv, fd);
    x->pid = x->pid0 = pid;
    s_live_set(pid, 1);
    for (int i = 0; i < 4; i++)
        close(fd[i]);
    char sp[64];
    snprintf(sp, sizeof sp, "/proc/%d/schedstat", (int)pid);
    x->stat_fd = open(sp, O_RDONLY | O_CLOEXEC);
    snprintf(sp, sizeof sp, "/proc/%d/syscall", (int)pid);
    x->sys_fd = open(sp, O_RDONLY | O_CLOEXEC);
    if (x->sys_fd < 0)
        cr_info("%s executor: /proc/%d/syscall not readable (%s): a CPU-time sample may miss "
                "its last slice", o->role, (int)pid, strerror(errno));
    x->wall = o->threads || x->stat_fd < 0;
    x->spin_ns = o->spin_ns;
    x->to_done = o->wall_to_done;
    x->whole = o->whole_times;
    *out = x;
    return 0;
fail:
    for (int i = 0; i < 4; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    cr_exec_destroy(&x);
    return rc < 0 ? rc : -EIO;
}

int cr_exec_ready(cr_exec_t *x, char *err, size_t errlen)
{
    if (x->ready)
        return 0;
    if (err && errlen)
        err[0] = '\0';
    int rc;
    if ((rc = s_wait_ready(x, err, errlen)) != 0 || (rc = s_freeze(x)) != 0) {
        if (!err[0] || rc == CR_E_EXEC)
            snprintf(err, errlen, "%s", x->fault.msg[0] ? x->fault.msg : "executor lost");
        return rc;
    }
    cpu_set_t set;
    x->spin = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 1;
    if (x->spin_ns <= 0)
        x->spin_ns = S_SPIN_NS;
    x->base_handlers = s_handlers(x->pid);
    s_calibrate(x);
    if (x->fault.kind != CR_EXEC_OK) {
        snprintf(err, errlen, "%s", x->fault.msg);
        return CR_E_EXEC;
    }
    x->ready = 1;
    cr_debug("%s executor pid %d ready: empty command %.2f us (%s), arenas %zu + %zu bytes",
             x->role, (int)x->pid, x->overhead_us, x->wall ? "wall clock" : "CPU time",
             x->ro_len, x->rw_len);
    return 0;
}

static void s_release(cr_exec_t *x);

void cr_exec_destroy(cr_exec_t **xp)
{
    cr_exec_t *x = xp ? *xp : NULL;
    if (!x)
        return;
    s_kill(x);
    s_release(x);
    *xp = NULL;
}

/* Executors abandoned (killed, not yet reaped): cr_exec_reap_abandoned's. */
static pid_t s_abandoned[64];
static int s_nabandoned;

void cr_exec_abandon(cr_exec_t **xp)
{
    cr_exec_t *x = xp ? *xp : NULL;
    if (!x)
        return;
    if (x->pid > 0) {
        kill(x->pid, SIGKILL); /* reaped later (cr_exec_reap_abandoned) or by our end */
        if (s_nabandoned == (int)(sizeof s_abandoned / sizeof *s_abandoned))
            cr_exec_reap_abandoned(); /* full: wait for the oldest now */
        s_abandoned[s_nabandoned++] = x->pid;
    }
    x->pid = 0;
    s_release(x);
    *xp = NULL;
}

int cr_exec_reap_abandoned(void)
{
    int n = s_nabandoned;
    for (int i = 0; i < s_nabandoned; i++)
        while (waitpid(s_abandoned[i], NULL, 0) < 0 && errno == EINTR) {
        }
    s_nabandoned = 0;
    return n;
}

static void s_release(cr_exec_t *x)
{
    if (x->pid0 > 0)
        s_live_set(x->pid0, 0);
    if (x->stat_fd >= 0)
        close(x->stat_fd);
    if (x->sys_fd >= 0)
        close(x->sys_fd);
    if (x->obj_fd >= 0)
        close(x->obj_fd);
    if (x->ctl)
        munmap(x->ctl, s_round(sizeof *x->ctl));
    if (x->ro)
        munmap(x->ro, x->ro_len);
    if (x->rw)
        munmap(x->rw, x->rw_len);
    free(x);
}

/* ---------------------------------------------------------------- calls */

static void s_fp_report(cr_exec_t *x, int *fp_changed, char *why, size_t whylen)
{
    if (!fp_changed)
        return;
    *fp_changed = x->ctl->fp_changed != 0;
    if (*fp_changed && why)
        s_said(x, why, whylen);
}

int cr_exec_load(cr_exec_t *x, int *fp_changed, char *why, size_t whylen)
{
    if (fp_changed)
        *fp_changed = 0;
    int rc = s_command(x, CR_EXEC_OP_LOAD, NULL);
    if (rc != 0)
        return rc;
    if (x->ctl->result != 0) {
        char said[sizeof x->ctl->msg];
        s_said(x, said, sizeof said);
        s_fail(x, CR_EXEC_LOAD, 0, "the %s's object did not load: %s", x->role,
               said[0] ? said : "no reason given");
        s_kill(x);
        return CR_E_EXEC;
    }
    s_fp_report(x, fp_changed, why, whylen);
    return 0;
}

int cr_exec_set_object(cr_exec_t *x, const char *path, char *err, size_t errlen)
{
    if (x->obj_fd < 0) {
        snprintf(err, errlen, "the %s executor was started with its object", x->role);
        return -EINVAL;
    }
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        int e = -errno;
        snprintf(err, errlen, "%s object %s: %s", x->role, path, strerror(errno));
        return e;
    }
    int rc = ftruncate(x->obj_fd, 0) == 0 && lseek(x->obj_fd, 0, SEEK_SET) == 0 ? 0 : -errno;
    if (rc == 0)
        rc = cr_file_copy_fd(in, x->obj_fd);
    close(in);
    if (rc != 0)
        snprintf(err, errlen, "copying the %s object %s: %s", x->role, path, cr_strerror(rc));
    return rc;
}

cr_exec_ctl_t *cr_exec_ctl(cr_exec_t *x)
{
    return x->ctl;
}

int cr_exec_command(cr_exec_t *x, uint32_t op, double *us)
{
    double t = 0;
    int rc = s_command(x, op, &t);
    if (rc == 0 && us) {
        *us = t - s_least_cost(x);
        if (*us < 1e-3)
            *us = 1e-3;
    }
    return rc;
}

void cr_exec_set_deadline(cr_exec_t *x, int64_t deadline_ns)
{
    x->deadline_ns = deadline_ns;
}

int cr_exec_call(cr_exec_t *x, const cr_exec_arg_t *args, unsigned n, double *us,
                 int *fp_changed, char *why, size_t whylen)
{
    if (fp_changed)
        *fp_changed = 0;
    if (n > CR_EXEC_MAX_ARGS)
        return -EINVAL;
    memcpy(x->ctl->args, args, n * sizeof *args);
    x->ctl->nargs = n;
    int rc = cr_exec_command(x, CR_EXEC_OP_CALL, us);
    if (rc != 0)
        return rc;
    s_fp_report(x, fp_changed, why, whylen);
    return 0;
}

const cr_exec_fault_t *cr_exec_fault(const cr_exec_t *x)
{
    return &x->fault;
}

const void *cr_exec_fault_ptr(const cr_exec_t *x)
{
    if (x->fault.kind != CR_EXEC_RO_WRITE || x->fault.value >= x->ro_len)
        return NULL;
    return x->ro + x->fault.value;
}

double cr_exec_wait_us(const cr_exec_t *x)
{
    return x->wait_us;
}

double cr_exec_freeze_us(const cr_exec_t *x)
{
    return x->freeze_us;
}

void cr_exec_last_window(const cr_exec_t *x, int64_t *t0, int64_t *td)
{
    *t0 = x->last_t0;
    *td = x->last_td;
}

double cr_exec_overhead_us(const cr_exec_t *x)
{
    return x->overhead_us;
}

int cr_exec_sandbox_net(const cr_exec_t *x)
{
    return x->ctl->sandbox_net != 0;
}

pid_t cr_exec_pid(const cr_exec_t *x)
{
    return x->pid;
}

int cr_exec_result(const cr_exec_t *x, char *msg, size_t len)
{
    if (msg && len)
        s_said(x, msg, len);
    return x->ctl->result;
}
