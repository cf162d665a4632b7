/* box.c — see box.h and docs/security.md.
 *
 * Design notes.
 *  1. Parent and child. Everything that allocates, formats or walks the
 *     configuration happens in the parent (cr_box_new, cr_box_prepare): the
 *     list of paths to expose with their places under the new root, the id
 *     maps, the Landlock ruleset, the environment. The child (cr_box_enter)
 *     runs between fork and exec of a multi-threaded worker, so it makes
 *     system calls only, on strings made ready for it.
 *  2. Order in the child: namespaces (need root, or a new user namespace)
 *     -> the new root (needs the private mount namespace) -> chroot ->
 *     uid/gid drop -> no_new_privs -> Landlock (needs no_new_privs once the
 *     capabilities are gone). The rlimits are cr_proc's (set before).
 *  3. One probe. cr_box_new runs `sh -c 'exit 0'` once in a child that
 *     tries every step and records which took (shm[0]); later children take
 *     exactly those, and one that fails is the machine's fault (shm[1],
 *     shm[2]), not the candidate's.
 *  4. PID namespace. The child forks once more after unshare(CLONE_NEWPID):
 *     the grandchild, pid 1 of the new namespace, becomes the compiler; the
 *     child (still root, running nothing else) waits for it and ends the
 *     same way. When the compiler ends, the kernel kills everything left in
 *     its namespace, so no process of the box's uid outlives its compile
 *     (setsid or not) to touch the build dir while the worker removes it.
 *     Both stay in the process group cr_proc kills on a timeout.
 *  5. Landlock rules name host inodes; the bind mounts under the new root
 *     are the same inodes, so the two layers agree on what is reachable. */
#define _GNU_SOURCE
#include "box.h"

#include "confine.h"
#include "error.h"
#include "file.h"
#include "log.h"
#include "workdir.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

extern char **environ;

/* Steps (bits of shm[0] and the probe's result). */
enum {
    S_NS = 1 << 0,       /* private mount and network namespaces */
    S_USERNS = 1 << 1,   /* ... from a new user namespace (not root) */
    S_ROOT = 1 << 2,     /* the new root is in place */
    S_DROP = 1 << 3,     /* root dropped to the box's uid */
    S_NNP = 1 << 4,      /* no_new_privs */
    S_LANDLOCK = 1 << 5, /* Landlock enforced */
    S_PID = 1 << 6,      /* the compiler is pid 1 of its own PID namespace */
};

/* Paths exposed at most: the fixed ones below and two per compiler. */
#define S_MAX_PATHS 32
/* 1 MiB and 4096 inodes: the new root holds only mount points and symlinks */
#define S_ROOT_TMPFS "size=1m,nr_inodes=4096,mode=0755"
/* 512 MiB: the largest file a compiler may write (RLIMIT_FSIZE). A shared
 * object of a kernel is well under 100 MiB; `.fill 1<<40` in a candidate's
 * asm ends in SIGXFSZ, not in a full disk. */
#define S_FSIZE (512ll << 20)
/* 4096 tasks of the box's uid (--compile-uid, every worker's compile boxes
 * of the host): nvcc runs about six tools in turn, torch's load_inline adds
 * ninja and Python with their threads, and a worker runs up to compile-jobs
 * compiles at once (a core each: 127 on a 128-core host). */
#define S_NPROC 4096
/* CPU seconds past the compile timeout (which is wall-clock and enforced
 * by cr_proc): RLIMIT_CPU only backs it up against a process that escaped
 * the group kill. */
#define S_CPU_SLACK_S 5

/* 10 s for the probe's `sh -c 'exit 0'`: a box that cannot start a shell
 * in that time will not compile anything either. */
#define S_PROBE_S 10

typedef enum { S_BIND_DIR, S_BIND_FILE, S_BIND_DEV, S_LINK } s_kind_t;

typedef struct {
    s_kind_t kind;
    char host[PATH_MAX];  /* the path on the host (S_LINK: the link's target) */
    char inside[PATH_MAX]; /* where it goes: <mnt><path> */
} s_path_t;

struct cr_box {
    int root;                   /* the worker runs as root */
    uid_t uid;                  /* uid the compilers run as */
    gid_t gid;
    unsigned have;              /* steps the probe found permitted (S_*) */
    int abi;                    /* Landlock ABI; 0 = none */
    int64_t as_bytes;           /* RLIMIT_AS; 0 = none */
    char mnt[PATH_MAX];         /* the new root's mount point on the host */
    char mnt_build[PATH_MAX + 8]; /* <mnt>/build: where the build dir goes */
    char uid_map[64];           /* "<uid> <uid> 1" for a user namespace */
    char gid_map[64];
    s_path_t paths[S_MAX_PATHS];
    int npaths;
    char summary[768];
};

/* ---- the parent: what to expose ---- */

static int s_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* 1 when path lies beneath a directory already exposed. */
static int s_exposed(const cr_box_t *b, const char *path)
{
    for (int i = 0; i < b->npaths; i++)
        if (b->paths[i].kind == S_BIND_DIR && s_under(path, b->paths[i].host))
            return 1;
    return 0;
}

static void s_add(cr_box_t *b, s_kind_t kind, const char *name, const char *host)
{
    if (b->npaths >= S_MAX_PATHS) {
        cr_warn("compile box: more than %d paths to expose: %s left out", S_MAX_PATHS, name);
        return;
    }
    s_path_t *p = &b->paths[b->npaths++];
    p->kind = kind;
    snprintf(p->host, sizeof p->host, "%s", host);
    snprintf(p->inside, sizeof p->inside, "%s%s", b->mnt, name);
}

/* A top-level path of the toolchain: a directory is bound, a symlink
 * (merged /usr: /lib -> usr/lib) is made again inside. */
static void s_add_system(cr_box_t *b, const char *name)
{
    struct stat st;
    if (lstat(name, &st) != 0)
        return;
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(name, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            s_add(b, S_LINK, name, target);
        }
    } else if (S_ISDIR(st.st_mode)) {
        if (!s_exposed(b, name))
            s_add(b, S_BIND_DIR, name, name);
    } else if (S_ISREG(st.st_mode)) {
        s_add(b, S_BIND_FILE, name, name);
    }
}

/* cc as configured ("cc", "/opt/cuda/bin/nvcc", "/tmp/x/fakecc") found the
 * way execvp will: the file itself is exposed, and so is its toolkit root
 * when it lives in a bin/ directory (nvcc reads ../include and ../nvvm). */
static void s_add_compiler(cr_box_t *b, const char *cc)
{
    char found[PATH_MAX] = "", real[PATH_MAX];
    if (strchr(cc, '/')) {
        snprintf(found, sizeof found, "%s", cc);
    } else {
        const char *path = getenv("PATH");
        char dirs[4096], *save = NULL;
        snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
        for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            snprintf(found, sizeof found, "%s/%s", d, cc);
            if (access(found, X_OK) == 0)
                break;
            found[0] = '\0';
        }
    }
    if (!found[0] || found[0] != '/' || !realpath(found, real)) {
        cr_warn("compile box: compiler '%s' not found: it is not exposed", cc);
        return;
    }
    /* the toolchain's prefix: bin/.. of where it was found and of its
     * real file (a virtual environment's python3 links out of its prefix) */
    for (int k = 0; k < 2; k++) {
        char root[PATH_MAX];
        snprintf(root, sizeof root, "%s", k ? found : real);
        char *slash = strrchr(root, '/');
        if (slash)
            *slash = '\0';
        slash = strrchr(root, '/');
        if (slash && strcmp(slash, "/bin") == 0 && slash != root) {
            *slash = '\0';
            if (!s_exposed(b, root))
                s_add(b, S_BIND_DIR, root, root);
        }
    }
    if (!s_exposed(b, found))
        s_add(b, S_BIND_FILE, found, found);
    if (strcmp(found, real) != 0 && !s_exposed(b, real))
        s_add(b, S_BIND_FILE, real, real);
    /* A script (crucible-torch): its interpreter too, with its prefix (a
     * Python virtual environment's bin/.. holds its packages). Once: the
     * interpreter's own "#!" is not followed. */
    static int depth;
    char interp[PATH_MAX] = "";
    FILE *f = depth == 0 ? fopen(real, "re") : NULL;
    if (f) {
        char line[PATH_MAX + 8];
        if (fgets(line, sizeof line, f) && line[0] == '#' && line[1] == '!') {
            const char *q = line + 2 + strspn(line + 2, " \t");
            snprintf(interp, sizeof interp, "%.*s", (int)strcspn(q, " \t\r\n"), q);
        }
        fclose(f);
    }
    /* not one of the system's (/bin/sh, /usr/bin/python3): those are there */
    int system = !strncmp(interp, "/usr/", 5) || !strncmp(interp, "/bin/", 5) ||
                 !strncmp(interp, "/sbin/", 6) || !strncmp(interp, "/lib", 4);
    if (interp[0] == '/' && !system && !s_exposed(b, interp)) {
        depth++;
        s_add_compiler(b, interp);
        depth--;
    }
}

/* ---- the child (async-signal-safe only: note 1) ---- */

static size_t s_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static int s_put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, s_len(text));
    close(fd);
    return n == (ssize_t)s_len(text) ? 0 : -1;
}

/* mkdir -p of path's parents (and of path itself when dir). */
static int s_mkdirs(const char *path, int dir)
{
    char buf[PATH_MAX];
    size_t n = s_len(path);
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        if (buf[i] == '\0' && !dir)
            break;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        buf[i] = c;
    }
    return 0;
}

/* The waiting parent of note 4: ends as its child ended. */
static void s_reap_as(pid_t child)
{
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st))
        _exit(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) {
        signal(WTERMSIG(st), SIG_DFL);
        kill(getpid(), WTERMSIG(st));
    }
    _exit(127);
}

/* The new root (header, "files"). */
static int s_new_root(const cr_box_run_t *r)
{
    const cr_box_t *b = r->box;
    if (mount("crucible-box", b->mnt, "tmpfs", MS_NOSUID | MS_NODEV, S_ROOT_TMPFS) != 0)
        return -1;
    for (int i = 0; i < b->npaths; i++) {
        const s_path_t *p = &b->paths[i];
        if (p->kind == S_LINK) {
            if (s_mkdirs(p->inside, 0) != 0 || symlink(p->host, p->inside) != 0)
                return -1;
            continue;
        }
        if (s_mkdirs(p->inside, p->kind == S_BIND_DIR) != 0)
            return -1;
        if (p->kind != S_BIND_DIR) {
            int fd = open(p->inside, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0)
                return -1;
            close(fd);
        }
        if (mount(p->host, p->inside, NULL, MS_BIND | MS_REC, NULL) != 0)
            return -1;
        /* read-only where the kernel lets us add the flag (a user namespace
         * may refuse a remount that drops a locked flag): file permissions
         * and Landlock still refuse writes there */
        if (p->kind != S_BIND_DEV)
            mount(NULL, p->inside, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL);
    }
    if (s_mkdirs(b->mnt_build, 1) != 0 ||
        mount(r->build, b->mnt_build, NULL, MS_BIND, NULL) != 0)
        return -1;
    mount(NULL, b->mnt, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, S_ROOT_TMPFS);
    if (chdir(b->mnt) != 0 || chroot(".") != 0 || chdir("/build") != 0)
        return -1;
    return 0;
}

/* Records a failed step; returns -1 for the caller to pass on. */
static int s_fail(const cr_box_run_t *r, int step)
{
    r->shm[1] = step;
    r->shm[2] = errno;
    return -1;
}

/* Takes the steps of want; probe: a step that fails is left out instead of
 * failing the run. The steps taken go to shm[0]. */
static int s_enter(const cr_box_run_t *r, unsigned want, int probe)
{
    const cr_box_t *b = r->box;
    unsigned got = 0;
    if (want & S_NS) {
        int flags = CLONE_NEWNS | CLONE_NEWNET | (b->root ? 0 : CLONE_NEWUSER);
        int ok = unshare(flags) == 0;
        if (ok && !b->root)
            ok = s_put("/proc/self/setgroups", "deny") == 0 &&
                 s_put("/proc/self/uid_map", b->uid_map) == 0 &&
                 s_put("/proc/self/gid_map", b->gid_map) == 0;
        if (ok)
            ok = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
        if (ok)
            got |= S_NS | (b->root ? 0 : S_USERNS);
        else if (!probe)
            return s_fail(r, S_NS);
    }
    if ((want & S_PID) && (got & S_NS)) {
        if (unshare(CLONE_NEWPID) == 0) {
            pid_t pid = fork();
            if (pid > 0)
                s_reap_as(pid);
            if (pid == 0)
                got |= S_PID;
            else if (!probe)
                return s_fail(r, S_PID);
        } else if (!probe) {
            return s_fail(r, S_PID);
        }
    }
    if ((want & S_ROOT) && (got & S_NS)) {
        if (s_new_root(r) == 0)
            got |= S_ROOT;
        else if (!probe)
            return s_fail(r, S_ROOT);
        else if (chdir(r->build) != 0) /* a part of the new root may be mounted: leave it */
            return s_fail(r, S_ROOT);
    }
    if (want & S_DROP) {
        if (cr_confine_drop(b->uid, b->gid) == 0)
            got |= S_DROP;
        else
            return s_fail(r, S_DROP); /* never run a compiler as root */
    }
    if (want & S_NNP) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
            got |= S_NNP;
        else if (!probe)
            return s_fail(r, S_NNP);
    }
    if ((want & S_LANDLOCK) && r->ruleset >= 0 && (got & S_NNP)) {
        if (syscall(__NR_landlock_restrict_self, r->ruleset, 0) == 0)
            got |= S_LANDLOCK;
        else if (!probe)
            return s_fail(r, S_LANDLOCK);
    }
    r->shm[0] = (int)got;
    return 0;
}

int cr_box_enter(const cr_box_run_t *run)
{
    return s_enter(run, run->box->have, 0);
}

static void s_probe_child(void *arg)
{
    const cr_box_run_t *r = arg;
    unsigned want = S_NS | S_PID | S_ROOT | S_NNP | S_LANDLOCK | (r->box->root ? S_DROP : 0);
    if (s_enter(r, want, 1) != 0)
        _exit(126);
}

/* ---- the parent: one run ---- */

static const char *s_step_name(int step)
{
    switch (step) {
    case S_NS:
        return "namespaces";
    case S_PID:
        return "the PID namespace";
    case S_ROOT:
        return "the new root";
    case S_DROP:
        return "the uid drop";
    case S_NNP:
        return "no_new_privs";
    case S_LANDLOCK:
        return "Landlock";
    }
    return "?";
}

/* The worker's variables a compiler may see (header, "environment"). */
static int s_keep_env(const char *kv)
{
    static const char *const exact[] = {"PATH=", "LANG=", "LD_LIBRARY_PATH=", NULL};
    static const char *const prefix[] = {"LC_", "CUDA_", "NVCC_", NULL};
    for (int i = 0; exact[i]; i++)
        if (strncmp(kv, exact[i], strlen(exact[i])) == 0)
            return 1;
    for (int i = 0; prefix[i]; i++)
        if (strncmp(kv, prefix[i], strlen(prefix[i])) == 0 && strchr(kv, '='))
            return 1;
    return 0;
}

static char **s_env(const char *home)
{
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e && *e; e++)
        if (s_keep_env(*e) && !(env[k++] = strdup(*e)))
            goto fail;
    if (asprintf(&env[k++], "TMPDIR=%s/tmp", home) < 0 || asprintf(&env[k++], "HOME=%s", home) < 0)
        goto fail;
    return env;
fail:
    for (size_t i = 0; i < k; i++)
        free(env[i]);
    free(env);
    return NULL;
}

/* The ruleset of one run (note 4); -1 when the box has no Landlock. */
static int s_ruleset(const cr_box_t *b, const char *build)
{
    if (b->abi <= 0)
        return -1;
    uint64_t read = cr_confine_landlock_read_rights();
    uint64_t write = cr_confine_landlock_write_rights(b->abi);
    struct landlock_ruleset_attr attr = {.handled_access_fs = read | write};
    int rs = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (rs < 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < b->npaths && rc == 0; i++) {
        const s_path_t *p = &b->paths[i];
        if (p->kind == S_LINK)
            continue;
        rc = cr_confine_landlock_rule(rs, p->host, p->kind == S_BIND_DEV ? read | write : read);
    }
    if (rc == 0)
        rc = cr_confine_landlock_rule(rs, build, read | write);
    if (rc != 0) {
        close(rs);
        return -1;
    }
    return rs;
}

int cr_box_prepare(const cr_box_t *b, const char *build, int64_t cpu_s, cr_box_run_t *run)
{
    memset(run, 0, sizeof *run);
    run->box = b;
    run->ruleset = -1;
    run->shm = MAP_FAILED;
    snprintf(run->build, sizeof run->build, "%s", build);
    run->shm = mmap(NULL, 3 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
    if (run->shm == MAP_FAILED) {
        run->shm = NULL;
        return -ENOMEM;
    }
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/tmp", build);
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return -errno;
    if (b->have & S_DROP) {
        /* the compiler writes its objects and temporaries here, nowhere else */
        if (chown(tmp, b->uid, b->gid) != 0 || chown(build, b->uid, b->gid) != 0)
            return -errno;
    }
    if (b->have & S_LANDLOCK) {
        run->ruleset = s_ruleset(b, build);
        if (run->ruleset < 0)
            return -errno ? -errno : -EINVAL;
    }
    run->envp = s_env((b->have & S_ROOT) ? "/build" : build);
    if (!run->envp)
        return -ENOMEM;
    run->limits = (cr_rlimits_t){.as_bytes = b->as_bytes, .fsize_bytes = S_FSIZE,
                                 .nproc = (b->have & S_DROP) ? S_NPROC : 0,
                                 .cpu_s = cpu_s > 0 ? cpu_s + S_CPU_SLACK_S : 0, .no_core = 1};
    return 0;
}

int cr_box_failed(const cr_box_run_t *run, char *why, size_t len)
{
    if (!run->shm || run->shm[1] == 0)
        return 0;
    snprintf(why, len, "compile box: %s failed in the compiler's child: %s",
             s_step_name(run->shm[1]), strerror(run->shm[2]));
    return 1;
}

void cr_box_run_close(cr_box_run_t *run)
{
    if (run->ruleset >= 0)
        close(run->ruleset);
    run->ruleset = -1;
    if (run->shm)
        munmap(run->shm, 3 * sizeof(int));
    run->shm = NULL;
    for (char **e = run->envp; e && *e; e++)
        free(*e);
    free(run->envp);
    run->envp = NULL;
}

/* ---- the box ---- */

/* Runs the probe (note 3) in a scratch build dir under work_dir; sets
 * b->have and the summary. */
static void s_probe(cr_box_t *b, const char *work_dir)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/build/.probe-%d", work_dir, (int)getpid());
    cr_file_rmtree(dir);
    b->have = S_NS | S_PID | S_ROOT | S_NNP | (b->abi > 0 ? S_LANDLOCK : 0) |
              (b->root ? S_DROP : 0);
    cr_box_run_t run;
    int rc = mkdir(dir, 0700) == 0 ? cr_box_prepare(b, dir, S_PROBE_S, &run) : -errno;
    unsigned got = 0;
    int ran = 0;
    if (rc == 0) {
        char *const argv[] = {"sh", "-c", "exit 0", NULL};
        cr_proc_opts_t o = {.argv = argv, .envp = run.envp, .cwd = dir, .merge_stderr = 1,
                            .out_cap = 4096, .timeout_ms = S_PROBE_S * 1000, .limits = &run.limits,
                            .child_setup = s_probe_child, .child_arg = &run};
        cr_proc_result_t r;
        if (cr_proc_run(&o, &r) == 0) {
            got = (unsigned)run.shm[0];
            ran = r.exited && r.exit_code == 0;
            if (!ran)
                cr_warn("compile box: the probe's shell did not run in the box (%s): %s",
                        run.shm[1] ? s_step_name(run.shm[1]) : "exit", r.out);
            cr_proc_result_close(&r);
        }
    }
    cr_box_run_close(&run);
    cr_file_rmtree(dir);
    if (!ran && (got & S_ROOT))
        got &= ~(unsigned)S_ROOT; /* the toolchain is not complete in it: without, then */
    b->have = got & (S_NS | S_USERNS | S_PID | S_ROOT | S_NNP | S_LANDLOCK | S_DROP);
    if (b->root && !(b->have & S_DROP))
        b->have |= S_DROP; /* not optional: every compile then fails as INFRA_ERROR, loudly */

    char skipped[384] = "";
    size_t k = 0;
#define SKIP(cond, text)                                                                     \
    if (cond)                                                                                \
    k += (size_t)snprintf(skipped + k, k < sizeof skipped ? sizeof skipped - k : 0, "%s%s",  \
                          k ? "; " : "", text)
    SKIP(!(b->have & S_NS), b->root ? "no mount or network namespace (unshare refused)"
                                    : "no user namespace (so no mount or network namespace)");
    SKIP((b->have & S_NS) && !(b->have & S_PID),
         "no PID namespace (a compiler's leftover processes are killed with its group only)");
    SKIP((b->have & S_NS) && !(b->have & S_ROOT), "no private root (a mount was refused)");
    SKIP(b->abi <= 0, "no Landlock (kernel without it, or it is not enabled)");
    SKIP(b->abi > 0 && !(b->have & S_LANDLOCK), "Landlock not enforced");
    SKIP(!b->root, "not root: the worker's uid kept");
#undef SKIP
    char as[32] = "none", nproc[16] = "unchanged";
    if (b->as_bytes > 0)
        snprintf(as, sizeof as, "%lld MiB", (long long)(b->as_bytes >> 20));
    if (b->have & S_DROP)
        snprintf(nproc, sizeof nproc, "%d", S_NPROC);
    snprintf(b->summary, sizeof b->summary,
             "uid %u, net %s, pid %s, files %s, landlock %s, as %s, fsize %lld MiB, nproc %s%s%s",
             (unsigned)((b->have & S_DROP) ? b->uid : geteuid()),
             (b->have & S_NS) ? ((b->have & S_USERNS) ? "private (user ns)" : "private") : "host",
             (b->have & S_PID) ? "private" : "host",
             (b->have & S_ROOT) ? "private root of the toolchain and the build dir" : "host view",
             (b->have & S_LANDLOCK) ? "on" : "off", as,
             (long long)(S_FSIZE >> 20), nproc,
             skipped[0] ? "; " : "", skipped);
}

cr_box_t *cr_box_new(const cr_config_t *cfg, const char *work_dir, const char *const *compilers,
                     int n)
{
    cr_box_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->root = geteuid() == 0;
    b->uid = b->root ? (uid_t)(cfg->compile_uid > 0 ? cfg->compile_uid : 65533) : geteuid();
    b->gid = b->root ? (gid_t)b->uid : getegid();
    if (b->root && cfg->sandbox_uid > 0 && (int64_t)b->uid == cfg->sandbox_uid) {
        /* one RLIMIT_NPROC for both again, and compilers able to signal executors */
        cr_error("compile box: --compile-uid %u is the executors' --sandbox-uid: give the "
                 "compile boxes a uid of their own (docs/security.md)", (unsigned)b->uid);
        free(b);
        return NULL;
    }
    b->abi = cr_confine_landlock_abi();
    b->as_bytes = cfg->compile_memory_mb > 0 ? cfg->compile_memory_mb << 20 : 0;
    snprintf(b->uid_map, sizeof b->uid_map, "%u %u 1\n", (unsigned)geteuid(),
             (unsigned)geteuid());
    snprintf(b->gid_map, sizeof b->gid_map, "%u %u 1\n", (unsigned)getegid(),
             (unsigned)getegid());
    snprintf(b->mnt, sizeof b->mnt, "%s/box", work_dir);
    snprintf(b->mnt_build, sizeof b->mnt_build, "%s/build", b->mnt);
    char err[512];
    int rc = cr_workdir_subdir(b->mnt, err, sizeof err);
    if (rc != 0) {
        cr_error("compile box: %s", err);
        free(b);
        return NULL;
    }
    /* the toolchain (header, "files") */
    static const char *const system[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                         "/libx32", "/etc/alternatives", "/etc/ld.so.cache",
                                         NULL};
    for (int i = 0; system[i]; i++)
        s_add_system(b, system[i]);
    static const char *const devs[] = {"/dev/null", "/dev/zero", "/dev/urandom", NULL};
    for (int i = 0; devs[i]; i++)
        if (access(devs[i], F_OK) == 0)
            s_add(b, S_BIND_DEV, devs[i], devs[i]);
    for (int i = 0; i < n; i++)
        if (compilers[i] && compilers[i][0])
            s_add_compiler(b, compilers[i]);
    s_probe(b, work_dir);
    cr_info("compile box: %s", b->summary);
    return b;
}

void cr_box_destroy(cr_box_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

const char *cr_box_summary(const cr_box_t *b)
{
    return b->summary;
}
