/* box.h — the box every compiler runs in (docs/security.md, "Compilers").
 *
 * A compiler reads whatever its input names (#include "/etc/shadow",
 * .incbin in inline asm) and writes what it read into its log, which goes
 * back to the client. So no compiler (of a candidate, a reference or a
 * baseline; cc or nvcc; `--version` included) runs in the worker's view of
 * the machine. Its child, between fork and exec:
 *
 *   namespaces  a private mount and network namespace (only a loopback
 *               that is down); a worker that is not root gets them inside
 *               a new user namespace; a PID namespace whose pid 1 is the
 *               compiler, so that nothing it starts outlives it
 *   files       a new root: a small read-only tmpfs holding read-only bind
 *               mounts of the toolchain (/usr, /bin, /lib*, /etc/alternatives,
 *               /etc/ld.so.cache, the compilers themselves and their
 *               toolkit roots), /dev/null, /dev/zero, /dev/urandom, and the
 *               job's build dir, writable, at /build (the cwd; TMPDIR is
 *               /build/tmp). No /proc, /home, /root, /tmp, /var, /etc.
 *   Landlock    the same paths again, for kernels or privileges without
 *               mount namespaces: reads only beneath the toolchain and the
 *               build dir, writes only beneath the build dir
 *   identity    root drops to --compile-uid (default 65533; not the
 *               executors' --sandbox-uid) with no groups;
 *               a worker that is not root keeps its uid; no_new_privs
 *   limits      address space (--compile-memory-mb), CPU time (the compile
 *               timeout + 5 s), processes, file size, no core; the log is
 *               capped by the caller (CR_COMPILE_LOG_CAP)
 *   environment PATH, LANG, LC_*, LD_LIBRARY_PATH, CUDA_*, NVCC_* of the
 *               worker, TMPDIR and HOME in the build dir; nothing else
 *
 * cr_box_new probes once which steps the kernel and the privileges permit
 * and logs them at info level, naming the skipped ones; every compile then
 * takes exactly those steps, and a step that was permitted and fails makes
 * the compile an INFRA_ERROR (cr_box_failed), never a compile error. */
#ifndef CR_BOX_H
#define CR_BOX_H

#include "config.h"
#include "proc.h"

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct cr_box cr_box_t;

/* One compiler run's share of the box, made in the parent by
 * cr_box_prepare and read by the child (cr_box_enter). */
typedef struct {
    const cr_box_t *box;  /* not owned */
    int ruleset;          /* Landlock ruleset descriptor; -1 = none; owned */
    char build[PATH_MAX]; /* the build dir on the host */
    char **envp;          /* the compiler's environment; owned */
    int *shm;             /* MAP_SHARED: [0] steps taken, [1] failed step, [2] its errno */
    cr_rlimits_t limits;  /* for cr_proc_opts_t.limits */
} cr_box_run_t;

/* Makes the box for the compilers named (commands or paths, as configured),
 * under work_dir (which must be the worker's private dir, workdir.h):
 * <work_dir>/box is the new root's mount point. Probes the steps and logs
 * the summary. Returns NULL with a log line only when out of memory or when
 * the mount point cannot be made. Caller owns it (cr_box_destroy). */
cr_box_t *cr_box_new(const cr_config_t *cfg, const char *work_dir, const char *const *compilers,
                     int n);

void cr_box_destroy(cr_box_t **self_p);

/* The probe's summary line ("uid 65533, net private, ..."). */
const char *cr_box_summary(const cr_box_t *b);

/* Readies build (an existing dir the worker made, holding the sources) for
 * one run with a CPU limit of cpu_s seconds: hands it to the box's uid,
 * makes its tmp/, the Landlock rules and the environment. Returns 0, or
 * -errno (an ENOSPC there is the disk's). Release with cr_box_run_close,
 * also after a failure. */
int cr_box_prepare(const cr_box_t *b, const char *build, int64_t cpu_s, cr_box_run_t *run);

/* In the child, before exec (async-signal-safe): takes the box's steps and
 * chdirs to the build dir inside it. On failure stores the step in
 * run->shm and returns -1: the child must _exit. */
int cr_box_enter(const cr_box_run_t *run);

/* After the run: 1 with why filled when a step of the box failed in the
 * child (the compile is then the worker's failure), else 0. */
int cr_box_failed(const cr_box_run_t *run, char *why, size_t len);

void cr_box_run_close(cr_box_run_t *run);

#endif
