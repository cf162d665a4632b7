/* sandbox.h — what confines candidate code inside crucible-runner.
 *
 * The runner enters the sandbox once, after it has loaded the reference and
 * baseline objects and before the candidate's object is loaded (its
 * constructors are candidate code). From then on, for the rest of the
 * process (docs/sandbox.md):
 *
 *   network      a private network namespace (only a loopback that is down)
 *   files        a private mount namespace: a size-capped tmpfs on the
 *                scratch dir (the working directory) and on /dev/shm;
 *                Landlock lets writes happen only beneath the scratch dir,
 *                /dev (GPU device nodes, /dev/null) and /dev/shm; reads are
 *                not restricted (the CUDA runtime reads many files)
 *   identity     root drops to an unprivileged uid/gid (RunnerRequest
 *                .sandbox_uid, the worker's --sandbox-uid) with no groups
 *                and no capabilities; the process is not dumpable
 *   limits       processes, file size, open files, no core; for C tasks an
 *                address-space cap
 *   system calls a seccomp filter (default allow) traps what a kernel
 *                launcher never needs; the SIGSYS handler writes one line
 *                to stderr and exits CR_RUNNER_EXIT_SANDBOX, which the
 *                worker records as HACK_DETECTED / sandbox_violation
 *
 * Each step the kernel or the privileges do not permit (not root, no
 * Landlock, no user namespaces) is skipped, recorded in the report and
 * logged at info level; the run goes on. */
#ifndef CR_SANDBOX_H
#define CR_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

/* Exit status of a runner whose candidate made a forbidden system call
 * (the worker maps it to HACK_DETECTED, flag "sandbox_violation"). 86: not
 * a status the runner, a shell (126, 127) or a signal (128 + n) uses. */
#define CR_RUNNER_EXIT_SANDBOX 86
/* The line the SIGSYS handler writes starts with this (then "<name> (<nr>)"). */
#define CR_SANDBOX_DENIED_PREFIX "crucible-runner: sandbox: denied system call "
/* uid and gid a root runner drops to when the request names none: Debian's
 * nobody/nogroup, which owns no files. */
#define CR_SANDBOX_DEFAULT_UID 65534u
/* 64 MiB: the tmpfs on the scratch dir and on /dev/shm, and the largest
 * file the candidate may write (RLIMIT_FSIZE). A kernel launcher writes
 * nothing; a few temporary files of a library fit easily, a disk filler
 * meets ENOSPC (or SIGXFSZ for one big file) long before the disk does. */
#define CR_SANDBOX_SCRATCH_BYTES (64ull << 20)

typedef struct {
    const char *scratch_dir; /* the job's private dir; becomes the cwd; NULL/"" = none */
    uint32_t uid;            /* uid and gid to drop to when root; 0 = CR_SANDBOX_DEFAULT_UID */
    int threads;             /* 1: the candidate may create threads (cuda; c with "threads") */
    int cap_memory;          /* 1: cap the address space (C tasks; CUDA reserves huge ranges) */
    const char *stay_root;   /* not NULL: keep the uid (root) and say why in the log; for
                                a root-only step the judge takes later (clock locking) */
    int allow_exec;          /* 1: new processes and programs are let through (fork, clone
                                without CLONE_THREAD, execve); only with threads: the torch
                                backend on a GPU, whose Triton JIT runs ptxas (docs/torch.md) */
    int allow_jit;           /* 1: pages may turn executable (mprotect with PROT_EXEC): code
                                a JIT writes (oneDNN in PyTorch on the CPU, Triton); the
                                torch executor, whose harness the judge trusts with nothing */
} cr_sandbox_opts_t;

/* What was put in place (1 = in force). */
typedef struct {
    int net;           /* private network namespace */
    int userns;        /* namespaces came from a new user namespace (not root) */
    int mounts;        /* private mount namespace with / made private */
    int tmpfs_scratch; /* tmpfs of CR_SANDBOX_SCRATCH_BYTES on the scratch dir */
    int tmpfs_shm;     /* private tmpfs of CR_SANDBOX_SCRATCH_BYTES on /dev/shm */
    int landlock_abi;  /* Landlock ABI whose write rules are enforced; 0 = none */
    int uid_dropped;   /* root dropped to uid */
    uint32_t uid;      /* uid the process runs as afterwards */
    int seccomp;       /* the filter is loaded */
    int threads;       /* the filter lets the candidate create threads */
    uint64_t as_bytes; /* RLIMIT_AS set; 0 = not capped */
    char summary[512]; /* one line for the log, also naming what was skipped and why */
} cr_sandbox_report_t;

/* Opens path (read-only, close-on-exec) while the process still has its
 * starting privileges and mount view, and writes "/proc/self/fd/<n>" into
 * alias: loading alias after cr_sandbox_enter reaches the same file even
 * when its directories are closed to the sandbox uid or hidden under the
 * scratch tmpfs. Returns 0, or -errno (alias then empty). */
int cr_sandbox_hold(const char *path, char *alias, size_t aliaslen);

/* Enters the sandbox (header) for the rest of the process. Returns 0 with
 * *rep filled (steps that were not permitted are 0 there and named in
 * rep->summary), or a negative code with err saying what failed when a step
 * that is permitted went wrong (the drop of a root uid, the scratch dir);
 * the caller must then not load candidate code. Not thread-safe: call it
 * while no other thread of the process runs candidate code. */
int cr_sandbox_enter(const cr_sandbox_opts_t *o, cr_sandbox_report_t *rep, char *err,
                     size_t errlen);

/* Stacks a second seccomp filter once the executor has loaded its object:
 * traps installing signal handlers (rt_sigaction with a new action, for
 * every signal but the C library's own 32 and 33), POSIX
 * and interval timers and alarm, executable mmap, personality, and (threads
 * 0) every mprotect. The SIGSYS handler of cr_sandbox_enter reports a trap.
 * Returns 0 or a negative code (the filter is then not in force). */
int cr_sandbox_lock_code(int threads);

/* The second filter without its code rules: traps installing signal
 * handlers and timers only, for an executor whose runtime maps code as it
 * runs (the torch executor: PyTorch's CPU kernels JIT their code on first
 * use, Triton loads its kernels). With allow_exec (the sandbox let programs
 * through: Triton's compilers on a GPU) only the timers: every program a
 * child execs inherits the filter, and compilers install handlers (gcc for
 * SIGINT, Python's child for SIGPIPE before exec); docs/torch.md §5 says
 * what that leaves. 0 or a negative code. */
int cr_sandbox_lock_handlers(int allow_exec);

/* From now on the SIGSYS handler also copies its line (NUL-terminated,
 * without the newline) into buf[0..len): the executor points it at the
 * control block, so the judge can name the call. buf must outlive the
 * process. */
void cr_sandbox_echo_denials(char *buf, size_t len);

/* The name of system call nr on this architecture when the filter traps
 * it ("socket"), else "?". Async-signal-safe. */
const char *cr_sandbox_syscall_name(long nr);

#endif
