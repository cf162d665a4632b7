/* test_proc.c — supervised child processes. */
#include "proc.h"
#include "timeutil.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

Test(proc, captures_output_and_exit_code)
{
    char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    cr_proc_opts_t o = {.argv = argv};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited);
    cr_assert_eq(r.exit_code, 3);
    cr_assert_str_eq(r.out, "out\n");
    cr_assert_str_eq(r.err, "err\n");
    char d[64];
    cr_assert_str_eq(cr_proc_describe(&r, d, sizeof d), "exit 3");
    cr_proc_result_close(&r);
}

Test(proc, stdin_is_delivered)
{
    char *argv[] = {"cat", NULL};
    static char big[300000]; /* more than a pipe buffer: written from the poll loop */
    memset(big, 'a', sizeof big);
    cr_proc_opts_t o = {.argv = argv, .stdin_data = big, .stdin_len = sizeof big,
                        .out_cap = sizeof big};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert_eq(r.out_len, sizeof big);
    cr_assert_not(r.out_truncated);
    cr_proc_result_close(&r);
}

Test(proc, signal_is_reported)
{
    char *argv[] = {"sh", "-c", "kill -SEGV $$", NULL};
    cr_proc_opts_t o = {.argv = argv};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.signaled);
    cr_assert_eq(r.signal, SIGSEGV);
    cr_proc_result_close(&r);
}

/* A child that starts a grandchild and hangs: the deadline kills the whole
 * group, so the grandchild is gone too. */
Test(proc, timeout_kills_the_group)
{
    char pidfile[] = "/tmp/cr-proc-XXXXXX";
    int fd = mkstemp(pidfile);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sleep 30 & echo $! > %s; sleep 30", pidfile);
    char *argv[] = {"sh", "-c", cmd, NULL};
    cr_proc_opts_t o = {.argv = argv, .timeout_ms = 300};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.timed_out);
    cr_assert(r.seconds < 5.0);
    FILE *f = fopen(pidfile, "r");
    int gpid = 0;
    cr_assert_eq(fscanf(f, "%d", &gpid), 1);
    fclose(f);
    unlink(pidfile);
    usleep(100000);
    /* gone, or a zombie waiting for whoever inherited it: either way not running */
    char stat[64], line[256] = "";
    snprintf(stat, sizeof stat, "/proc/%d/stat", gpid);
    FILE *sf = fopen(stat, "r");
    if (sf) {
        if (!fgets(line, sizeof line, sf))
            line[0] = '\0';
        fclose(sf);
    }
    char *rp = strrchr(line, ')');
    cr_assert(!sf || (rp && rp[2] == 'Z'), "grandchild %d still running: %s", gpid, line);
    cr_proc_result_close(&r);
}

/* A child that exits while a background grandchild holds stdout open must
 * not block the caller until the grandchild ends. */
Test(proc, leftover_grandchild_does_not_block)
{
    char *argv[] = {"sh", "-c", "sleep 30 & echo done", NULL};
    cr_proc_opts_t o = {.argv = argv, .timeout_ms = 10000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited);
    cr_assert_not(r.timed_out);
    cr_assert(r.seconds < 5.0);
    cr_assert_str_eq(r.out, "done\n");
    cr_proc_result_close(&r);
}

Test(proc, stderr_keeps_the_tail)
{
    char *argv[] = {"sh", "-c", "for i in $(seq 1 2000); do echo line$i >&2; done", NULL};
    cr_proc_opts_t o = {.argv = argv, .err_cap = 64};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.err_truncated);
    cr_assert_not_null(strstr(r.err, "line2000\n"));
    cr_proc_result_close(&r);
}

Test(proc, rlimits_apply)
{
    char *argv[] = {"sh", "-c", "ulimit -n; ulimit -c", NULL};
    cr_rlimits_t lim = {.nofile = 77, .no_core = 1};
    cr_proc_opts_t o = {.argv = argv, .limits = &lim};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert_str_eq(r.out, "77\n0\n");
    cr_proc_result_close(&r);
}

Test(proc, missing_program_exits_127)
{
    char *argv[] = {"/nonexistent/crucible-none", NULL};
    cr_proc_opts_t o = {.argv = argv};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited);
    cr_assert_eq(r.exit_code, 127);
    cr_proc_result_close(&r);
}

/* Started ahead of its input: it waits on stdin, the deadline counts from
 * cr_proc_wait, and the input given then is what it reads. */
Test(proc, spawn_then_wait_delivers_late_input)
{
    char *argv[] = {"sh", "-c", "read line; echo got:$line", NULL};
    cr_proc_opts_t o = {.argv = argv, .stdin_data = "late\n", .stdin_len = 5,
                        .timeout_ms = 300};
    cr_proc_t p;
    cr_assert_eq(cr_proc_spawn(&o, &p), 0);
    cr_assert_gt(p.pid, 0);
    usleep(400 * 1000); /* longer than the timeout: it must not count yet */
    cr_assert(cr_proc_alive(&p), "a child waiting for input is alive");
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_wait(&p, &o, &r), 0);
    cr_assert_eq(p.pid, 0, "wait takes the child over");
    cr_assert_not(r.timed_out);
    cr_assert(r.exited);
    cr_assert_str_eq(r.out, "got:late\n");
    cr_proc_result_close(&r);
}

static int s_take_output(pid_t pid, const char *out, size_t len, void *arg)
{
    (void)pid;
    *(int *)arg += 1;
    return len >= 5 && memcmp(out, "done\n", 5) == 0;
}

Test(proc, output_taken_detaches_the_child)
{
    /* it closes its stdout, then lingers: out_done takes the output, and
     * what it wrote to stderr before is kept */
    char *argv[] = {"sh", "-c", "echo done; echo note >&2; exec >&-; sleep 30", NULL};
    int calls = 0;
    cr_proc_opts_t o = {.argv = argv, .err_cap = 4096, .out_done = s_take_output,
                        .out_done_arg = &calls};
    int64_t t0 = cr_time_mono_ns();
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert_lt(cr_time_mono_ns() - t0, 10000000000LL, "waited for the child to end");
    cr_assert_eq(calls, 1);
    cr_assert(r.detached);
    cr_assert_not(r.exited);
    cr_assert_str_eq(r.out, "done\n");
    cr_assert_str_eq(r.err, "note\n");
    cr_proc_reap(r.pid); /* killed at the detach: reaped at once */
    cr_assert_eq(kill(r.pid, 0), -1, "the child is gone (reaped)");
    cr_proc_result_close(&r);

    /* output not wanted: waited for as usual */
    char *argv2[] = {"sh", "-c", "echo other; exec >&-; sleep 0.2; exit 4", NULL};
    o.argv = argv2;
    calls = 0;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert_eq(calls, 1);
    cr_assert_not(r.detached);
    cr_assert(r.exited);
    cr_assert_eq(r.exit_code, 4);
    cr_proc_result_close(&r);
}

Test(proc, discarded_spawn_is_killed_and_reaped)
{
    char *argv[] = {"sleep", "30", NULL};
    cr_proc_opts_t o = {.argv = argv};
    cr_proc_t p;
    cr_assert_eq(cr_proc_spawn(&o, &p), 0);
    pid_t pid = p.pid;
    cr_assert(cr_proc_alive(&p));
    cr_proc_discard(&p);
    cr_assert_eq(p.pid, 0);
    cr_assert_eq(kill(pid, 0), -1, "the child is gone (reaped)");
    cr_proc_discard(&p); /* safe on an empty one */
}

Test(proc, alive_is_false_once_the_child_ended)
{
    char *argv[] = {"true", NULL};
    cr_proc_opts_t o = {.argv = argv};
    cr_proc_t p;
    cr_assert_eq(cr_proc_spawn(&o, &p), 0);
    for (int i = 0; i < 200 && cr_proc_alive(&p); i++)
        usleep(10 * 1000);
    cr_assert_not(cr_proc_alive(&p));
    cr_proc_result_t r; /* its status is still there for wait */
    cr_assert_eq(cr_proc_wait(&p, &o, &r), 0);
    cr_assert(r.exited);
    cr_assert_eq(r.exit_code, 0);
    cr_proc_result_close(&r);
}

/* An answer is whole at its newline. */
static int s_line_done(pid_t pid, const char *out, size_t len, void *arg)
{
    (void)pid;
    (void)arg;
    return len > 0 && out[len - 1] == '\n';
}

/* cr_proc_exchange: a child that answers input after input stays, with the
 * stderr of each exchange in its result; one that ends, or runs past the
 * timeout, is reaped and reported as cr_proc_wait does. */
Test(proc, exchange_keeps_a_serving_child)
{
    char *argv[] = {"sh", "-c",
                    "while read l; do case $l in quit) exit 3;; nap) sleep 5;; esac; "
                    "echo note $l >&2; echo got $l; done",
                    NULL};
    cr_proc_opts_t o = {.argv = argv, .err_cap = 4096, .out_done = s_line_done,
                        .timeout_ms = 5000};
    cr_proc_t p;
    cr_assert_eq(cr_proc_spawn(&o, &p), 0);
    pid_t pid = p.pid;
    cr_proc_result_t r;
    const char *in[] = {"one\n", "two\n"};
    for (int i = 0; i < 2; i++) {
        o.stdin_data = in[i];
        o.stdin_len = strlen(in[i]);
        cr_assert_eq(cr_proc_exchange(&p, &o, &r), 0);
        cr_assert(r.kept, "exchange %d", i);
        cr_assert_eq(p.pid, pid, "the same child serves");
        cr_assert(cr_proc_alive(&p));
        char want[32];
        snprintf(want, sizeof want, "got %s", in[i]);
        cr_assert_str_eq(r.out, want);
        cr_proc_result_close(&r);
    }
    o.stdin_data = "quit\n";
    o.stdin_len = 5;
    cr_assert_eq(cr_proc_exchange(&p, &o, &r), 0);
    cr_assert_not(r.kept);
    cr_assert(r.exited && r.exit_code == 3, "exit %d", r.exit_code);
    cr_assert_eq(p.pid, 0, "an ended child is not kept");
    cr_assert_eq(kill(pid, 0), -1, "and it is reaped");
    cr_proc_result_close(&r);

    /* past the timeout: killed */
    cr_assert_eq(cr_proc_spawn(&o, &p), 0);
    o.stdin_data = "a\n";
    o.stdin_len = 2;
    cr_assert_eq(cr_proc_exchange(&p, &o, &r), 0);
    cr_assert(r.kept);
    cr_assert_str_eq(r.err, "note a\n", "this exchange's stderr");
    cr_proc_result_close(&r);
    o.stdin_data = "nap\n";
    o.stdin_len = 4;
    o.timeout_ms = 300;
    int64_t t0 = cr_time_mono_ns();
    cr_assert_eq(cr_proc_exchange(&p, &o, &r), 0);
    cr_assert_lt(cr_time_mono_ns() - t0, 3000000000LL);
    cr_assert_not(r.kept);
    cr_assert(r.timed_out);
    cr_assert_eq(p.pid, 0);
    cr_proc_result_close(&r);

    /* an answer before the child took all of its input breaks the exchange:
     * the rest would be read as the next input */
    signal(SIGPIPE, SIG_IGN); /* as every caller: the child ends with input unread */
    char *argv2[] = {"sh", "-c", "echo early; sleep 5", NULL};
    o.argv = argv2;
    o.timeout_ms = 3000;
    size_t big = 1u << 20;
    char *much = malloc(big);
    cr_assert_not_null(much);
    memset(much, 'x', big);
    o.stdin_data = much;
    o.stdin_len = big;
    cr_assert_eq(cr_proc_spawn(&o, &p), 0);
    t0 = cr_time_mono_ns();
    cr_assert_eq(cr_proc_exchange(&p, &o, &r), 0);
    cr_assert_not(r.kept, "answered with %zu of %zu bytes of input taken", r.in_written, big);
    cr_assert(r.signaled && r.signal == SIGKILL, "killed at its early answer");
    cr_assert_lt(cr_time_mono_ns() - t0, 2000000000LL, "at once, not at the timeout");
    cr_assert_lt(r.in_written, big);
    cr_assert_eq(p.pid, 0);
    cr_proc_result_close(&r);
    free(much);
}
