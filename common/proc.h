/* proc.h — run a child process under supervision.
 *
 * The child always gets its own process group, so a timeout or the end of
 * the run can kill everything it started (grandchildren, fork bombs) with
 * one kill(-pgid, SIGKILL). Safe to call from several threads at once: every
 * descriptor is opened O_CLOEXEC and the child only calls async-signal-safe
 * functions between fork and exec. */
#ifndef CR_PROC_H
#define CR_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    int64_t as_bytes;    /* RLIMIT_AS; 0 = unchanged */
    int64_t fsize_bytes; /* RLIMIT_FSIZE; 0 = unchanged */
    int64_t nofile;      /* RLIMIT_NOFILE; 0 = unchanged */
    int64_t nproc;       /* RLIMIT_NPROC; 0 = unchanged (ignored for root by the kernel) */
    int64_t cpu_s;       /* RLIMIT_CPU in seconds; 0 = unchanged */
    int no_core;         /* RLIMIT_CORE = 0 when set */
} cr_rlimits_t;

typedef struct {
    char *const *argv;          /* NULL-terminated; argv[0] is looked up in PATH */
    char *const *envp;          /* NULL = inherit the environment */
    const char *cwd;            /* NULL = inherit */
    const void *stdin_data;     /* written to the child's stdin, then closed; NULL = empty */
    size_t stdin_len;
    size_t out_cap;             /* stdout bytes kept; the rest is read and dropped */
    size_t err_cap;             /* stderr bytes kept (the last ones when it overflows) */
    int merge_stderr;           /* stderr goes to the stdout capture */
    int64_t timeout_ms;         /* 0 = none; on expiry the group is SIGKILLed */
    const cr_rlimits_t *limits; /* NULL = none */
    void (*child_setup)(void *arg); /* in the child before exec; async-signal-safe only */
    void *child_arg;
    /* cr_proc_wait: called when stdout ends before the child is reaped;
     * returning 1 says the output is all that was wanted: the group is
     * SIGKILLed and cr_proc_wait returns at once with `detached` set, its
     * exit status unknown, and the caller reaps it later (cr_proc_reap),
     * e.g. while a new child works. NULL = always wait for the exit. */
    int (*out_done)(pid_t pid, const char *out, size_t len, void *arg);
    void *out_done_arg;
} cr_proc_opts_t;

typedef struct {
    int exited;         /* 1 when the child called exit */
    int exit_code;      /* valid when exited */
    int signaled;       /* 1 when a signal ended it (also after a timeout kill) */
    int signal;         /* valid when signaled */
    int timed_out;      /* 1 when we killed it at the deadline */
    int spawn_errno;    /* exec failed in the child: its errno (exit code 127) */
    char *out;          /* captured stdout, NUL-terminated, owned; never NULL after success */
    size_t out_len;
    int out_truncated;
    char *err;          /* captured stderr tail, NUL-terminated, owned; never NULL after success */
    size_t err_len;
    int err_truncated;
    size_t in_written;  /* stdin bytes the child took (short: it ended before reading it all) */
    double seconds;     /* wall time from fork to reap */
    double eof_s;       /* cr_proc_wait: from its start to the end of stdout; 0 = never */
    double exit_s;      /* cr_proc_wait: from its start to the reap; 0 = killed or not seen */
    int detached;       /* out_done took the output: killed, not reaped (cr_proc_reap) */
    int kept;           /* cr_proc_exchange: the answer is whole, the child still serves */
    pid_t pid;
} cr_proc_result_t;

/* Runs the child to completion (or deadline). Returns 0 when the child was
 * started and reaped, whatever its outcome (see *r); -errno when it could
 * not be started (pipe/fork failed), with *r zeroed. The caller releases *r
 * with cr_proc_result_close() after a 0 return. */
int cr_proc_run(const cr_proc_opts_t *o, cr_proc_result_t *r);

/* A child started ahead of its input (cr_proc_spawn), handed its stdin and
 * supervised later (cr_proc_wait): the runner is started, and its CUDA
 * context made, while the previous one still measures. */
typedef struct {
    pid_t pid;  /* 0 = none */
    int in_fd;  /* our end of its stdin; -1 = closed */
    int out_fd; /* our end of its stdout */
    int err_fd; /* our end of its stderr */
    int64_t t0; /* ns, monotonic: when it was forked */
} cr_proc_t;

/* No child: what cr_proc_spawn leaves on failure and cr_proc_wait/discard
 * leave behind. */
#define CR_PROC_NONE ((cr_proc_t){.pid = 0, .in_fd = -1, .out_fd = -1, .err_fd = -1})

/* Forks and execs o->argv with o's argv, envp, cwd, merge_stderr, limits and
 * child_setup; nothing is written or read yet. Returns 0 with *p filled, or
 * -errno with *p empty (pid 0, descriptors -1). */
int cr_proc_spawn(const cr_proc_opts_t *o, cr_proc_t *p);

/* Writes o->stdin_data, captures output under o's caps and waits with
 * o->timeout_ms counted from this call; then as cr_proc_run. Takes over *p
 * (emptied on return, whatever the outcome). -ENOMEM: the child was killed. */
int cr_proc_wait(cr_proc_t *p, const cr_proc_opts_t *o, cr_proc_result_t *r);

/* cr_proc_wait for a child that serves one input after another (the
 * worker's judge process, `crucible-runner --serve`): writes o->stdin_data
 * and leaves its stdin open; after every read of its stdout calls
 * o->out_done, and when that says the answer is whole (and the child took
 * all of its input: an answer before that breaks the exchange) returns 0 with
 * r->kept set and *p still the running child (its descriptors open, for the
 * next exchange); r holds this exchange's output and the stderr it wrote
 * meanwhile. When the child ends, breaks the pipe or runs past
 * o->timeout_ms first, it is as cr_proc_wait: killed, reaped, *p emptied,
 * r->kept 0. -ENOMEM: the child was killed. */
int cr_proc_exchange(cr_proc_t *p, const cr_proc_opts_t *o, cr_proc_result_t *r);

/* 1 while a spawned child has not ended (it is not reaped by looking). */
int cr_proc_alive(const cr_proc_t *p);

/* Waits for a child cr_proc_wait left detached (already killed). */
void cr_proc_reap(pid_t pid);
/* Kills a spawned child's group, reaps it and closes our ends; *p emptied.
 * Safe on an empty *p. */
void cr_proc_discard(cr_proc_t *p);

void cr_proc_result_close(cr_proc_result_t *r);

/* Describes how the child ended: "exit 3", "signal 11 (Segmentation fault)",
 * "timeout after 2.00 s". Writes into buf. */
const char *cr_proc_describe(const cr_proc_result_t *r, char *buf, size_t len);

#endif
