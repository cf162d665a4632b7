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
    double seconds;     /* wall time from fork to reap */
    pid_t pid;
} cr_proc_result_t;

/* Runs the child to completion (or deadline). Returns 0 when the child was
 * started and reaped, whatever its outcome (see *r); -errno when it could
 * not be started (pipe/fork failed), with *r zeroed. The caller releases *r
 * with cr_proc_result_close() after a 0 return. */
int cr_proc_run(const cr_proc_opts_t *o, cr_proc_result_t *r);

void cr_proc_result_close(cr_proc_result_t *r);

/* Describes how the child ended: "exit 3", "signal 11 (Segmentation fault)",
 * "timeout after 2.00 s". Writes into buf. */
const char *cr_proc_describe(const cr_proc_result_t *r, char *buf, size_t len);

#endif
