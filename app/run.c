/* run.c — `crucible run` and the local cluster it starts; see run.h. */
#define _GNU_SOURCE
#include "run.h"

#include "cli.h"
#include "client.h"
#include "error.h"
#include "file.h"
#include "log.h"
#include "record.h"
#include "timeutil.h"
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ----------------------------------------------------------- local cluster */

#define S_MAX_ARGS 64 /* argv entries of a child: the rows of one command and a few more */

/* Appends "--name=value" for each row that applies to `run` and to cmd. */
static int s_args_from_config(char **argv, int n, const cr_config_t *cfg, unsigned cmd)
{
    char val[CR_CONFIG_STR + 32];
    for (size_t i = 0; i < cr_config_nrows && n < S_MAX_ARGS - 8; i++) {
        const cr_conf_row_t *r = &cr_config_rows[i];
        if ((r->cmds & CR_CMD_RUN) && (r->cmds & cmd) &&
            asprintf(&argv[n], "--%s=%s", r->name, cr_config_format(cfg, r, val, sizeof val)) > 0)
            n++;
    }
    return n;
}

/* Child i's log: <dir>/coordinator.log, <dir>/worker-w<k>.log. */
static void s_log_path(const cr_local_t *l, int i, char *buf, size_t len)
{
    if (i == 0)
        snprintf(buf, len, "%s/coordinator.log", l->log_dir);
    else
        snprintf(buf, len, "%s/worker-w%d.log", l->log_dir, i - 1);
}

/* Forks and execs exe with argv as child i; its output goes to its log. */
static int s_spawn(cr_local_t *l, int i, const char *exe, char **argv)
{
    char log[300];
    s_log_path(l, i, log, sizeof log);
    /* 0600: a log names batches, jobs and keys' heads, and quotes compilers */
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) != 0) { /* a kept --log-dir may hold older, wider logs */
        int e = -errno;
        if (fd >= 0)
            close(fd);
        return e;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (pid == 0) {
        /* SIGTERM when we die, so no child outlives `crucible run` or a test */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        /* its own process group: a terminal's ^C reaches only us, and we stop
         * the children in order (workers first) */
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int nul = open("/dev/null", O_RDONLY);
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        execv(exe, argv);
        _exit(127);
    }
    close(fd);
    l->pid[i] = pid;
    return 0;
}

/* Forks the janitor: it blocks on a pipe only we can write. A byte means we
 * clean up ourselves; end of file means we died, so it waits a moment for
 * the children to leave (they got SIGTERM) and removes the folder. */
static int s_janitor(cr_local_t *l)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(p[0]);
        close(p[1]);
        return e;
    }
    if (pid == 0) {
        close(p[1]);
        setpgid(0, 0); /* a ^C at the terminal is for `crucible run`, not for us */
        char c;
        ssize_t r;
        while ((r = read(p[0], &c, 1)) < 0 && errno == EINTR)
            ;
        if (r == 0) {
            cr_time_sleep_ms(1000); /* 1 s: the children's SIGTERM handlers finish well within */
            cr_file_rmtree(l->dir);
        }
        _exit(0);
    }
    close(p[0]);
    l->janitor = pid;
    l->janitor_fd = p[1];
    return 0;
}

/* A loopback TCP port that was free a moment ago: bind port 0, read what the
 * kernel chose, close. Another process could take it before the coordinator
 * binds; the coordinator then fails to start and says so. 0 on failure. */
static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

int cr_local_start(const char *exe, const cr_config_t *cfg, int nworkers,
                   cr_local_transport_t transport, cr_local_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (nworkers < 1 || nworkers > CR_LOCAL_MAX_WORKERS) {
        snprintf(err, errlen, "--workers: %d is out of range [1, %d]", nworkers,
                 CR_LOCAL_MAX_WORKERS);
        return CR_E_USAGE;
    }
    cr_local_t *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    /* ipc:// paths must fit sun_path (108 bytes): a long TMPDIR falls back to /tmp */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(l->dir, sizeof l->dir, "%s/crucible-run-XXXXXX", tmp);
    if (!mkdtemp(l->dir)) {
        int e = -errno;
        snprintf(err, errlen, "%s: %s", l->dir, strerror(errno));
        free(l);
        return e;
    }
    if (transport == CR_LOCAL_TCP) {
        int pc = s_free_port(), pw = s_free_port();
        snprintf(l->clients_endpoint, sizeof l->clients_endpoint, "tcp://127.0.0.1:%d", pc);
        snprintf(l->workers_endpoint, sizeof l->workers_endpoint, "tcp://127.0.0.1:%d", pw);
        if (!pc || !pw || pc == pw) {
            snprintf(err, errlen, "no free loopback TCP port");
            cr_file_rmtree(l->dir);
            free(l);
            return -EADDRINUSE;
        }
    } else {
        snprintf(l->clients_endpoint, sizeof l->clients_endpoint, "ipc://%s/clients.sock",
                 l->dir);
        snprintf(l->workers_endpoint, sizeof l->workers_endpoint, "ipc://%s/workers.sock",
                 l->dir);
    }
    l->janitor_fd = -1;
    snprintf(l->log_dir, sizeof l->log_dir, "%s", cfg->log_dir[0] ? cfg->log_dir : l->dir);
    int rc = 0;
    if (cfg->log_dir[0] && (rc = cr_file_mkdirs(cfg->log_dir, 0755)) != 0)
        snprintf(err, errlen, "--log-dir %s: %s", cfg->log_dir, cr_strerror(rc));
    if (rc == 0 && (rc = s_janitor(l)) != 0)
        snprintf(err, errlen, "cannot start the janitor: %s", cr_strerror(rc));
    for (int i = 0; i <= nworkers && rc == 0; i++) {
        char *argv[S_MAX_ARGS] = {0};
        int n = 0;
        argv[n++] = strdup(exe);
        argv[n++] = strdup(i == 0 ? "coordinator" : "worker");
        n = s_args_from_config(argv, n, cfg, i == 0 ? CR_CMD_COORDINATOR : CR_CMD_WORKER);
        if (i == 0) {
            snprintf(l->name[i], sizeof l->name[i], "coordinator");
            if (asprintf(&argv[n], "--clients-endpoint=%s", l->clients_endpoint) > 0)
                n++;
            if (asprintf(&argv[n], "--db=%s/crucible.db", l->dir) > 0)
                n++;
        } else {
            snprintf(l->name[i], sizeof l->name[i], "worker local-w%d", i - 1);
            if (asprintf(&argv[n], "--worker-id=local-w%d", i - 1) > 0)
                n++;
            if (asprintf(&argv[n], "--work-dir=%s/work-w%d", l->dir, i - 1) > 0)
                n++;
        }
        if (asprintf(&argv[n], "--workers-endpoint=%s", l->workers_endpoint) > 0)
            n++;
        if (transport == CR_LOCAL_TCP && (argv[n] = strdup("--insecure")) != NULL)
            n++; /* the embedded cluster is on 127.0.0.1 by construction */
        rc = argv[0] && argv[1] ? s_spawn(l, i, exe, argv) : -ENOMEM;
        if (rc != 0)
            snprintf(err, errlen, "cannot start %s: %s", l->name[i], cr_strerror(rc));
        for (int k = 0; k < n; k++)
            free(argv[k]);
        l->n = i + 1;
    }
    if (rc != 0) {
        cr_local_stop(&l);
        return rc;
    }
    *out = l;
    return 0;
}

/* "exit 1" or "signal 9 (Killed)" for a wait status. */
static void s_describe(int st, char *buf, size_t len)
{
    if (WIFEXITED(st))
        snprintf(buf, len, "exit %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, len, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, len, "status 0x%x", st);
}

int cr_local_check(cr_local_t *l, char *why, size_t len)
{
    for (int i = 0; i < l->n; i++) {
        if (!l->pid[i])
            continue;
        int st = 0;
        if (waitpid(l->pid[i], &st, WNOHANG) == l->pid[i]) {
            l->pid[i] = 0;
            l->status[i] = st;
            char d[96];
            s_describe(st, d, sizeof d);
            snprintf(why, len, "%s exited early (%s)", l->name[i], d);
            return i;
        }
    }
    return -1;
}

void cr_local_log_tail(const cr_local_t *l, int i, FILE *f, int lines)
{
    char path[300], *text = NULL;
    size_t len = 0;
    s_log_path(l, i, path, sizeof path);
    if (cr_file_read(path, 64u << 20, &text, &len) != 0)
        return;
    size_t start = len;
    for (int seen = 0; start > 0; start--) /* back up over the last `lines` newlines */
        if (text[start - 1] == '\n' && start != len && ++seen == lines)
            break;
    for (char *p = text + start, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        fprintf(f, "    %.*s\n", nl ? (int)(nl - p) : (int)strlen(p), p);
        if (!nl)
            break;
    }
    free(text);
}

void cr_local_stop(cr_local_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    cr_local_t *l = *self_p;
    /* workers first, so they leave while the coordinator still listens */
    for (int pass = 0; pass < 2; pass++) {
        int64_t deadline = cr_time_mono_ms() + (pass ? 3000 : 2000); /* 5 s in all */
        for (int i = 0; i < l->n; i++)
            if (l->pid[i] && (pass == 1 || i > 0))
                kill(l->pid[i], SIGTERM);
        for (;;) {
            int left = 0;
            for (int i = 0; i < l->n; i++) {
                if (l->pid[i] && (pass == 1 || i > 0)) {
                    int st;
                    if (waitpid(l->pid[i], &st, WNOHANG) == l->pid[i]) {
                        l->pid[i] = 0;
                        l->status[i] = st;
                    } else {
                        left++;
                    }
                }
            }
            if (!left || cr_time_mono_ms() > deadline)
                break;
            cr_time_sleep_ms(20);
        }
    }
    for (int i = 0; i < l->n; i++) {
        if (l->pid[i]) {
            cr_warn("%s did not stop after SIGTERM: killed", l->name[i]);
            kill(-l->pid[i], SIGKILL); /* its group: anything it started too */
            kill(l->pid[i], SIGKILL);
            waitpid(l->pid[i], &l->status[i], 0);
            l->pid[i] = 0;
        }
    }
    cr_file_rmtree(l->dir);
    if (l->janitor) {
        ssize_t w = write(l->janitor_fd, "x", 1); /* stand down: the folder is gone */
        (void)w;
        close(l->janitor_fd);
        waitpid(l->janitor, NULL, 0);
    }
    free(l);
    *self_p = NULL;
}

/* ------------------------------------------------------------- crucible run */

typedef struct {
    cr_jobset_t js;                  /* the tasks and jobs submitted */
    Crucible__JobSpec **order;       /* js.jobs sorted by task, then job id; borrowed */
    Crucible__RewardRecord **recs;   /* record per entry of order, NULL until it comes; owned */
    size_t got;                      /* records received */
    cr_local_t *local;               /* the cluster, owned */
    char why[300];                   /* which child ended early */
} s_run_t;

static int s_cmp_job(const void *a, const void *b)
{
    const Crucible__JobSpec *x = *(Crucible__JobSpec *const *)a, *y = *(Crucible__JobSpec *const *)b;
    int c = strcmp(x->task, y->task);
    return c ? c : strcmp(x->job_id, y->job_id);
}

/* Keeps the first record of each job: exactly one per job is the contract. */
static int s_on_record(void *arg, const Crucible__RewardRecord *rec)
{
    s_run_t *r = arg;
    Crucible__JobSpec key = CRUCIBLE__JOB_SPEC__INIT, *kp = &key;
    key.task = rec->task;
    key.job_id = rec->job_id;
    Crucible__JobSpec **hit = bsearch(&kp, r->order, r->js.njobs, sizeof *r->order, s_cmp_job);
    if (!hit) {
        cr_warn("record for unknown job %s ignored", rec->job_id);
        return 0;
    }
    size_t i = (size_t)(hit - r->order);
    if (r->recs[i]) {
        cr_warn("second record for job %s ignored", rec->job_id);
        return 0;
    }
    r->recs[i] = cr_wire_record_dup(rec);
    if (!r->recs[i])
        return -ENOMEM;
    r->got++;
    return 0;
}

static int s_tick(void *arg)
{
    s_run_t *r = arg;
    return cr_local_check(r->local, r->why, sizeof r->why) >= 0 ? CR_E_CHILD : 0;
}

/* Copies the first line of s into out, at most width characters (UTF-8 safe). */
static void s_cell(char *out, size_t len, const char *s, int width)
{
    size_t k = 0;
    int chars = 0;
    for (const char *p = s; *p && *p != '\n' && k + 4 < len; p++) {
        if (((unsigned char)*p & 0xc0) != 0x80 && ++chars > width) {
            if (k >= 3) /* room for the ellipsis: drop back whole characters */
                for (int drop = 0; drop < 3 && k > 0; drop++) {
                    do
                        k--;
                    while (k > 0 && ((unsigned char)out[k] & 0xc0) == 0x80);
                }
            memcpy(out + k, "...", 3);
            k += 3;
            break;
        }
        out[k++] = *p == '\t' || *p == '\r' ? ' ' : *p;
    }
    out[k] = '\0';
}

static void s_table(const s_run_t *r, FILE *f)
{
    int wt = 4, wc = 9; /* "TASK", "CANDIDATE" */
    for (size_t i = 0; i < r->js.njobs; i++) {
        const Crucible__JobSpec *j = r->order[i];
        size_t tl = strlen(j->task), cl = strlen(j->job_id);
        if (strncmp(j->job_id, j->task, tl) == 0 && j->job_id[tl] == '/')
            cl -= tl + 1;
        wt = tl > (size_t)wt ? (int)(tl > 32 ? 32 : tl) : wt;
        wc = cl > (size_t)wc ? (int)(cl > 32 ? 32 : cl) : wc;
    }
    fprintf(f, "%-*s  %-*s  %-14s %8s %12s %7s  %s\n", wt, "TASK", wc, "CANDIDATE", "STATUS",
            "SPEEDUP", "MEDIAN µs", "REWARD", "MESSAGE");
    for (size_t i = 0; i < r->js.njobs; i++) {
        const Crucible__JobSpec *j = r->order[i];
        const Crucible__RewardRecord *rec = r->recs[i];
        size_t tl = strlen(j->task);
        const char *cand =
            strncmp(j->job_id, j->task, tl) == 0 && j->job_id[tl] == '/' ? j->job_id + tl + 1
                                                                         : j->job_id;
        char task[160], cn[160], speed[32] = "-", med[32] = "-", rew[32] = "-", msg[300];
        s_cell(task, sizeof task, j->task, 32);
        s_cell(cn, sizeof cn, cand, 32);
        s_cell(msg, sizeof msg, rec ? rec->message : "no record", 60);
        if (rec && rec->profile && rec->profile->speedup_geomean > 0)
            snprintf(speed, sizeof speed, "%.2fx", rec->profile->speedup_geomean);
        if (rec && rec->profile && rec->profile->n_cases)
            snprintf(med, sizeof med, "%.1f", rec->profile->cases[0]->median_us);
        if (rec && rec->has_reward)
            snprintf(rew, sizeof rew, "%.3f", rec->reward);
        fprintf(f, "%-*s  %-*s  %-14s %8s %11s %7s  %s\n", wt, task, wc, cn,
                rec ? cr_status_name(rec->status) : "-", speed, med, rew, msg);
    }
}

/* Writes the records as JSONL, in table order, replacing path atomically. */
static int s_write_jsonl(const s_run_t *r, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return -errno;
    for (size_t i = 0; i < r->js.njobs; i++) {
        char *j = r->recs[i] ? cr_record_to_json(r->recs[i]) : NULL;
        if (j)
            fprintf(m, "%s\n", j);
        free(j);
    }
    fclose(m);
    int rc = buf ? cr_file_write_atomic(path, buf, len) : -ENOMEM;
    free(buf);
    return rc;
}

int cr_run_main(int argc, char **argv)
{
    static const char usage[] =
        "crucible run TASKS [CANDIDATES] [--workers N] [--out FILE] [options]\n"
        "  starts a coordinator and N local workers, evaluates every candidate (each\n"
        "  task's candidates/ folder, or CANDIDATES as for submit), prints a table and\n"
        "  writes the records as JSONL (default ./crucible-results.jsonl)";
    cr_config_t cfg;
    int npos, x = cr_cli_parse("run", CR_CMD_RUN, usage, 1, 2, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    cr_log_set_role("run");
    int code = CR_EXIT_FAIL;
    s_run_t r = {0};
    cr_client_t *c = NULL;
    Crucible__Envelope *env = NULL;
    char err[1024], batch[CR_CONFIG_STR], exe[4096];
    const char *out = cfg.out[0] ? cfg.out : "crucible-results.jsonl";
    int64_t t0 = cr_time_mono_ms();

    if (cr_jobset_load(&r.js, argv[0], npos > 1 ? argv[1] : NULL, err, sizeof err) != 0) {
        fprintf(stderr, "crucible run: %s\n", err);
        goto done;
    }
    /* local workers serve only --backends: a job for another backend would
     * wait for a worker that never comes */
    char skipped[128];
    size_t dropped = cr_jobset_keep_backends(&r.js, cfg.backends, skipped, sizeof skipped);
    if (dropped)
        fprintf(stderr, "crucible run: skipping %zu candidates of %s tasks (local workers serve "
                "--backends %s)\n", dropped, skipped, cfg.backends);
    /* and their GPUs: a task with "gpus": N waits for a worker that owns N GPUs and judges
     * over NCCL (docs/multigpu.md); the local workers own --gpu-group's, one without it */
    int own = 0;
#ifdef CR_WITH_NCCL
    own = 1;
    for (const char *p = cfg.gpu_group; *p; p++)
        own += *p == ',';
    if (!cr_config_has_backend(cfg.backends, "cuda"))
        own = 0;
#endif
    dropped = cr_jobset_keep_gpus(&r.js, own, skipped, sizeof skipped);
    if (dropped)
        fprintf(stderr, "crucible run: skipping %zu candidates of %s tasks (a local worker owns "
                "%d GPU%s for them%s: --gpu-group)\n", dropped, skipped, own, own == 1 ? "" : "s",
                own ? "" : ", or this build has no NCCL");
    if (r.js.njobs == 0) {
        fprintf(stderr, "crucible run: no candidates to judge (looked in each task's "
                "candidates/)\n");
        goto done;
    }
    r.order = malloc(r.js.njobs * sizeof *r.order);
    r.recs = calloc(r.js.njobs, sizeof *r.recs);
    if (!r.order || !r.recs)
        goto done;
    memcpy(r.order, r.js.jobs, r.js.njobs * sizeof *r.order);
    qsort(r.order, r.js.njobs, sizeof *r.order, s_cmp_job);

    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "crucible run: cannot find this binary: %s\n", strerror(errno));
        goto done;
    }
    exe[n] = '\0';
    if (cr_local_start(exe, &cfg, (int)cfg.workers, CR_LOCAL_IPC, &r.local, err, sizeof err) != 0) {
        fprintf(stderr, "crucible run: %s\n", err);
        goto done;
    }
    fprintf(stderr, "crucible run: %zu candidates of %zu tasks on %d local workers\n", r.js.njobs,
            r.js.ntasks, (int)cfg.workers);
    if (!(c = cr_client_new(r.local->clients_endpoint, (size_t)cfg.max_msg)))
        goto done;
    cr_cli_batch_id(&cfg, "run-", batch, sizeof batch);
    int rc = cr_cli_submit_batch(c, &cfg, &r.js, batch, s_tick, &r, &env, err, sizeof err);
    if (rc == 0) {
        cr_progress_t p;
        cr_progress_init(&p, stderr, (uint32_t)r.js.njobs);
        cr_stream_t s = {.client = c, .batch = batch, .wait_s = cfg.wait_s, .progress = &p,
                         .on_record = s_on_record, .tick = s_tick, .arg = &r,
                         .silence_ms = cr_cli_silence_ms(&cfg)};
        rc = cr_cli_stream(&s);
        snprintf(err, sizeof err, "%s", s.error);
    }
    if (rc == CR_E_CHILD) {
        int i = 0;
        while (i < r.local->n && r.local->pid[i])
            i++;
        fprintf(stderr, "crucible run: %s; its last log lines:\n", r.why);
        cr_local_log_tail(r.local, i, stderr, 15);
        goto done;
    }
    if (rc != 0) {
        fprintf(stderr, "crucible run: %s\n", err[0] ? err : cr_strerror(rc));
        goto done;
    }
    s_table(&r, stdout);
    fflush(stdout);
    rc = s_write_jsonl(&r, out);
    if (rc != 0)
        fprintf(stderr, "crucible run: %s: %s\n", out, cr_strerror(rc));
    /* the progress line above already gave the counts by status */
    fprintf(stderr, "%zu/%zu candidates judged in %.1f s; records in %s\n", r.got, r.js.njobs,
            (double)(cr_time_mono_ms() - t0) / 1000.0, out);
    if (r.got != r.js.njobs)
        fprintf(stderr, "crucible run: %zu jobs have no record\n", r.js.njobs - r.got);
    code = rc == 0 && r.got == r.js.njobs ? CR_EXIT_OK : CR_EXIT_FAIL;
done:
    cr_wire_free(&env);
    cr_client_destroy(&c);
    cr_local_stop(&r.local);
    for (size_t i = 0; r.recs && i < r.js.njobs; i++)
        if (r.recs[i])
            crucible__reward_record__free_unpacked(r.recs[i], NULL);
    free(r.recs);
    free(r.order);
    cr_jobset_close(&r.js);
    return code;
}
