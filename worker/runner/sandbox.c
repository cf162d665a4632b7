/* sandbox.c — see sandbox.h and docs/sandbox.md.
 *
 * Design notes.
 *  1. Order. Each step needs what the earlier ones leave and forbids what
 *     the later ones do: namespaces (need root or a new user namespace) ->
 *     mounts (need the private mount namespace) -> chdir into the scratch
 *     tmpfs -> Landlock ruleset (its rules hold the new mounts) -> rlimits,
 *     oom_score_adj (raising needs nothing, but do it while writable) ->
 *     uid/gid drop -> no_new_privs -> Landlock enforced (needs no_new_privs
 *     once the capabilities are gone) -> SIGSYS handler -> seccomp (last: it
 *     forbids mount, unshare and setuid).
 *  2. Best effort. A step the kernel or our privileges do not permit is
 *     skipped and named in the report's summary; the judge goes on. Only a
 *     step we are entitled to that fails (a root uid drop) is an error: the
 *     candidate must then not run at all.
 *  3. Threads. unshare(CLONE_NEWNET/NEWNS) and Landlock apply to the calling
 *     thread and the threads it creates later; threads that already run (the
 *     CUDA runtime's, when the runner made its context ahead of the request)
 *     keep the host's network and mount view and write without Landlock. The
 *     uid drop (glibc signals every thread) and the seccomp filter (TSYNC)
 *     cover every thread.
 *  4. The filter's one table (s_rules) also names the trapped calls for the
 *     SIGSYS handler, so the message and the filter cannot disagree. Argument
 *     filters trap on "not exactly the harmless value" (kill's pid != our
 *     pid, prlimit's pid != 0), so garbage in a register's upper half traps
 *     instead of slipping past a 64-bit compare the kernel truncates. */
#define _GNU_SOURCE
#include "sandbox.h"

#include "confine.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* 4096 tasks (threads count) for the sandbox uid, which every executor of
 * every worker of the host shares: a Python executor with torch and the CUDA
 * runtime starts threads of its own (how many on a GPU is not counted yet;
 * one on the CPU), a job runs two or three executors, a GPU node a worker
 * per GPU, and the limit is the uid's, not the process's (15 compilers
 * under the same uid used up 256 on the H200 in session 17, and Python
 * could not start a thread). A thread bomb still stops at 4096. Root that stays root is exempt (the
 * kernel's rule); a user that is not root counts all its own. */
#define S_NPROC 4096
/* 256 descriptors: a judge with the CUDA runtime and NVML opens a few dozen;
 * a descriptor bomb stops here. */
#define S_NOFILE 256
/* Inodes of each tmpfs: far above the few temporary files a library makes,
 * and a bound on the kernel memory a file-creating loop can pin. */
#define S_TMPFS_INODES 16384
/* oom_score_adj: the kernel's maximum, so that when memory runs out the
 * candidate's runner is killed before the worker or anything else. */
#define S_OOM_SCORE_ADJ "1000"

/* si_code of a SIGSYS the filter raised (the kernel's uapi value; older
 * glibc headers lack the name). */
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

/* Landlock rights newer than the installed header (linux/landlock.h of the
 * build host may predate them); values from the kernel's uapi. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

/* ---- the filter's table (note 4) ---- */

typedef enum {
    S_TRAP,      /* always */
    S_NOT_SELF,  /* unless argument argi is exactly our pid */
    S_NONZERO,   /* when argument argi is not 0 (0 = "this process") */
    S_PROT_EXEC, /* when argument argi has PROT_EXEC */
    S_CLONE,     /* without CLONE_THREAD (a process); with it too unless threads are allowed */
    S_ENOSYS,    /* fails with ENOSYS: clone3's flags are in memory the filter cannot read,
                    and glibc falls back to clone, which is filtered */
    S_SIGSYS,    /* rt_sigaction installing a SIGSYS handler: ours must stay */
    S_SIGIO,     /* fcntl/ioctl commands that make the kernel signal a process when a
                    descriptor is ready (owner, signal, O_ASYNC, leases, notify): a
                    signal the kill rules never see, to the judge or another executor
                    through a descriptor they share (docs/judge.md §6) */
} s_kind_t;

typedef struct {
    long nr;          /* this architecture's number */
    const char *name; /* for the message */
    s_kind_t kind;
    unsigned argi;    /* argument the kind looks at */
} s_rule_t;

#define R(n, kind, argi) {__NR_##n, #n, kind, argi}
static const s_rule_t s_rules[] = {
    /* the network: the runner only talks over the pipes it inherited */
    R(socket, S_TRAP, 0),
    R(socketpair, S_TRAP, 0),
    R(connect, S_TRAP, 0),
    R(bind, S_TRAP, 0),
    R(listen, S_TRAP, 0),
    R(accept, S_TRAP, 0),
    R(accept4, S_TRAP, 0),
    /* other processes (the worker, runners of other GPUs under the same uid) */
    R(ptrace, S_TRAP, 0),
    R(process_vm_readv, S_TRAP, 0),
    R(process_vm_writev, S_TRAP, 0),
    R(process_madvise, S_TRAP, 0),
    R(kcmp, S_TRAP, 0),
    R(pidfd_open, S_TRAP, 0),
    R(pidfd_getfd, S_TRAP, 0),
    R(pidfd_send_signal, S_TRAP, 0),
    R(kill, S_NOT_SELF, 0),
    R(tkill, S_NOT_SELF, 0),
    R(tgkill, S_NOT_SELF, 0),
    R(rt_sigqueueinfo, S_NOT_SELF, 0),
    R(rt_tgsigqueueinfo, S_NOT_SELF, 0),
    R(fcntl, S_SIGIO, 1),
    R(ioctl, S_SIGIO, 1),
    R(setsid, S_TRAP, 0), /* a process out of the judge's group outlives its job */
    R(setpgid, S_TRAP, 0),
    R(prlimit64, S_NONZERO, 0),
    R(setpriority, S_NONZERO, 1),
    R(ioprio_set, S_NONZERO, 1),
    /* new processes and programs */
#ifdef __NR_fork
    R(fork, S_TRAP, 0),
#endif
#ifdef __NR_vfork
    R(vfork, S_TRAP, 0),
#endif
    R(clone, S_CLONE, 0),
    R(clone3, S_ENOSYS, 0),
    R(execve, S_TRAP, 0),
    R(execveat, S_TRAP, 0),
    /* code: no page turns executable after loading (patching the judge) */
    R(mprotect, S_PROT_EXEC, 2),
    R(pkey_mprotect, S_PROT_EXEC, 2),
    /* the sandbox itself */
    R(unshare, S_TRAP, 0),
    R(setns, S_TRAP, 0),
    R(mount, S_TRAP, 0),
    R(umount2, S_TRAP, 0),
    R(pivot_root, S_TRAP, 0),
    R(chroot, S_TRAP, 0),
    R(fsopen, S_TRAP, 0),
    R(fsconfig, S_TRAP, 0),
    R(fsmount, S_TRAP, 0),
    R(fspick, S_TRAP, 0),
    R(move_mount, S_TRAP, 0),
    R(open_tree, S_TRAP, 0),
#ifdef __NR_mount_setattr
    R(mount_setattr, S_TRAP, 0),
#endif
    R(setuid, S_TRAP, 0),
    R(setgid, S_TRAP, 0),
    R(setreuid, S_TRAP, 0),
    R(setregid, S_TRAP, 0),
    R(setresuid, S_TRAP, 0),
    R(setresgid, S_TRAP, 0),
    R(setfsuid, S_TRAP, 0),
    R(setfsgid, S_TRAP, 0),
    R(setgroups, S_TRAP, 0),
    R(capset, S_TRAP, 0),
    R(rt_sigaction, S_SIGSYS, 0),
    /* the machine */
    R(bpf, S_TRAP, 0),
    R(perf_event_open, S_TRAP, 0),
    R(userfaultfd, S_TRAP, 0),
    R(io_uring_setup, S_TRAP, 0),
    R(io_uring_enter, S_TRAP, 0),
    R(io_uring_register, S_TRAP, 0),
    R(init_module, S_TRAP, 0),
    R(finit_module, S_TRAP, 0),
    R(delete_module, S_TRAP, 0),
    R(kexec_load, S_TRAP, 0),
#ifdef __NR_kexec_file_load
    R(kexec_file_load, S_TRAP, 0),
#endif
    R(add_key, S_TRAP, 0),
    R(request_key, S_TRAP, 0),
    R(keyctl, S_TRAP, 0),
    R(swapon, S_TRAP, 0),
    R(swapoff, S_TRAP, 0),
    R(reboot, S_TRAP, 0),
    R(settimeofday, S_TRAP, 0),
    R(clock_settime, S_TRAP, 0),
    R(clock_adjtime, S_TRAP, 0),
    R(adjtimex, S_TRAP, 0),
    R(sethostname, S_TRAP, 0),
    R(setdomainname, S_TRAP, 0),
    R(syslog, S_TRAP, 0),
    R(acct, S_TRAP, 0),
    R(quotactl, S_TRAP, 0),
    R(open_by_handle_at, S_TRAP, 0),
    R(name_to_handle_at, S_TRAP, 0),
    R(fanotify_init, S_TRAP, 0),
    R(vhangup, S_TRAP, 0),
#ifdef __NR_iopl
    R(iopl, S_TRAP, 0),
#endif
#ifdef __NR_ioperm
    R(ioperm, S_TRAP, 0),
#endif
};
#undef R
#define S_NRULES (sizeof s_rules / sizeof s_rules[0])

static uint32_t s_native_arch; /* AUDIT_ARCH_* of this build, for the handler */

/* What the second filter (cr_sandbox_lock_code) adds, and the calls of
 * s_sigcont_rules that are in no row of s_rules, for the names. */
static const struct {
    long nr;
    const char *name;
} s_lock_names[] = {
    {__NR_timer_create, "timer_create"}, {__NR_timer_settime, "timer_settime"},
    {__NR_setitimer, "setitimer"},       {__NR_mmap, "mmap"},
    {__NR_personality, "personality"},   {__NR_prctl, "prctl"},
    {__NR_mq_notify, "mq_notify"},
#ifdef __NR_alarm
    {__NR_alarm, "alarm"},
#endif
};

static char *s_echo;     /* where the SIGSYS handler also writes its line; not owned */
static size_t s_echo_len; /* bytes there */

const char *cr_sandbox_syscall_name(long nr)
{
    for (size_t i = 0; i < S_NRULES; i++)
        if (s_rules[i].nr == nr)
            return s_rules[i].name;
    for (size_t i = 0; i < sizeof s_lock_names / sizeof s_lock_names[0]; i++)
        if (s_lock_names[i].nr == nr)
            return s_lock_names[i].name;
    return "?";
}

void cr_sandbox_echo_denials(char *buf, size_t len)
{
    s_echo = buf;
    s_echo_len = len;
}

/* ---- the SIGSYS handler: write(2) and _exit(2) only ---- */

static size_t s_put(char *buf, size_t k, size_t cap, const char *s)
{
    while (*s && k < cap)
        buf[k++] = *s++;
    return k;
}

static void s_on_sigsys(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    (void)uctx;
    char buf[200], num[24];
    long nr = si->si_code == SYS_SECCOMP ? (long)si->si_syscall : -1;
    const char *name = si->si_code != SYS_SECCOMP           ? "? (SIGSYS not from the filter)"
                       : si->si_arch != s_native_arch ? "of another ABI"
                                                      : cr_sandbox_syscall_name(nr);
    size_t n = 0;
    unsigned long v = nr < 0 ? (unsigned long)-nr : (unsigned long)nr;
    do {
        num[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < sizeof num - 1);
    if (nr < 0)
        num[n++] = '-';
    size_t k = s_put(buf, 0, sizeof buf, CR_SANDBOX_DENIED_PREFIX);
    k = s_put(buf, k, sizeof buf, name);
    k = s_put(buf, k, sizeof buf, " (");
    while (n > 0 && k < sizeof buf)
        buf[k++] = num[--n];
    k = s_put(buf, k, sizeof buf, ")\n");
    ssize_t w = write(2, buf, k);
    (void)w;
    for (size_t i = 0; s_echo && i + 1 < s_echo_len && i + 1 < k; i++)
        s_echo[i] = buf[i], s_echo[i + 1] = '\0'; /* the line less its newline */
    _exit(CR_RUNNER_EXIT_SANDBOX);
}

/* ---- steps ---- */

/* Appends to the summary, "; "-separated. */
static void s_note(cr_sandbox_report_t *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void s_note(cr_sandbox_report_t *rep, const char *fmt, ...)
{
    size_t k = strlen(rep->summary);
    if (k + 3 >= sizeof rep->summary)
        return;
    if (k) {
        memcpy(rep->summary + k, "; ", 3);
        k += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->summary + k, sizeof rep->summary - k, fmt, ap);
    va_end(ap);
}

static int s_write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, text, strlen(text));
    int rc = n == (ssize_t)strlen(text) ? 0 : n < 0 ? -errno : -EIO;
    close(fd);
    return rc;
}

/* Not root: a new user namespace owns the new network and mount namespaces;
 * inside it we keep our own uid and gid (mapped to themselves), so files
 * and the judge's checks see the same ids as before. */
static int s_userns(uid_t uid, gid_t gid)
{
    char map[64];
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    int rc = s_write_file("/proc/self/uid_map", map);
    if (rc == 0)
        rc = s_write_file("/proc/self/setgroups", "deny"); /* before gid_map, by the kernel's rule */
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (rc == 0)
        rc = s_write_file("/proc/self/gid_map", map);
    return rc;
}

static void s_namespaces(cr_sandbox_report_t *rep, int root, uid_t uid, gid_t gid)
{
    if (root) {
        if (unshare(CLONE_NEWNET) == 0)
            rep->net = 1;
        else
            s_note(rep, "no network namespace: %s", strerror(errno));
        if (unshare(CLONE_NEWNS) == 0)
            rep->mounts = 1;
        else
            s_note(rep, "no mount namespace: %s", strerror(errno));
    } else if (unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) != 0) {
        /* EINVAL: the process already runs threads (a user namespace needs a
         * single-threaded caller); EPERM, ENOSPC: not permitted here */
        s_note(rep, "no user namespace (so no network or mount namespace): %s",
               strerror(errno));
    } else {
        rep->userns = rep->net = 1;
        int rc = s_userns(uid, gid);
        if (rc == 0)
            rep->mounts = 1;
        else /* ids unmapped inside: a tmpfs could not be given our owner */
            s_note(rep, "user namespace without an id map (%s): no tmpfs", strerror(-rc));
    }
    if (rep->mounts && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        /* without private propagation a mount here would reach the host */
        s_note(rep, "mount namespace not made private (%s): no tmpfs", strerror(errno));
        rep->mounts = 0;
    }
}

/* The tmpfs mounts (note 1). owner: uid/gid of the scratch tmpfs's root. */
static void s_mounts(const cr_sandbox_opts_t *o, cr_sandbox_report_t *rep, uid_t owner,
                     gid_t group)
{
    if (!rep->mounts)
        return;
    char opt[160];
    if (o->scratch_dir && o->scratch_dir[0]) {
        snprintf(opt, sizeof opt, "size=%llu,nr_inodes=%d,mode=0700,uid=%u,gid=%u",
                 (unsigned long long)CR_SANDBOX_SCRATCH_BYTES, S_TMPFS_INODES, (unsigned)owner,
                 (unsigned)group);
        /* noexec: nothing written there is mapped as code */
        if (mount("crucible-scratch", o->scratch_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  opt) == 0)
            rep->tmpfs_scratch = 1;
        else
            s_note(rep, "no tmpfs on %s: %s", o->scratch_dir, strerror(errno));
    }
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(opt, sizeof opt, "size=%llu,nr_inodes=%d,mode=1777",
                 (unsigned long long)CR_SANDBOX_SCRATCH_BYTES, S_TMPFS_INODES);
        if (mount("crucible-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opt) == 0)
            rep->tmpfs_shm = 1;
        else
            s_note(rep, "no private /dev/shm: %s", strerror(errno));
    }
}

/* Builds the write rules (note 1). Returns the ruleset descriptor, or -1
 * with the reason in the summary. */
static int s_landlock_ruleset(const cr_sandbox_opts_t *o, cr_sandbox_report_t *rep, int *abi)
{
    *abi = cr_confine_landlock_abi();
    if (*abi <= 0) {
        s_note(rep, "no Landlock (kernel without it, or it is not enabled)");
        return -1;
    }
    uint64_t write = cr_confine_landlock_write_rights(*abi);
    /* Only writes are handled: reads, execution and device ioctls stay open. */
    struct landlock_ruleset_attr attr = {.handled_access_fs = write};
    int rs = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (rs < 0) {
        s_note(rep, "no Landlock ruleset: %s", strerror(errno));
        return -1;
    }
    /* /dev: opening device nodes for writing (GPU, /dev/null), nothing made
     * or removed there. */
    uint64_t dev = write & (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE);
    int rc = cr_confine_landlock_rule(rs, "/dev", dev);
    if (rc == 0 && access("/dev/shm", F_OK) == 0)
        rc = cr_confine_landlock_rule(rs, "/dev/shm", write);
    if (rc == 0 && o->scratch_dir && o->scratch_dir[0])
        rc = cr_confine_landlock_rule(rs, ".", write); /* the scratch dir: the cwd by now */
    if (rc != 0) {
        s_note(rep, "no Landlock: a rule could not be added: %s", strerror(-rc));
        close(rs);
        return -1;
    }
    return rs;
}

static int s_limit(int res, uint64_t v)
{
    struct rlimit rl;
    if (getrlimit(res, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max < v)
        v = rl.rlim_max; /* already tighter: keep it */
    rl.rlim_cur = rl.rlim_max = (rlim_t)v;
    return setrlimit(res, &rl) == 0 ? 0 : -errno;
}

/* Address space now (from /proc/self/statm), in bytes; 0 when unreadable. */
static uint64_t s_vm_bytes(void)
{
    char buf[128] = "";
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    unsigned long long pages = strtoull(buf, NULL, 10);
    return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void s_limits(const cr_sandbox_opts_t *o, cr_sandbox_report_t *rep)
{
    int bad = 0;
    bad |= s_limit(RLIMIT_NPROC, S_NPROC) != 0;
    bad |= s_limit(RLIMIT_NOFILE, S_NOFILE) != 0;
    bad |= s_limit(RLIMIT_FSIZE, CR_SANDBOX_SCRATCH_BYTES) != 0;
    bad |= s_limit(RLIMIT_CORE, 0) != 0;
    if (o->cap_memory) {
        /* A quarter of the machine above what is mapped now (the judge's
         * inputs are allocated as the cases come): room for any C kernel's
         * scratch and the judge's buffers, while a memory hog meets ENOMEM
         * and the worker and the rest of the host keep three quarters. */
        struct sysinfo si;
        uint64_t vm = s_vm_bytes();
        if (vm > 0 && sysinfo(&si) == 0) {
            uint64_t cap = vm + (uint64_t)si.totalram * si.mem_unit / 4;
            if (s_limit(RLIMIT_AS, cap) == 0) {
                struct rlimit rl;
                getrlimit(RLIMIT_AS, &rl);
                rep->as_bytes = (uint64_t)rl.rlim_max;
            } else {
                bad = 1;
            }
        }
    }
    if (bad)
        s_note(rep, "an rlimit could not be set: %s", strerror(errno));
    if (s_write_file("/proc/self/oom_score_adj", S_OOM_SCORE_ADJ) != 0)
        s_note(rep, "oom_score_adj not raised: %s", strerror(errno));
}

/* Clears every capability of this thread (a user namespace's creator holds
 * all of them inside it until it execs, which it never will). */
static int s_no_caps(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    memset(d, 0, sizeof d);
    return syscall(__NR_capset, &h, d) == 0 ? 0 : -errno;
}

/* The rules that stop new processes and programs (cr_sandbox_opts_t.allow_exec). */
static int s_is_process_rule(const s_rule_t *r)
{
    return r->kind == S_CLONE || !strcmp(r->name, "fork") || !strcmp(r->name, "vfork") ||
           !strcmp(r->name, "execve") || !strcmp(r->name, "execveat");
}

/* S_SIGIO: fcntl's F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY
 * and F_SETFL with O_ASYNC; ioctl's FIOASYNC, FIOSETOWN, SIOCSPGRP. The
 * command is an int: the low 32 bits are compared. */
static int s_sigio_rules(scmp_filter_ctx ctx, int nr, unsigned argi)
{
    static const unsigned long fcntl_cmds[] = {F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE,
                                               F_NOTIFY};
    static const unsigned long ioctl_cmds[] = {0x5452 /* FIOASYNC */, 0x8901 /* FIOSETOWN */,
                                               0x8902 /* SIOCSPGRP */};
    int is_fcntl = nr == __NR_fcntl;
    const unsigned long *cmd = is_fcntl ? fcntl_cmds : ioctl_cmds;
    size_t n = is_fcntl ? sizeof fcntl_cmds / sizeof *fcntl_cmds
                        : sizeof ioctl_cmds / sizeof *ioctl_cmds;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 1,
                              SCMP_CMP(argi, SCMP_CMP_MASKED_EQ, 0xffffffffu, cmd[i]));
    if (rc == 0 && is_fcntl)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 2,
                              SCMP_CMP(argi, SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETFL),
                              SCMP_CMP(argi + 1, SCMP_CMP_MASKED_EQ, O_ASYNC, O_ASYNC));
    return rc;
}

/* SIGCONT, by whatever route. The judge freezes an executor between
 * commands with a SIGSTOP to its pid alone (exec.c note 2); a process it
 * forked (allow_exec: Triton's compilers) is not stopped, and one SIGCONT
 * from it resumes every thread of the "frozen" executor, its CUDA context
 * too, while the judge times the reference (tests/test_sandbox.c). Only
 * SIGCONT acts on a stopped process (others wait until it runs), and
 * nothing of an executor's needs to send it: it is trapped as the signal of
 * kill and tkill (second argument), tgkill and rt_tgsigqueueinfo (third),
 * rt_sigqueueinfo (second); as the exit signal of a clone (the flags' low
 * byte: a child that resumes its parent by ending); as PR_SET_PDEATHSIG's;
 * and mq_notify is trapped whole (its signal is in memory the filter cannot
 * read). Numbers are ints: the low 32 bits are compared. */
static int s_sigcont_rules(scmp_filter_ctx ctx)
{
    static const struct {
        int nr;
        unsigned argi;
    } sends[] = {{__NR_kill, 1},    {__NR_tkill, 1},           {__NR_tgkill, 2},
                 {__NR_rt_sigqueueinfo, 1}, {__NR_rt_tgsigqueueinfo, 2}};
    int rc = 0;
    for (size_t i = 0; i < sizeof sends / sizeof *sends && rc == 0; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, sends[i].nr, 1,
                              SCMP_CMP(sends[i].argi, SCMP_CMP_MASKED_EQ, 0xffffffffu, SIGCONT));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, __NR_clone, 1,
                              SCMP_CMP(0, SCMP_CMP_MASKED_EQ, 0xffu, SIGCONT));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, __NR_prctl, 2,
                              SCMP_CMP(0, SCMP_CMP_MASKED_EQ, 0xffffffffu, PR_SET_PDEATHSIG),
                              SCMP_CMP(1, SCMP_CMP_MASKED_EQ, 0xffffffffu, SIGCONT));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, __NR_mq_notify, 0);
    return rc;
}

static int s_seccomp(const cr_sandbox_opts_t *o, cr_sandbox_report_t *rep)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return -ENOMEM;
    s_native_arch = seccomp_arch_native();
    /* i386 (int 0x80) and x32 calls would bypass a table of native numbers */
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
    if (rc == 0)
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1); /* every thread (note 3) */
    scmp_datum_t self = (scmp_datum_t)getpid();
    for (size_t i = 0; i < S_NRULES && rc == 0; i++) {
        const s_rule_t *r = &s_rules[i];
        int nr = (int)r->nr;
        if (o->allow_exec && o->threads && s_is_process_rule(r))
            continue; /* the Triton JIT's compilers (cr_sandbox_opts_t.allow_exec) */
        if (o->allow_jit && r->kind == S_PROT_EXEC)
            continue; /* a JIT's code pages (cr_sandbox_opts_t.allow_jit) */
        switch (r->kind) {
        case S_TRAP:
            rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 0);
            break;
        case S_NOT_SELF:
            rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 1, SCMP_CMP(r->argi, SCMP_CMP_NE, self));
            break;
        case S_NONZERO:
            rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 1, SCMP_CMP(r->argi, SCMP_CMP_NE, 0));
            break;
        case S_PROT_EXEC:
            rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 1,
                                  SCMP_CMP(r->argi, SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
            break;
        case S_CLONE:
            if (o->threads)
                rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 1,
                                      SCMP_CMP(r->argi, SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
            else
                rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 0);
            break;
        case S_ENOSYS:
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
            break;
        case S_SIGSYS:
            /* the signal number is an int: compare the low 32 bits only. Under a
             * JIT the call fails instead of trapping: LLVM (Triton's compiler,
             * in the executor's process) installs a handler for every fatal
             * signal, SIGSYS among them, and goes on without it (docs/torch.md §5) */
            rc = seccomp_rule_add(ctx, o->allow_jit ? SCMP_ACT_ERRNO(EPERM) : SCMP_ACT_TRAP, nr, 2,
                                  SCMP_CMP(0, SCMP_CMP_MASKED_EQ, 0xffffffffu, SIGSYS),
                                  SCMP_CMP(1, SCMP_CMP_NE, 0));
            break;
        case S_SIGIO:
            rc = s_sigio_rules(ctx, nr, r->argi);
            break;
        }
        if (rc != 0)
            s_note(rep, "seccomp rule for %s: %s", r->name, strerror(-rc));
    }
    if (rc == 0 && (rc = s_sigcont_rules(ctx)) != 0)
        s_note(rep, "seccomp rules for SIGCONT: %s", strerror(-rc));
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    return rc;
}

/* ---- public ---- */

int cr_sandbox_hold(const char *path, char *alias, size_t aliaslen)
{
    if (aliaslen)
        alias[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    snprintf(alias, aliaslen, "/proc/self/fd/%d", fd);
    return 0;
}

int cr_sandbox_enter(const cr_sandbox_opts_t *o, cr_sandbox_report_t *rep, char *err,
                     size_t errlen)
{
    memset(rep, 0, sizeof *rep);
    if (errlen)
        err[0] = '\0';
    int root = geteuid() == 0;
    uid_t my_uid = getuid();
    gid_t my_gid = getgid();
    uid_t to_uid = o->uid ? (uid_t)o->uid : (uid_t)CR_SANDBOX_DEFAULT_UID;
    int drop = root && !o->stay_root;
    if (root && o->stay_root)
        s_note(rep, "uid 0 kept: %s", o->stay_root);
    /* Our own /proc/self files (uid_map, oom_score_adj) are root's while we
     * are not dumpable; we are made not dumpable again below, for good. */
    if (!root)
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);

    /* 1. namespaces and mounts */
    s_namespaces(rep, root, my_uid, my_gid);
    s_mounts(o, rep, drop ? to_uid : my_uid, drop ? (gid_t)to_uid : my_gid);
    /* again: the cwd still names the directory under the new tmpfs */
    if (o->scratch_dir && o->scratch_dir[0] && chdir(o->scratch_dir) != 0) {
        int e = errno;
        snprintf(err, errlen, "sandbox: chdir %s: %s", o->scratch_dir, strerror(e));
        return -e;
    }

    /* 2. Landlock rules (enforced after the drop), limits */
    int abi = 0;
    int ruleset = s_landlock_ruleset(o, rep, &abi);
    s_limits(o, rep);

    /* 3. identity */
    if (drop) {
        int rc = cr_confine_drop(to_uid, (gid_t)to_uid);
        if (rc != 0) {
            snprintf(err, errlen, "sandbox: cannot drop root to uid/gid %u: %s",
                     (unsigned)to_uid, strerror(-rc));
            if (ruleset >= 0)
                close(ruleset);
            return rc;
        }
        rep->uid_dropped = 1;
    } else if (!root) {
        s_note(rep, "not root: uid %u kept", (unsigned)my_uid);
    }
    if (rep->userns && s_no_caps() != 0)
        s_note(rep, "capabilities in the user namespace not cleared: %s", strerror(errno));
    rep->uid = (uint32_t)getuid();
    /* setuid already did so for a dropped root; a runner under the worker's
     * own uid needs it so that neighbours of that uid cannot read it */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

    /* 4. no new privileges, then Landlock */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        s_note(rep, "no_new_privs not set: %s", strerror(errno));
    if (ruleset >= 0) {
        if (syscall(__NR_landlock_restrict_self, ruleset, 0) == 0)
            rep->landlock_abi = abi;
        else
            s_note(rep, "Landlock not enforced: %s", strerror(errno));
        close(ruleset);
    }

    /* 5. the filter, with its handler in place first */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = s_on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSYS, &sa, NULL);
    sigset_t sys;
    sigemptyset(&sys);
    sigaddset(&sys, SIGSYS);
    sigprocmask(SIG_UNBLOCK, &sys, NULL);
    int rc = s_seccomp(o, rep);
    if (rc == 0) {
        rep->seccomp = 1;
        rep->threads = o->threads;
    } else {
        s_note(rep, "no seccomp filter: %s", strerror(-rc));
    }

    /* the summary: what is in force, then what was skipped and why */
    char skipped[sizeof rep->summary - 128];
    size_t ns = strnlen(rep->summary, sizeof skipped - 1);
    memcpy(skipped, rep->summary, ns);
    skipped[ns] = '\0';
    snprintf(rep->summary, sizeof rep->summary,
             "net %s, scratch %s, /dev/shm %s, landlock %s, uid %u, seccomp %s, nproc %d, "
             "fsize %llu MiB, as %llu MiB%s%.*s",
             rep->net ? (rep->userns ? "private (user ns)" : "private") : "host",
             rep->tmpfs_scratch ? "tmpfs" : "disk", rep->tmpfs_shm ? "private" : "host",
             rep->landlock_abi ? "on" : "off", (unsigned)rep->uid,
             !rep->seccomp ? "off" : rep->threads ? "on (threads allowed)" : "on (no threads)",
             S_NPROC, (unsigned long long)(CR_SANDBOX_SCRATCH_BYTES >> 20),
             (unsigned long long)(rep->as_bytes >> 20), skipped[0] ? "; " : "",
             (int)(sizeof rep->summary / 2), skipped); /* a long list of skipped steps is
                                                           cut: the log has the rest */
    cr_info("sandbox: %s", rep->summary);
    return 0;
}

/* ---- after the load ---- */

static int s_lock(int threads, int code, int handlers);

int cr_sandbox_lock_code(int threads)
{
    return s_lock(threads, 1, 1);
}

int cr_sandbox_lock_handlers(int allow_exec)
{
    return s_lock(1, 0, !allow_exec);
}

/* The second filter: timers always; handlers when handlers is 1; code
 * (executable mappings, and with no threads every mprotect) when code is 1. */
static int s_lock(int threads, int code, int handlers)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return -ENOMEM;
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
    if (rc == 0)
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
    /* handlers and timers: work outside a call (docs/judge.md, threat 5) */
    /* any signal but the C library's own two (glibc installs them with the
     * first thread: SIGRTMIN-2, -1, i.e. 32 and 33) */
    for (int sig = 1; rc == 0 && handlers && sig <= 64; sig++)
        if (sig != 32 && sig != 33)
            rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(rt_sigaction), 2,
                                  SCMP_CMP(0, SCMP_CMP_MASKED_EQ, 0xffffffffu, (scmp_datum_t)sig),
                                  SCMP_CMP(1, SCMP_CMP_NE, 0));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(timer_create), 0);
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(timer_settime), 0);
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(setitimer), 0);
#ifdef __NR_alarm
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(alarm), 0);
#endif
    /* code: no new executable mapping, no page re-protected (threads need
     * mprotect for their stacks' guard pages: only PROT_EXEC is denied then,
     * by the first filter) */
    if (rc == 0 && code)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(mmap), 1,
                              SCMP_CMP(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
    if (rc == 0 && !threads)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(mprotect), 0);
    if (rc == 0 && !threads)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(pkey_mprotect), 0);
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(personality), 0);
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    return rc;
}
