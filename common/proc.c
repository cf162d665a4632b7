/* proc.c — see proc.h. */
#define _GNU_SOURCE
#include "proc.h"

#include "timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* A capture buffer: keeps the first cap bytes (head mode) or the last cap
 * bytes (tail mode, for stderr where the end holds the reason). */
typedef struct {
    char *buf;    /* owned, cap + 1 bytes */
    size_t len;   /* bytes held */
    size_t cap;   /* bytes kept at most */
    int tail;     /* keep the last bytes instead of the first */
    int truncated;
} s_cap_t;

static int s_cap_init(s_cap_t *c, size_t cap, int tail)
{
    c->buf = malloc(cap + 1);
    c->len = 0;
    c->cap = cap;
    c->tail = tail;
    c->truncated = 0;
    if (!c->buf)
        return -ENOMEM;
    c->buf[0] = '\0';
    return 0;
}

static void s_cap_add(s_cap_t *c, const char *data, size_t n)
{
    if (c->len + n <= c->cap) {
        memcpy(c->buf + c->len, data, n);
        c->len += n;
    } else if (!c->tail) {
        size_t room = c->cap - c->len;
        memcpy(c->buf + c->len, data, room);
        c->len = c->cap;
        c->truncated = 1;
    } else {
        c->truncated = 1;
        if (n >= c->cap) {
            memcpy(c->buf, data + (n - c->cap), c->cap);
            c->len = c->cap;
        } else {
            size_t keep = c->cap - n;
            memmove(c->buf, c->buf + (c->len - keep), keep);
            memcpy(c->buf + keep, data, n);
            c->len = c->cap;
        }
    }
    c->buf[c->len] = '\0';
}

/* One read from a ready pipe into its capture; closes it (and sets *fd to
 * -1) at end of file or on an error other than EINTR/EAGAIN. */
static void s_read_into(int *fd, s_cap_t *c, char *chunk, size_t len)
{
    ssize_t k = read(*fd, chunk, len);
    if (k > 0) {
        s_cap_add(c, chunk, (size_t)k);
    } else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(*fd);
        *fd = -1;
    }
}

/* Closes whichever ends of the three pipes are still open. */
static void s_close_pipes(const int in_p[2], const int out_p[2], const int err_p[2])
{
    for (int i = 0; i < 2; i++) {
        if (in_p[i] >= 0)
            close(in_p[i]);
        if (out_p[i] >= 0)
            close(out_p[i]);
        if (err_p[i] >= 0)
            close(err_p[i]);
    }
}

static void s_set_limit(int res, int64_t v)
{
    struct rlimit rl = {.rlim_cur = (rlim_t)v, .rlim_max = (rlim_t)v};
    setrlimit(res, &rl);
}

static void s_child(const cr_proc_opts_t *o, int in_r, int out_w, int err_w)
{
    setpgid(0, 0);
    /* restore default dispositions the parent may have changed */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(o->merge_stderr ? out_w : err_w, 2) < 0)
        _exit(127);
    if (o->cwd && chdir(o->cwd) != 0)
        _exit(127);
    if (o->limits) {
        const cr_rlimits_t *l = o->limits;
        if (l->as_bytes > 0)
            s_set_limit(RLIMIT_AS, l->as_bytes);
        if (l->fsize_bytes > 0)
            s_set_limit(RLIMIT_FSIZE, l->fsize_bytes);
        if (l->nofile > 0)
            s_set_limit(RLIMIT_NOFILE, l->nofile);
        if (l->nproc > 0)
            s_set_limit(RLIMIT_NPROC, l->nproc);
        if (l->cpu_s > 0)
            s_set_limit(RLIMIT_CPU, l->cpu_s);
        if (l->no_core)
            s_set_limit(RLIMIT_CORE, 0);
    }
    if (o->child_setup)
        o->child_setup(o->child_arg);
    if (o->envp)
        execvpe(o->argv[0], o->argv, o->envp);
    else
        execvp(o->argv[0], o->argv);
    _exit(127);
}

int cr_proc_spawn(const cr_proc_opts_t *o, cr_proc_t *p)
{
    int in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
    *p = CR_PROC_NONE;
    if (pipe2(in_p, O_CLOEXEC) != 0 || pipe2(out_p, O_CLOEXEC) != 0 ||
        pipe2(err_p, O_CLOEXEC) != 0) {
        int rc = -errno;
        s_close_pipes(in_p, out_p, err_p);
        return rc;
    }
    p->t0 = cr_time_mono_ns();
    pid_t pid = fork();
    if (pid < 0) {
        int rc = -errno;
        s_close_pipes(in_p, out_p, err_p);
        return rc;
    }
    if (pid == 0)
        s_child(o, in_p[0], out_p[1], err_p[1]);
    p->pid = pid;
    setpgid(pid, pid); /* also from the parent: no race with an early kill */
    close(in_p[0]);
    close(out_p[1]);
    close(err_p[1]);
    p->in_fd = in_p[1];
    p->out_fd = out_p[0];
    p->err_fd = err_p[0];
    return 0;
}

int cr_proc_alive(const cr_proc_t *p)
{
    if (p->pid <= 0)
        return 0;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    /* WNOWAIT: look without reaping, so cr_proc_wait still gets the status */
    if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return 0;
    return si.si_pid == 0;
}

void cr_proc_reap(pid_t pid)
{
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
}

void cr_proc_discard(cr_proc_t *p)
{
    if (p->pid > 0) {
        kill(-p->pid, SIGKILL);
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
    int in_p[2] = {-1, p->in_fd}, out_p[2] = {p->out_fd, -1}, err_p[2] = {p->err_fd, -1};
    s_close_pipes(in_p, out_p, err_p);
    *p = CR_PROC_NONE;
}

/* The captures and the stdin count into r, which owns the buffers now. */
static void s_result_take(cr_proc_result_t *r, size_t in_off, const s_cap_t *out,
                          const s_cap_t *err)
{
    r->in_written = in_off;
    r->out = out->buf;
    r->out_len = out->len;
    r->out_truncated = out->truncated;
    r->err = err->buf;
    r->err_len = err->len;
    r->err_truncated = err->truncated;
}

/* cr_proc_wait, and with keep cr_proc_exchange (header). */
static int s_wait(cr_proc_t *p, const cr_proc_opts_t *o, cr_proc_result_t *r, int keep)
{
    memset(r, 0, sizeof *r);
    int in_p[2] = {-1, p->in_fd}, out_p[2] = {p->out_fd, -1}, err_p[2] = {p->err_fd, -1};
    pid_t pid = p->pid;
    int64_t t0 = p->t0;
    *p = CR_PROC_NONE; /* the descriptors and the child are ours from here */
    s_cap_t out = {0}, err = {0};
    if (s_cap_init(&out, o->out_cap ? o->out_cap : 65536, 0) != 0 ||
        s_cap_init(&err, o->err_cap ? o->err_cap : 16384, 1) != 0) {
        free(out.buf);
        free(err.buf);
        cr_proc_discard(&(cr_proc_t){.pid = pid, .in_fd = in_p[1], .out_fd = out_p[0],
                                     .err_fd = err_p[0]});
        return -ENOMEM;
    }
    r->pid = pid;

    /* stdin: written from the poll loop so a child that never reads cannot block us */
    size_t in_off = 0;
    int in_keep = keep ? in_p[1] : -1; /* a kept child's stdin stays open for the next input */
    if (!o->stdin_data || o->stdin_len == 0) {
        if (!keep)
            close(in_p[1]);
        in_p[1] = -1;
    } else {
        fcntl(in_p[1], F_SETFL, O_NONBLOCK);
    }

    /* the deadline runs from now: a started child waiting for its input
     * (cr_proc_spawn ahead of time) has not begun its work */
    int64_t started = cr_time_mono_ns();
    int64_t deadline = o->timeout_ms > 0 ? started + o->timeout_ms * 1000000 : 0;
    int status = 0, reaped = 0;
    int64_t drain_until = 0; /* after reaping, grandchildren may hold the pipes */
    char chunk[65536];
    for (;;) {
        struct pollfd pf[3];
        int n = 0, idx_in = -1, idx_out = -1, idx_err = -1;
        if (in_p[1] >= 0) {
            pf[n] = (struct pollfd){.fd = in_p[1], .events = POLLOUT};
            idx_in = n++;
        }
        if (out_p[0] >= 0) {
            pf[n] = (struct pollfd){.fd = out_p[0], .events = POLLIN};
            idx_out = n++;
        }
        if (err_p[0] >= 0) {
            pf[n] = (struct pollfd){.fd = err_p[0], .events = POLLIN};
            idx_err = n++;
        }
        if (!reaped) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) {
                reaped = 1;
                r->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
                r->exit_s = (double)(cr_time_mono_ns() - started) / 1e9;
                kill(-pid, SIGKILL); /* anything it left behind */
                drain_until = cr_time_mono_ns() + 200 * 1000000LL;
            }
        }
        if (reaped && (out_p[0] < 0 && err_p[0] < 0))
            break;
        int64_t now = cr_time_mono_ns();
        if (reaped && now > drain_until)
            break;
        if (!reaped && deadline && now >= deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            r->timed_out = 1;
            waitpid(pid, &status, 0);
            reaped = 1;
            r->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
            drain_until = cr_time_mono_ns() + 200 * 1000000LL;
            continue;
        }
        int wait_ms = 20; /* child exit is polled: a pidfd would need Linux 5.3 */
        if (!reaped && deadline) {
            int64_t left = (deadline - now) / 1000000 + 1;
            if (left < wait_ms)
                wait_ms = (int)left;
        }
        if (n == 0) {
            cr_time_sleep_ms(wait_ms > 5 ? 5 : wait_ms);
            continue;
        }
        int pr = poll(pf, (nfds_t)n, wait_ms);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr <= 0)
            continue;
        if (idx_in >= 0 && (pf[idx_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(in_p[1], (const char *)o->stdin_data + in_off, o->stdin_len - in_off);
            if (w > 0)
                in_off += (size_t)w;
            int gone = w < 0 && errno != EAGAIN && errno != EINTR; /* EPIPE: stdin closed */
            if (gone || in_off >= o->stdin_len) {
                if (!keep || gone)
                    close(in_p[1]);
                if (gone)
                    in_keep = -1;
                in_p[1] = -1;
            }
        }
        if (idx_out >= 0 && (pf[idx_out].revents & (POLLIN | POLLHUP | POLLERR))) {
            size_t before = out.len;
            s_read_into(&out_p[0], &out, chunk, sizeof chunk);
            int whole = keep && out_p[0] >= 0 && in_keep >= 0 && out.len > before && !reaped &&
                        o->out_done && o->out_done(pid, out.buf, out.len, o->out_done_arg);
            if (whole && o->stdin_data && in_off < o->stdin_len) {
                /* an answer before it took all of its input: the rest would
                 * be read as the next input; it broke the exchange */
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                whole = 0;
            }
            if (whole) {
                r->kept = 1; /* the answer is whole: the child stays for the next input */
                r->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
                r->eof_s = (double)(cr_time_mono_ns() - started) / 1e9;
                struct pollfd ep = {.fd = err_p[0], .events = POLLIN};
                /* what it wrote so far; bounded, against a writer that never stops */
                for (int k = 0; k < 64 && err_p[0] >= 0 && poll(&ep, 1, 0) > 0 &&
                                !(ep.revents & POLLHUP);
                     k++) {
                    size_t e0 = err.len;
                    s_read_into(&err_p[0], &err, chunk, sizeof chunk);
                    if (err.len == e0)
                        break;
                    ep.fd = err_p[0];
                }
                break;
            }
            if (out_p[0] < 0) {
                r->eof_s = (double)(cr_time_mono_ns() - started) / 1e9;
                if (!keep && !reaped && o->out_done &&
                    o->out_done(pid, out.buf, out.len, o->out_done_arg)) {
                    kill(-pid, SIGKILL);
                    kill(pid, SIGKILL);
                    r->detached = 1;
                    r->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
                    /* what it wrote to stderr before it parked is kept */
                    struct pollfd ep = {.fd = err_p[0], .events = POLLIN};
                    while (err_p[0] >= 0 && poll(&ep, 1, 0) > 0) {
                        s_read_into(&err_p[0], &err, chunk, sizeof chunk);
                        ep.fd = err_p[0];
                    }
                    break;
                }
            }
        }
        if (idx_err >= 0 && (pf[idx_err].revents & (POLLIN | POLLHUP | POLLERR)))
            s_read_into(&err_p[0], &err, chunk, sizeof chunk);
    }
    if (r->kept && err_p[0] >= 0 && out_p[0] >= 0) {
        s_result_take(r, in_off, &out, &err);
        *p = (cr_proc_t){.pid = pid, .in_fd = in_keep, .out_fd = out_p[0], .err_fd = err_p[0],
                         .t0 = t0};
        return 0;
    }
    r->kept = 0; /* its stderr ended with the answer: not kept after all */
    if (keep && in_keep >= 0 && in_p[1] < 0)
        in_p[1] = in_keep;
    if (!reaped && !r->detached) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        r->seconds = (double)(cr_time_mono_ns() - t0) / 1e9;
    }
    if (r->detached) {
        /* not reaped: no status to read */
    } else if (WIFEXITED(status)) {
        r->exited = 1;
        r->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r->signaled = 1;
        r->signal = WTERMSIG(status);
    }
    s_result_take(r, in_off, &out, &err);
    s_close_pipes(in_p, out_p, err_p);
    return 0;
}

int cr_proc_wait(cr_proc_t *p, const cr_proc_opts_t *o, cr_proc_result_t *r)
{
    return s_wait(p, o, r, 0);
}

int cr_proc_exchange(cr_proc_t *p, const cr_proc_opts_t *o, cr_proc_result_t *r)
{
    return s_wait(p, o, r, 1);
}

int cr_proc_run(const cr_proc_opts_t *o, cr_proc_result_t *r)
{
    memset(r, 0, sizeof *r);
    cr_proc_t p;
    int rc = cr_proc_spawn(o, &p);
    return rc != 0 ? rc : cr_proc_wait(&p, o, r);
}

void cr_proc_result_close(cr_proc_result_t *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

const char *cr_proc_describe(const cr_proc_result_t *r, char *buf, size_t len)
{
    if (r->timed_out)
        snprintf(buf, len, "timeout after %.2f s", r->seconds);
    else if (r->signaled)
        snprintf(buf, len, "signal %d (%s)", r->signal, strsignal(r->signal));
    else if (r->exited)
        snprintf(buf, len, "exit %d", r->exit_code);
    else
        snprintf(buf, len, "unknown end");
    return buf;
}
