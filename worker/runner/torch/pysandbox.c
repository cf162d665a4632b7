/* pysandbox.c — libcrucible-pysandbox.so: the sandbox (sandbox.h) for the
 * torch backend's Python executor (crucible_torch.py), which calls these
 * two functions through ctypes. The same code as crucible-executor's: one
 * sandbox, whichever language the executor is written in. */
#include "sandbox.h"

#include <stdio.h>

/* Enters the sandbox for the rest of the process (cr_sandbox_enter, with
 * allow_jit: PyTorch's CPU kernels write code at run time); the
 * SIGSYS handler echoes a denied call into echo[0..echo_len) (the control
 * block's msg). Returns 0 with the summary in summary[0..len) and *net set,
 * or -1 with what failed there. */
int cr_pysandbox_enter(const char *scratch, unsigned uid, int threads, int cap_memory,
                       int allow_exec, char *echo, size_t echo_len, char *summary, size_t len,
                       int *net);
int cr_pysandbox_lock(int threads);

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

/* The second filter, once the first call has run: handlers and timers
 * (cr_sandbox_lock_handlers). Not the code rules: PyTorch's CPU kernels
 * (oneDNN) and Triton map code as they meet new shapes (docs/torch.md).
 * threads is unused: the handler rules are the same either way. 0 or a
 * negative code. */
int cr_pysandbox_lock(int threads)
{
    (void)threads;
    return cr_sandbox_lock_handlers();
}
