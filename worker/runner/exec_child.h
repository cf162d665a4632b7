/* exec_child.h — the executor's side of exec_proto.h, for every executor
 * program written in C (executor.c, cuda/executor.c): its arguments, its
 * last words, the command loop's waits, entering the sandbox and saying
 * ready. Each executor keeps only what its backend does differently. */
#ifndef CR_EXEC_CHILD_H
#define CR_EXEC_CHILD_H

#include "exec_proto.h"

#include <stdint.h>

/* What exec.c passes (cr_exec_new's argv). */
typedef struct {
    const char *role;    /* --role */
    const char *scratch; /* --scratch DIR, or NULL */
    int threads;         /* --threads */
    int cap_memory;      /* --cap-memory */
    int cpu;             /* --cpu N; -1 = none */
    uint32_t uid;        /* --uid UID; 0 = the sandbox's default */
} cr_exec_args_t;

/* Parses argv for the program named prog (its messages' prefix), then
 * makes the process die with its judge (and leave at once when the judge is
 * gone already). Returns 0 to go on; -1 after --help (usage printed: main
 * returns 0); 2 after a bad argument (said on stderr: main returns 2). */
int cr_exec_child_args(int argc, char **argv, const char *prog, const char *usage,
                       cr_exec_args_t *a);

/* Where cr_exec_child_die writes its message: the control block once it
 * is mapped (NULL before). */
void cr_exec_child_set_ctl(cr_exec_ctl_t *ctl);

/* Writes why on stderr and into the control block's msg, and exits with
 * CR_EXEC_EXIT_SETUP. */
void cr_exec_child_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Enters the sandbox (sandbox.h) with a's options, records whether it has
 * a private network, and says ready (ctl->ready, woken); dies on failure. */
void cr_exec_child_enter(cr_exec_ctl_t *ctl, const cr_exec_args_t *a);

/* The next command's sequence number, after last (sleeps on cmd_seq), and
 * the end of one (done_seq = seq, woken). */
uint32_t cr_exec_child_next(cr_exec_ctl_t *ctl, uint32_t last);
void cr_exec_child_done(cr_exec_ctl_t *ctl, uint32_t seq);

#endif
