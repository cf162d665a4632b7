/* executor.c — crucible-executor: the process that runs client code.
 *
 * Started by the judge (crucible-runner, exec.c) with the descriptors of
 * exec_proto.h. In order: map the control block and the two arenas (the
 * input arena read-only: the judge sealed it so nothing here can make it
 * writable), pin to the timing core, install the fault handler, enter the
 * sandbox (sandbox.h), say ready, then serve commands until killed. The
 * object is loaded only on the judge's LOAD command, inside the sandbox: its
 * constructors are client code. After the load a second seccomp filter
 * denies what kernel code never needs (sandbox.h, cr_sandbox_lock_code).
 *
 * Nothing here is trusted by the judge. It is the honest half of the
 * protocol; a candidate can rewrite all of it from inside, and the judge's
 * verdict stays right (docs/judge.md, "Threat model"). It never sees the
 * seed, the report channel, the reference's outputs or the statistics.
 *
 * Built with full RELRO and immediate binding (CMakeLists.txt). */
#define _GNU_SOURCE
#include "exec_child.h"
#include "exec_proto.h"
#include "fpenv.h"
#include "sandbox.h"
#include "task.h"

#include <dlfcn.h>
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char s_usage[] =
    "usage: crucible-executor --role candidate|reference [--threads] [--cap-memory]\n"
    "                         [--cpu N] [--uid UID] [--scratch DIR]\n"
    "\n"
    "Runs client code for crucible-runner, which starts it with the control\n"
    "block, the two arenas and the object on descriptors 3-6 (docs/judge.md).\n"
    "Not meant to be run by hand.\n";

static cr_exec_ctl_t *s_ctl;    /* the control block (shared) */
static unsigned char *s_ro;     /* input arena, read-only */
static size_t s_ro_len;         /* bytes */
static unsigned char *s_rw;     /* output arena */
static size_t s_rw_len;         /* bytes */

/* A store into the input arena ends the executor with CR_EXEC_EXIT_RO_WRITE
 * and the offset; any other fault is left to kill the process with its
 * signal (SA_RESETHAND: returning re-runs the faulting instruction under the
 * default action). Async-signal-safe: stores and _exit only. */
static void s_on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    unsigned char *a = si->si_addr;
    if (s_ro && a >= s_ro && a < s_ro + s_ro_len) {
        s_ctl->fault_off = (uint64_t)(a - s_ro);
        _exit(CR_EXEC_EXIT_RO_WRITE);
    }
}

static void *s_map(int fd, int prot, size_t *len, const char *what)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0)
        cr_exec_child_die("%s: descriptor %d is not a sized file", what, fd);
    *len = (size_t)st.st_size;
    /* MAP_POPULATE: the page tables are filled now, so no timed call pays
     * first-touch faults on the pages the judge wrote (shmem is mapped in
     * 4 KiB pages wherever shmem_enabled is "never", the default) */
    void *p = mmap(NULL, *len, prot, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED)
        cr_exec_child_die("%s: mmap: %s", what, strerror(errno));
    close(fd);
#ifdef MADV_HUGEPAGE
    if (*len >= (2u << 20))
        madvise(p, *len, MADV_HUGEPAGE); /* advice only: fewer first-touch faults */
#endif
    return p;
}

/* The command's arguments as cr_entry takes them: args[i] points at a
 * pointer into an arena or at a value. An offset outside its arena (only a
 * broken judge sends one) becomes a NULL pointer. */
static void s_args(void **args, void **ptr, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        cr_exec_arg_t *a = &s_ctl->args[i];
        if (a->kind == CR_EXEC_ARG_VALUE) {
            args[i] = a->val;
            continue;
        }
        unsigned char *base = a->kind == CR_EXEC_ARG_RO ? s_ro : s_rw;
        size_t len = a->kind == CR_EXEC_ARG_RO ? s_ro_len : s_rw_len;
        ptr[i] = a->off < len ? base + a->off : NULL;
        args[i] = &ptr[i];
    }
}

static cr_task_entry_fn s_load(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", CR_EXEC_FD_OBJ);
    /* RTLD_LOCAL: the object's solve() binds inside the object. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(s_ctl->msg, sizeof s_ctl->msg, "%s", e ? e : "dlopen failed");
        return NULL;
    }
    void *sym = dlsym(h, CR_TASK_ENTRY);
    if (!sym) {
        snprintf(s_ctl->msg, sizeof s_ctl->msg, "the object defines no %s (not built from the "
                 "task's shim)", CR_TASK_ENTRY);
        return NULL;
    }
    cr_task_entry_fn fn;
    memcpy(&fn, &sym, sizeof fn); /* object to function pointer, as POSIX dlsym allows */
    return fn;
}

static void s_serve(void)
{
    cr_task_entry_fn fn = NULL;
    uint32_t last = 0;
    void *args[CR_EXEC_MAX_ARGS], *ptr[CR_EXEC_MAX_ARGS];
    for (;;) {
        uint32_t seq = last = cr_exec_child_next(s_ctl, last);
        s_ctl->result = 0;
        s_ctl->fp_changed = 0;
        switch (s_ctl->op) {
        case CR_EXEC_OP_PING:
            break;
        case CR_EXEC_OP_LOAD: {
            char why[160];
            s_ctl->msg[0] = '\0';
            if (!(fn = s_load())) {
                s_ctl->result = -1;
                break;
            }
            /* A constructor's FP state is the candidate's too. */
            if (cr_fpenv_check(why, sizeof why)) {
                s_ctl->fp_changed = 1;
                snprintf(s_ctl->msg, sizeof s_ctl->msg, "%s", why);
            }
            int rc = cr_sandbox_lock_code(s_ctl->threads != 0);
            if (rc != 0)
                fprintf(stderr, "crucible-executor: second seccomp filter: %s\n",
                        strerror(-rc));
            break;
        }
        case CR_EXEC_OP_CALL: {
            unsigned n = s_ctl->nargs < CR_EXEC_MAX_ARGS ? s_ctl->nargs : CR_EXEC_MAX_ARGS;
            if (!fn) {
                s_ctl->result = -1;
                break;
            }
            s_args(args, ptr, n);
            fn(args);
            char why[160];
            if (cr_fpenv_check(why, sizeof why)) {
                s_ctl->fp_changed = 1;
                snprintf(s_ctl->msg, sizeof s_ctl->msg, "%s", why);
            }
            break;
        }
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
    int rc = cr_exec_child_args(argc, argv, "crucible-executor", s_usage, &A);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    size_t ctl_len;
    s_ctl = s_map(CR_EXEC_FD_CTL, PROT_READ | PROT_WRITE, &ctl_len, "control block");
    cr_exec_child_set_ctl(s_ctl);
    if (ctl_len < sizeof *s_ctl)
        cr_exec_child_die("control block: %zu bytes, expected %zu", ctl_len, sizeof *s_ctl);
    s_rw = s_map(CR_EXEC_FD_RW, PROT_READ | PROT_WRITE, &s_rw_len, "output arena");
    s_ro = s_map(CR_EXEC_FD_RO, PROT_READ, &s_ro_len, "input arena");
    if (A.cpu >= 0 && !A.threads) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(A.cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            fprintf(stderr, "crucible-executor: could not pin to cpu %d: %s\n", A.cpu,
                    strerror(errno));
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = s_on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGBUS, &sa, NULL) != 0)
        cr_exec_child_die("sigaction: %s", strerror(errno));

    cr_exec_child_enter(s_ctl, &A);
    s_serve();
    return 0;
}
