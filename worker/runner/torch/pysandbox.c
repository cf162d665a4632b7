/* pysandbox.c — libcrucible-pysandbox.so: the sandbox (sandbox.h) for the
 * torch backend's Python executor (crucible_torch.py), which calls these
 * two functions through ctypes. The same code as crucible-executor's: one
 * sandbox, whichever language the executor is written in. */
#define _GNU_SOURCE
#include "exec_proto.h"
#include "sandbox.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Enters the sandbox for the rest of the process (cr_sandbox_enter, with
 * allow_jit: PyTorch's CPU kernels write code at run time); the
 * SIGSYS handler echoes a denied call into echo[0..echo_len) (the control
 * block's msg). Returns 0 with the summary in summary[0..len) and *net set,
 * or -1 with what failed there. */
int cr_pysandbox_enter(const char *scratch, unsigned uid, int threads, int cap_memory,
                       int allow_exec, char *echo, size_t echo_len, char *summary, size_t len,
                       int *net);
int cr_pysandbox_lock(int allow_exec);
int cr_pysandbox_guard(void *ctl, void *ro, size_t ro_len);

static cr_exec_ctl_t *s_ctl;   /* the control block (shared) */
static unsigned char *s_ro;    /* the input arena's read-only mapping */
static size_t s_ro_len;        /* bytes */

/* executor.c's fault handler: a store into the input arena ends the
 * executor with CR_EXEC_EXIT_RO_WRITE and the offset (input_mutated); any
 * other fault kills it with its signal (SA_RESETHAND). Async-signal-safe. */
static void s_on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    unsigned char *a = si->si_addr;
    if (s_ro && a >= s_ro && a < s_ro + s_ro_len) {
        s_ctl->fault_off = (uint64_t)(a - s_ro);
        _exit(CR_EXEC_EXIT_RO_WRITE);
    }
}

/* Installs s_on_fault for SIGSEGV and SIGBUS (before the sandbox, whose
 * second filter traps new handlers). 0 or -1. */
int cr_pysandbox_guard(void *ctl, void *ro, size_t ro_len)
{
    s_ctl = ctl;
    s_ro = ro;
    s_ro_len = ro_len;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = s_on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGSEGV, &sa, NULL) == 0 && sigaction(SIGBUS, &sa, NULL) == 0 ? 0 : -1;
}

int cr_pysandbox_enter(const char *scratch, unsigned uid, int threads, int cap_memory,
                       int allow_exec, char *echo, size_t echo_len, char *summary, size_t len,
                       int *net)
{
    char err[512] = "";
    cr_sandbox_report_t rep;
    cr_sandbox_opts_t o = {.scratch_dir = scratch, .uid = uid, .threads = threads,
                           .cap_memory = cap_memory, .allow_exec = allow_exec,
                           .allow_jit = 1};
    if (echo && echo_len)
        cr_sandbox_echo_denials(echo, echo_len);
    if (cr_sandbox_enter(&o, &rep, err, sizeof err) != 0) {
        snprintf(summary, len, "%s", err);
        return -1;
    }
    snprintf(summary, len, "%s", rep.summary);
    *net = rep.net;
    return 0;
}

/* The second filter, once the first call has run: handlers and timers,
 * only timers with allow_exec (cr_sandbox_lock_handlers). Not the code
 * rules: PyTorch's CPU kernels (oneDNN) and Triton map code as they meet
 * new shapes (docs/torch.md). 0 or a negative code. */
int cr_pysandbox_lock(int allow_exec)
{
    return cr_sandbox_lock_handlers(allow_exec);
}
