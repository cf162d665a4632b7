/* exec_child.c — see exec_child.h. */
#define _GNU_SOURCE
#include "exec_child.h"

#include "sandbox.h"

#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *s_prog = "crucible-executor";
static cr_exec_ctl_t *s_ctl;

int cr_exec_child_args(int argc, char **argv, const char *prog, const char *usage,
                       cr_exec_args_t *a)
{
    s_prog = prog;
    memset(a, 0, sizeof *a);
    a->cpu = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return -1;
        } else if (!strcmp(argv[i], "--role") && i + 1 < argc) {
            a->role = argv[++i];
        } else if (!strcmp(argv[i], "--threads")) {
            a->threads = 1;
        } else if (!strcmp(argv[i], "--cap-memory")) {
            a->cap_memory = 1;
        } else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) {
            a->cpu = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--uid") && i + 1 < argc) {
            a->uid = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--scratch") && i + 1 < argc) {
            a->scratch = argv[++i];
        } else {
            fprintf(stderr, "%s: unknown argument '%s'\n%s", prog, argv[i], usage);
            return 2;
        }
    }
    if (!a->role) {
        fprintf(stderr, "%s: --role is required\n%s", prog, usage);
        return 2;
    }
    /* Dies with the judge; a judge that is already gone left no one to serve. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1)
        _exit(CR_EXEC_EXIT_SETUP);
    return 0;
}

void cr_exec_child_set_ctl(cr_exec_ctl_t *ctl)
{
    s_ctl = ctl;
}

void cr_exec_child_die(const char *fmt, ...)
{
    char msg[sizeof s_ctl->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", s_prog, msg);
    if (s_ctl)
        memcpy(s_ctl->msg, msg, sizeof msg);
    _exit(CR_EXEC_EXIT_SETUP);
}

static void s_wait(uint32_t *word, uint32_t val)
{
    syscall(SYS_futex, word, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void s_wake(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void cr_exec_child_enter(cr_exec_ctl_t *ctl, const cr_exec_args_t *a)
{
    cr_sandbox_echo_denials(ctl->msg, sizeof ctl->msg);
    char err[512];
    cr_sandbox_report_t rep;
    cr_sandbox_opts_t o;
    memset(&o, 0, sizeof o);
    o.scratch_dir = a->scratch;
    o.uid = a->uid;
    o.threads = a->threads;
    o.cap_memory = a->cap_memory;
    if (cr_sandbox_enter(&o, &rep, err, sizeof err) != 0)
        cr_exec_child_die("sandbox: %s", err);
    fprintf(stderr, "%s: %s: %s\n", s_prog, a->role, rep.summary);
    ctl->sandbox_net = (uint32_t)rep.net;
    __atomic_store_n(&ctl->ready, 1, __ATOMIC_RELEASE);
    s_wake(&ctl->ready);
}

uint32_t cr_exec_child_next(cr_exec_ctl_t *ctl, uint32_t last)
{
    uint32_t seq;
    while ((seq = __atomic_load_n(&ctl->cmd_seq, __ATOMIC_ACQUIRE)) == last)
        s_wait(&ctl->cmd_seq, last);
    return seq;
}

void cr_exec_child_done(cr_exec_ctl_t *ctl, uint32_t seq)
{
    __atomic_store_n(&ctl->done_seq, seq, __ATOMIC_RELEASE);
    s_wake(&ctl->done_seq);
}
