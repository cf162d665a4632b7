/* test_sandbox.c — the runner's sandbox (worker/runner/sandbox.c), entered
 * for real in a forked child: namespaces, mounts, Landlock, the uid drop,
 * rlimits and the seccomp filter, each checked by doing what it forbids.
 *
 * A child enters the sandbox and runs one probe. A probe that breaks a rule
 * must end the child with CR_RUNNER_EXIT_SANDBOX and the handler's line on
 * stderr naming the call; a probe of what stays allowed checks it inside
 * the child and exits 0, or 1 with "FAIL ..." lines on stderr. Tests that
 * need root (uid drop, tmpfs) say so when run without it. */
#define _GNU_SOURCE
#include "sandbox.h"

#include "file.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* 20 s: every probe takes milliseconds; a hung child is killed by alarm(). */
#define S_CHILD_ALARM_S 20
/* an ordinary user id for the not-root path (none of the host's files) */
#define S_PLAIN_UID 4242

/* A failed check inside the child: one line on stderr, exit 1. */
#define C_CHECK(cond, ...)                                                                     \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            dprintf(2, "FAIL %s:%d (%s): ", __FILE__, __LINE__, #cond);                        \
            dprintf(2, __VA_ARGS__);                                                           \
            dprintf(2, "\n");                                                                  \
            _exit(1);                                                                          \
        }                                                                                      \
    } while (0)

typedef struct {
    int threads;     /* opts.threads */
    int cap_memory;  /* opts.cap_memory */
    uid_t as_user;   /* not 0: become this uid before entering (the not-root path) */
    const char *why; /* opts.stay_root */
} s_setup_t;

static char s_scratch[128]; /* this test's scratch dir */
static cr_sandbox_report_t s_rep; /* the child's report (valid in the child) */

static void s_init(void)
{
    snprintf(s_scratch, sizeof s_scratch, "/tmp/cr-test-sandbox-XXXXXX");
    cr_assert_not_null(mkdtemp(s_scratch));
}

static void s_fini(void)
{
    if (s_scratch[0])
        cr_file_rmtree(s_scratch);
}

TestSuite(sandbox, .init = s_init, .fini = s_fini, .timeout = 60);

typedef struct {
    int status;    /* waitpid status */
    char err[8192]; /* child's stderr */
} s_out_t;

/* Forks; the child enters the sandbox as su says, then runs probe (which
 * returns the exit code). */
static void s_run(const s_setup_t *su, int (*probe)(void), s_out_t *out)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 2);
        close(p[1]);
        alarm(S_CHILD_ALARM_S);
        if (su->as_user) {
            C_CHECK(chown(s_scratch, su->as_user, su->as_user) == 0, "chown: %s",
                    strerror(errno));
            C_CHECK(setgroups(0, NULL) == 0 && setresgid(su->as_user, su->as_user, su->as_user) == 0 &&
                        setresuid(su->as_user, su->as_user, su->as_user) == 0,
                    "becoming uid %u: %s", (unsigned)su->as_user, strerror(errno));
        }
        cr_sandbox_opts_t o = {.scratch_dir = s_scratch, .threads = su->threads,
                               .cap_memory = su->cap_memory, .stay_root = su->why};
        char err[512];
        int rc = cr_sandbox_enter(&o, &s_rep, err, sizeof err);
        C_CHECK(rc == 0, "enter: %s", err);
        _exit(probe());
    }
    close(p[1]);
    size_t n = 0;
    ssize_t k;
    while ((k = read(p[0], out->err + n, sizeof out->err - 1 - n)) > 0)
        n += (size_t)k;
    out->err[n] = '\0';
    close(p[0]);
    cr_assert_eq(waitpid(pid, &out->status, 0), pid);
}

/* The probe must pass its own checks (exit 0). */
static void s_expect_ok(const s_setup_t *su, int (*probe)(void))
{
    s_out_t out;
    s_run(su, probe, &out);
    cr_assert(WIFEXITED(out.status) && WEXITSTATUS(out.status) == 0,
              "child ended 0x%x; stderr:\n%s", out.status, out.err);
}

/* The probe must be trapped on system call name/nr. */
static void s_expect_trap(const s_setup_t *su, int (*probe)(void), const char *name, long nr)
{
    s_out_t out;
    s_run(su, probe, &out);
    char line[200];
    snprintf(line, sizeof line, CR_SANDBOX_DENIED_PREFIX "%s (%ld)\n", name, nr);
    cr_assert(WIFEXITED(out.status) && WEXITSTATUS(out.status) == CR_RUNNER_EXIT_SANDBOX,
              "child ended 0x%x, expected exit %d; stderr:\n%s", out.status,
              CR_RUNNER_EXIT_SANDBOX, out.err);
    cr_assert(strstr(out.err, line), "no line '%s' in stderr:\n%s", line, out.err);
}

static const s_setup_t s_c = {0};                  /* a C task */
static const s_setup_t s_threads = {.threads = 1}; /* cuda, or C with "threads" */

/* ---- forbidden ---- */

static int s_socket(void)
{
    socket(AF_INET, SOCK_STREAM, 0);
    return 0;
}

static int s_fork_libc(void)
{
    fork(); /* glibc forks with clone */
    return 0;
}

static int s_fork_raw(void)
{
    syscall(__NR_fork);
    return 0;
}

static int s_ptrace(void)
{
    ptrace(PTRACE_TRACEME, 0, NULL, NULL);
    return 0;
}

static int s_kill_parent(void)
{
    kill(getppid(), SIGKILL);
    return 0;
}

static int s_mprotect_exec(void)
{
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    C_CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
    C_CHECK(mprotect(p, 4096, PROT_READ) == 0, "mprotect read-only: %s", strerror(errno));
    mprotect(p, 4096, PROT_READ | PROT_EXEC);
    return 0;
}

static void *s_idle(void *arg)
{
    return arg;
}

static int s_thread(void)
{
    pthread_t t;
    int rc = pthread_create(&t, NULL, s_idle, NULL);
    C_CHECK(rc == 0, "pthread_create: %s", strerror(rc));
    C_CHECK(pthread_join(t, NULL) == 0, "join");
    return 0;
}

static int s_execve(void)
{
    char *argv[] = {"/bin/true", NULL};
    execve("/bin/true", argv, NULL);
    return 0;
}

static void s_on_sys(int sig)
{
    (void)sig;
}

static int s_replace_sigsys_handler(void)
{
    signal(SIGSYS, s_on_sys);
    socket(AF_INET, SOCK_STREAM, 0);
    return 0;
}

static int s_unshare(void)
{
    unshare(CLONE_NEWNET);
    return 0;
}

Test(sandbox, network_calls_are_trapped)
{
    s_expect_trap(&s_c, s_socket, "socket", __NR_socket);
}

Test(sandbox, processes_are_trapped)
{
    s_expect_trap(&s_threads, s_fork_libc, "clone", __NR_clone);
    s_expect_trap(&s_threads, s_fork_raw, "fork", __NR_fork);
    s_expect_trap(&s_threads, s_execve, "execve", __NR_execve);
}

Test(sandbox, other_processes_are_out_of_reach)
{
    s_expect_trap(&s_c, s_ptrace, "ptrace", __NR_ptrace);
    s_expect_trap(&s_c, s_kill_parent, "kill", __NR_kill);
    /* the test process that kill aimed at is still here to assert */
    cr_assert_eq(kill(getpid(), 0), 0);
}

Test(sandbox, executable_pages_are_trapped)
{
    s_expect_trap(&s_threads, s_mprotect_exec, "mprotect", __NR_mprotect);
}

Test(sandbox, threads_follow_the_task)
{
    /* A C task without "threads": glibc blocks every signal around the
     * clone of a thread, so the trap cannot reach the handler and the kernel
     * ends the process with SIGSYS (the worker records both the same way). */
    s_out_t out;
    s_run(&s_c, s_thread, &out);
    cr_assert(WIFSIGNALED(out.status) && WTERMSIG(out.status) == SIGSYS,
              "child ended 0x%x; stderr:\n%s", out.status, out.err);
    s_expect_ok(&s_threads, s_thread); /* cuda / "threads": true */
}

Test(sandbox, the_sandbox_cannot_be_undone)
{
    s_expect_trap(&s_c, s_replace_sigsys_handler, "rt_sigaction", __NR_rt_sigaction);
    s_expect_trap(&s_c, s_unshare, "unshare", __NR_unshare);
}

/* ---- what stays allowed, and what the sandbox set up ---- */

static int s_allowed(void)
{
    C_CHECK(kill(getpid(), 0) == 0, "kill(self, 0): %s", strerror(errno));
    struct timespec ts;
    C_CHECK(clock_gettime(CLOCK_MONOTONIC, &ts) == 0, "clock_gettime");
    C_CHECK(sched_yield() == 0, "sched_yield");
    void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    C_CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
    C_CHECK(munmap(p, 1 << 20) == 0, "munmap");
    C_CHECK(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0, "still dumpable");
    C_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "no_new_privs not set");
    /* raise() and abort() signal this process: allowed, and it dies of it */
    return 0;
}

Test(sandbox, ordinary_calls_still_work)
{
    s_expect_ok(&s_c, s_allowed);
}

static int s_abort(void)
{
    abort();
}

Test(sandbox, abort_still_kills_the_process)
{
    s_out_t out;
    s_run(&s_c, s_abort, &out);
    cr_assert(WIFSIGNALED(out.status) && WTERMSIG(out.status) == SIGABRT,
              "child ended 0x%x; stderr:\n%s", out.status, out.err);
}

static char s_outside[128]; /* a path outside the scratch dir, set by the test */

static int s_writes(void)
{
    /* inside: relative (the cwd) and absolute */
    int fd = open("inside.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    C_CHECK(fd >= 0 && write(fd, "x", 1) == 1, "write in scratch: %s", strerror(errno));
    close(fd);
    char abs[256];
    snprintf(abs, sizeof abs, "%s/sub", s_scratch);
    C_CHECK(mkdir(abs, 0700) == 0, "mkdir in scratch: %s", strerror(errno));
    C_CHECK(rename("inside.txt", "sub/moved.txt") == 0, "rename in scratch: %s", strerror(errno));
    C_CHECK(unlink("sub/moved.txt") == 0, "unlink in scratch: %s", strerror(errno));
    /* outside: an absolute path, and an escape through .. */
    C_CHECK(s_rep.landlock_abi > 0 || geteuid() != 0, "no Landlock: %s", s_rep.summary);
    fd = open(s_outside, O_WRONLY | O_CREAT, 0644);
    C_CHECK(fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM),
            "created %s (errno %d)", s_outside, fd < 0 ? errno : 0);
    fd = open("../cr-sandbox-escape", O_WRONLY | O_CREAT, 0644);
    C_CHECK(fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM),
            "created ../cr-sandbox-escape (errno %d)", fd < 0 ? errno : 0);
    /* devices: /dev/null is writable, nothing can be made in /dev */
    fd = open("/dev/null", O_WRONLY);
    C_CHECK(fd >= 0 && write(fd, "x", 1) == 1, "/dev/null: %s", strerror(errno));
    close(fd);
    fd = open("/dev/cr-sandbox-test", O_WRONLY | O_CREAT, 0644);
    C_CHECK(fd < 0, "created /dev/cr-sandbox-test");
    /* /dev/shm: writable, and private (the test looks for the file after) */
    fd = open("/dev/shm/cr-sandbox-test", O_RDWR | O_CREAT, 0600);
    C_CHECK(fd >= 0 && write(fd, "x", 1) == 1, "/dev/shm: %s", strerror(errno));
    close(fd);
    /* reads are not restricted */
    fd = open("/etc/hostname", O_RDONLY);
    C_CHECK(fd >= 0 || errno == ENOENT, "read /etc/hostname: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    return 0;
}

Test(sandbox, writes_only_beneath_scratch_dev_and_shm)
{
    snprintf(s_outside, sizeof s_outside, "/tmp/cr-sandbox-outside-%d", (int)getpid());
    unlink("/dev/shm/cr-sandbox-test");
    s_expect_ok(&s_c, s_writes);
    cr_assert_neq(access(s_outside, F_OK), 0, "%s exists", s_outside);
    char esc[300];
    snprintf(esc, sizeof esc, "%s/../cr-sandbox-escape", s_scratch);
    cr_assert_neq(access(esc, F_OK), 0, "%s exists", esc);
    if (geteuid() == 0) { /* the tmpfs is private: nothing reached the host */
        cr_assert_neq(access("/dev/shm/cr-sandbox-test", F_OK), 0, "/dev/shm file leaked");
        char in[300];
        snprintf(in, sizeof in, "%s/sub", s_scratch);
        cr_assert_neq(access(in, F_OK), 0, "scratch writes reached the disk");
    }
    unlink("/dev/shm/cr-sandbox-test");
}

static int s_net(void)
{
    C_CHECK(s_rep.net == 1, "no private network namespace: %s", s_rep.summary);
    FILE *f = fopen("/proc/net/dev", "r");
    C_CHECK(f, "/proc/net/dev: %s", strerror(errno));
    char line[512];
    int lo = 0;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) /* the two header lines */
            continue;
        *colon = '\0';
        char *name = line + strspn(line, " ");
        C_CHECK(strcmp(name, "lo") == 0, "interface %s in the sandbox", name);
        lo = 1;
    }
    fclose(f);
    C_CHECK(lo, "no loopback listed");
    return 0;
}

static int s_identity(void)
{
    C_CHECK(getuid() == CR_SANDBOX_DEFAULT_UID && geteuid() == CR_SANDBOX_DEFAULT_UID,
            "uid %u", (unsigned)getuid());
    C_CHECK(getgid() == CR_SANDBOX_DEFAULT_UID, "gid %u", (unsigned)getgid());
    C_CHECK(getgroups(0, NULL) == 0, "%d supplementary groups", getgroups(0, NULL));
    C_CHECK(s_rep.uid_dropped && s_rep.uid == CR_SANDBOX_DEFAULT_UID, "report: %s", s_rep.summary);
    FILE *f = fopen("/proc/self/status", "r");
    C_CHECK(f, "status");
    char line[256];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "CapEff:", 7))
            C_CHECK(strtoull(line + 7, NULL, 16) == 0, "capabilities left: %s", line);
    fclose(f);
    /* the scratch dir is ours: a tmpfs owned by the sandbox uid */
    struct stat st;
    C_CHECK(stat(".", &st) == 0 && st.st_uid == CR_SANDBOX_DEFAULT_UID &&
                (st.st_mode & 0777) == 0700,
            "scratch owner %u mode %o", (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
    return 0;
}

Test(sandbox, root_gets_a_private_network_and_drops_to_nobody)
{
    if (geteuid() != 0)
        cr_skip_test("needs root");
    s_expect_ok(&s_c, s_net);
    s_expect_ok(&s_c, s_identity);
}

static int s_limits_probe(void)
{
    struct rlimit rl;
    C_CHECK(getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_max == 4096 && rl.rlim_cur == 4096,
            "nproc %llu", (unsigned long long)rl.rlim_max);
    C_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max == 256, "nofile %llu",
            (unsigned long long)rl.rlim_max);
    C_CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_max == CR_SANDBOX_SCRATCH_BYTES,
            "fsize %llu", (unsigned long long)rl.rlim_max);
    C_CHECK(getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_max == 0, "core %llu",
            (unsigned long long)rl.rlim_max);
    C_CHECK(getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
                rl.rlim_max == s_rep.as_bytes,
            "as %llu, report %llu", (unsigned long long)rl.rlim_max,
            (unsigned long long)s_rep.as_bytes);
    /* a memory hog meets ENOMEM instead of the OOM killer */
    void *p = mmap(NULL, (size_t)rl.rlim_max, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    C_CHECK(p == MAP_FAILED && errno == ENOMEM, "mapped the whole cap");
    char adj[16] = "";
    int fd = open("/proc/self/oom_score_adj", O_RDONLY);
    C_CHECK(fd >= 0 && read(fd, adj, sizeof adj - 1) > 0, "oom_score_adj");
    close(fd);
    C_CHECK(atoi(adj) == 1000, "oom_score_adj %s", adj);
    return 0;
}

static int s_no_as_cap(void)
{
    struct rlimit rl;
    C_CHECK(getrlimit(RLIMIT_AS, &rl) == 0 && s_rep.as_bytes == 0, "as capped for cuda");
    return 0;
}

Test(sandbox, rlimits_are_set)
{
    s_setup_t c_task = {.cap_memory = 1};
    s_expect_ok(&c_task, s_limits_probe);
    s_expect_ok(&s_threads, s_no_as_cap); /* a CUDA task: its runtime reserves huge ranges */
}

static int s_fill(void)
{
    C_CHECK(s_rep.tmpfs_scratch, "no tmpfs: %s", s_rep.summary);
    static char chunk[1 << 20];
    memset(chunk, 'x', sizeof chunk);
    size_t total = 0;
    int err = 0;
    /* files of 8 MiB, so the tmpfs fills before any one file meets RLIMIT_FSIZE */
    for (int f = 0; f < 100 && !err; f++) {
        char name[32];
        snprintf(name, sizeof name, "fill%d", f);
        int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) {
            err = errno;
            break;
        }
        for (int i = 0; i < 8 && !err; i++) {
            ssize_t w = write(fd, chunk, sizeof chunk);
            if (w < 0)
                err = errno;
            else
                total += (size_t)w;
        }
        close(fd);
    }
    C_CHECK(err == ENOSPC || err == EFBIG, "errno %d after %zu bytes", err, total);
    C_CHECK(total <= CR_SANDBOX_SCRATCH_BYTES && total >= CR_SANDBOX_SCRATCH_BYTES - (8u << 20),
            "%zu bytes written", total);
    /* one file past RLIMIT_FSIZE: EFBIG once SIGXFSZ is ignored */
    for (int f = 0; f < 100; f++) {
        char name[32];
        snprintf(name, sizeof name, "fill%d", f);
        unlink(name);
    }
    signal(SIGXFSZ, SIG_IGN);
    int fd = open("big", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    C_CHECK(fd >= 0, "big: %s", strerror(errno));
    C_CHECK(lseek(fd, (off_t)CR_SANDBOX_SCRATCH_BYTES, SEEK_SET) >= 0, "lseek");
    C_CHECK(write(fd, "x", 1) < 0 && errno == EFBIG, "wrote past RLIMIT_FSIZE");
    close(fd);
    return 0;
}

Test(sandbox, scratch_is_a_capped_tmpfs)
{
    if (geteuid() != 0)
        cr_skip_test("needs root (or a user namespace) for the tmpfs");
    s_expect_ok(&s_c, s_fill);
}

static char s_held[128], s_hidden[300];

static int s_hold_probe(void)
{
    int fd = open(s_hidden, O_RDONLY);
    C_CHECK(fd < 0 && errno == EACCES, "%s readable by the sandbox uid", s_hidden);
    fd = open(s_held, O_RDONLY);
    C_CHECK(fd >= 0, "%s: %s", s_held, strerror(errno));
    char buf[8] = "";
    C_CHECK(read(fd, buf, sizeof buf - 1) == 4 && !strcmp(buf, "held"), "read '%s'", buf);
    close(fd);
    return 0;
}

Test(sandbox, a_held_object_stays_readable_after_the_drop)
{
    if (geteuid() != 0)
        cr_skip_test("needs root");
    char dir[200];
    snprintf(dir, sizeof dir, "%.150s.closed", s_scratch); /* beside scratch, mode 0700 */
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(s_hidden, sizeof s_hidden, "%s/lib.so", dir);
    cr_assert_eq(cr_file_write_atomic(s_hidden, "held", 4), 0);
    cr_assert_eq(chmod(s_hidden, 0555), 0);
    cr_assert_eq(cr_sandbox_hold(s_hidden, s_held, sizeof s_held), 0);
    cr_assert(!strncmp(s_held, "/proc/self/fd/", 14), "%s", s_held);
    s_expect_ok(&s_c, s_hold_probe);
    cr_file_rmtree(dir);
    char bad[64];
    cr_assert_eq(cr_sandbox_hold("/nonexistent/lib.so", bad, sizeof bad), -ENOENT);
    cr_assert_str_eq(bad, "");
}

static int s_kept_root(void)
{
    C_CHECK(getuid() == 0 && !s_rep.uid_dropped, "uid %u", (unsigned)getuid());
    C_CHECK(strstr(s_rep.summary, "uid 0 kept: locks clocks"), "%s", s_rep.summary);
    /* everything else still holds */
    C_CHECK(s_rep.seccomp && s_rep.net, "%s", s_rep.summary);
    int fd = open(s_outside, O_WRONLY | O_CREAT, 0644);
    C_CHECK(fd < 0 || s_rep.landlock_abi == 0, "root wrote %s through Landlock", s_outside);
    return 0;
}

Test(sandbox, stay_root_keeps_only_the_uid)
{
    if (geteuid() != 0)
        cr_skip_test("needs root");
    snprintf(s_outside, sizeof s_outside, "/tmp/cr-sandbox-root-%d", (int)getpid());
    s_setup_t su = {.threads = 1, .why = "locks clocks"};
    s_expect_ok(&su, s_kept_root);
    cr_assert_neq(access(s_outside, F_OK), 0);
    s_expect_trap(&su, s_socket, "socket", __NR_socket);
}

/* ---- not root: the same rules through a user namespace, where permitted ---- */

static int s_userns_probe(void)
{
    C_CHECK(getuid() == S_PLAIN_UID, "uid %u", (unsigned)getuid());
    C_CHECK(!s_rep.uid_dropped, "%s", s_rep.summary);
    int fd = open(s_outside, O_WRONLY | O_CREAT, 0644); /* /tmp is open to all: Landlock's */
    C_CHECK(fd < 0 || s_rep.landlock_abi == 0, "wrote %s", s_outside);
    fd = open("inside", O_WRONLY | O_CREAT, 0600);
    C_CHECK(fd >= 0, "scratch: %s", strerror(errno));
    close(fd);
    /* what the kernel allowed must be what the report says */
    C_CHECK(s_rep.net == s_rep.userns && s_rep.mounts == s_rep.userns, "%s", s_rep.summary);
    if (s_rep.userns) {
        C_CHECK(s_rep.tmpfs_scratch, "%s", s_rep.summary);
        return s_net();
    }
    return 0;
}

/* Can an unprivileged process here make a user namespace? (the answer the
 * sandbox's report must agree with) */
static int s_userns_permitted(void)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (setresgid(S_PLAIN_UID, S_PLAIN_UID, S_PLAIN_UID) != 0 ||
            setresuid(S_PLAIN_UID, S_PLAIN_UID, S_PLAIN_UID) != 0)
            _exit(2);
        _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) < 2);
    return WEXITSTATUS(st) == 0;
}

Test(sandbox, not_root_still_confines)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to become an ordinary user");
    snprintf(s_outside, sizeof s_outside, "/tmp/cr-sandbox-user-%d", (int)getpid());
    int userns = s_userns_permitted();
    s_setup_t su = {.as_user = S_PLAIN_UID};
    s_out_t out;
    s_run(&su, s_userns_probe, &out);
    cr_assert(WIFEXITED(out.status) && WEXITSTATUS(out.status) == 0,
              "child ended 0x%x (user namespaces %s); stderr:\n%s", out.status,
              userns ? "permitted" : "not permitted", out.err);
    cr_assert(userns ? !strstr(out.err, "no user namespace") : !!strstr(out.err, "no user namespace"),
              "user namespaces %s here, the sandbox says:\n%s", userns ? "work" : "fail", out.err);
    cr_assert_neq(access(s_outside, F_OK), 0);
    s_expect_trap(&su, s_socket, "socket", __NR_socket);
}

static int s_landlock_expected; /* the kernel's Landlock ABI, probed by the test */

static int s_landlock_probe(void)
{
    C_CHECK(s_rep.landlock_abi == s_landlock_expected, "landlock ABI %d, kernel %d: %s",
            s_rep.landlock_abi, s_landlock_expected, s_rep.summary);
    C_CHECK(s_rep.seccomp, "%s", s_rep.summary);
    return 0;
}

Test(sandbox, landlock_and_seccomp_are_in_force_where_the_kernel_has_them)
{
    long v = syscall(__NR_landlock_create_ruleset, NULL, 0, 1 /* VERSION */);
    s_landlock_expected = v > 0 ? (int)v : 0;
    s_expect_ok(&s_c, s_landlock_probe);
}

Test(sandbox, syscall_names)
{
    cr_assert_str_eq(cr_sandbox_syscall_name(__NR_socket), "socket");
    cr_assert_str_eq(cr_sandbox_syscall_name(__NR_clone), "clone");
    cr_assert_str_eq(cr_sandbox_syscall_name(__NR_read), "?");
}

/* ---- a frozen executor stays frozen ---- */

/* The judge freezes an executor between commands with SIGSTOP to its pid
 * (exec.c note 2), so that it can neither compute ahead on inputs written
 * nor go on after saying it is done. A torch executor on a GPU (threads and
 * allow_exec: Triton's compilers) may have children, which SIGSTOP does not
 * reach; a child can resume its parent: kill(parent, SIGCONT) passes the
 * S_NOT_SELF rule (the filter's "self" is the parent's pid), and a child
 * cloned with SIGCONT as its exit signal resumes it by ending. Either way
 * every thread of the "frozen" executor runs on (its CUDA context too)
 * while the judge times the reference, with no signal handler at all. */
static volatile uint64_t *s_tick; /* shared with the sandboxed child: it counts while it runs */

/* how: 0 kill, 1 a clone whose exit signal is SIGCONT, 2 tgkill, 3 rt_sigqueueinfo */
static void s_expect_stays_frozen(int how)
{
    int by_exit = how == 1;
    s_tick = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(s_tick != MAP_FAILED);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        alarm(S_CHILD_ALARM_S);
        cr_sandbox_opts_t o = {.scratch_dir = s_scratch, .threads = 1, .allow_exec = 1,
                               .allow_jit = 1};
        char err[512];
        C_CHECK(cr_sandbox_enter(&o, &s_rep, err, sizeof err) == 0, "enter: %s", err);
        C_CHECK(cr_sandbox_lock_handlers(1) == 0, "second filter");
        const struct timespec wait = {.tv_nsec = 300 * 1000 * 1000};
        /* a child that resumes this process 300 ms on, when it is frozen */
        long c = by_exit ? syscall(__NR_clone, (unsigned long)SIGCONT, 0, 0, 0, 0) : fork();
        C_CHECK(c >= 0, "clone: %s", strerror(errno));
        if (c == 0) {
            nanosleep(&wait, NULL);
            pid_t pp = getppid();
            siginfo_t si = {.si_code = SI_QUEUE, .si_pid = getpid(), .si_uid = getuid()};
            if (how == 0)
                kill(pp, SIGCONT);
            else if (how == 2)
                syscall(__NR_tgkill, pp, pp, SIGCONT);
            else if (how == 3)
                syscall(__NR_rt_sigqueueinfo, pp, SIGCONT, &si);
            _exit(0);
        }
        C_CHECK(write(p[1], "r", 1) == 1, "ready");
        for (;;)
            __atomic_add_fetch(s_tick, 1, __ATOMIC_RELAXED);
    }
    close(p[1]);
    char r;
    int st;
    if (read(p[0], &r, 1) != 1) { /* the clone was trapped: the sandbox ended it */
        close(p[0]);
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == CR_RUNNER_EXIT_SANDBOX,
                  "the child ended 0x%x before it was ready", st);
        munmap((void *)s_tick, 4096);
        return;
    }
    close(p[0]);
    cr_assert_eq(kill(pid, SIGSTOP), 0);
    cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
    cr_assert(WIFSTOPPED(st), "0x%x", st);
    uint64_t t0 = __atomic_load_n(s_tick, __ATOMIC_RELAXED);
    nanosleep(&(struct timespec){.tv_nsec = 700 * 1000 * 1000}, NULL);
    uint64_t t1 = __atomic_load_n(s_tick, __ATOMIC_RELAXED);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    munmap((void *)s_tick, 4096);
    cr_expect_eq(t1, t0, "the frozen executor ran on (%llu more ticks): its child resumed it (%s)",
                 (unsigned long long)(t1 - t0),
                 (const char *[]){"kill", "by ending, SIGCONT its exit signal", "tgkill",
                                  "rt_sigqueueinfo"}[how]);
}

Test(sandbox, a_child_cannot_resume_a_frozen_executor)
{
    for (int how = 0; how < 4; how++)
        s_expect_stays_frozen(how);
}
