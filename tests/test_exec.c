/* test_exec.c — worker/runner/exec.c's cr_exec_command_all, the barrier of a
 * multi-GPU job's ranks (docs/multigpu.md §5), on real crucible-executor
 * processes in their sandboxes: every rank released and waited for, and one
 * that dies, hangs or says it failed ending the wait for all, its peers
 * killed and said so. The object is a C entry that reads its "mode" from
 * argument 0, as the ranks of a task read their rank. */
#define _GNU_SOURCE
#include "error.h"
#include "exec.h"
#include "file.h"
#include "proc.h"
#include "timeutil.h"

#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXECUTOR CR_TEST_BIN_DIR "/crucible-executor"
#define N 3

/* mode 0: return; 1: spin ~30 ms; 2: store through NULL; 3: spin forever; 4: return,
 * saying nothing else (the judge reads ctl->result) */
static const char s_src[] =
    "#include <stdint.h>\n"
    "static volatile uint64_t sink;\n"
    "__attribute__((visibility(\"default\"))) void cr_entry(void **args)\n"
    "{\n"
    "    int mode = *(int *)args[0];\n"
    "    if (mode == 1) for (uint64_t i = 0; i < 60000000ull; i++) sink += i;\n"
    "    if (mode == 2) *(volatile int *)0 = 1;\n"
    "    if (mode == 3) for (;;) sink++;\n"
    "}\n";

static char s_dir[64];
static char s_so[128];

/* name.so in the test's folder, built from text (name.c); its path in so. */
static void s_build(const char *name, const char *text, char *so, size_t len)
{
    char src[128];
    snprintf(src, sizeof src, "%s/%s.c", s_dir, name);
    snprintf(so, len, "%s/%s.so", s_dir, name);
    cr_assert_eq(cr_file_write_atomic(src, text, strlen(text)), 0);
    char *argv[] = {"cc", "-O1", "-shared", "-fPIC", "-pthread", "-o", so, src, NULL};
    cr_proc_opts_t o = {.argv = argv, .out_cap = 1 << 14, .merge_stderr = 1,
                        .timeout_ms = 60000};
    cr_proc_result_t r;
    cr_assert_eq(cr_proc_run(&o, &r), 0);
    cr_assert(r.exited && r.exit_code == 0, "cc: %s", r.out ? r.out : "");
    cr_proc_result_close(&r);
}

static void s_setup(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cr-test-exec-XXXXXX");
    cr_assert_not_null(mkdtemp(s_dir));
    s_build("entry", s_src, s_so, sizeof s_so);
}

static void s_teardown(void)
{
    cr_file_rmtree(s_dir);
}

TestSuite(exec, .init = s_setup, .fini = s_teardown, .timeout = 60);

/* A candidate executor's options for object so; threads: the task allows
 * threads (then timed by the wall clock, to its done with wall_to_done). */
static cr_exec_opts_t s_opts(const char *so, int threads)
{
    cr_exec_opts_t o;
    memset(&o, 0, sizeof o);
    o.program = EXECUTOR;
    o.role = "candidate";
    o.object = so;
    o.cpu = -1;
    o.threads = o.wall_to_done = threads;
    o.ro_bytes = o.rw_bytes = 4096;
    return o;
}

/* N executors of the entry, each loaded but the one at index unloaded (-1: none). */
static void s_start_but(cr_exec_t **xs, int unloaded)
{
    for (int k = 0; k < N; k++) {
        cr_exec_opts_t o = s_opts(s_so, 0);
        char err[600] = "";
        cr_assert_eq(cr_exec_new(&o, &xs[k], err, sizeof err), 0, "executor %d: %s", k, err);
        if (k != unloaded)
            cr_assert_eq(cr_exec_load(xs[k], NULL, NULL, 0), 0, "load %d: %s", k,
                         cr_exec_fault(xs[k])->msg);
    }
}

static void s_start(cr_exec_t **xs)
{
    s_start_but(xs, -1);
}

/* Each executor's call of the entry with its mode. */
static void s_modes(cr_exec_t **xs, const int *mode)
{
    for (int k = 0; k < N; k++) {
        cr_exec_ctl_t *ctl = cr_exec_ctl(xs[k]);
        memset(&ctl->args[0], 0, sizeof ctl->args[0]);
        ctl->args[0].kind = CR_EXEC_ARG_VALUE;
        memcpy(ctl->args[0].val, &mode[k], sizeof mode[k]);
        ctl->nargs = 1;
    }
}

static void s_end(cr_exec_t **xs)
{
    for (int k = 0; k < N; k++)
        cr_exec_destroy(&xs[k]);
}

Test(exec, every_rank_released_and_timed)
{
    cr_exec_t *xs[N];
    s_start(xs);
    const int mode[N] = {0, 1, 0};
    for (int round = 0; round < 3; round++) {
        s_modes(xs, mode);
        double us[N] = {0};
        int failed = 7;
        cr_assert_eq(cr_exec_command_all(xs, N, CR_EXEC_OP_CALL, us, &failed), 0, "%s",
                     cr_exec_fault(xs[0])->msg);
        cr_assert_eq(failed, -1);
        /* the one that worked is timed as such, the others are not held up by it */
        cr_assert_gt(us[1], 3000, "the spinning rank read %.1f us", us[1]);
        cr_assert_lt(us[0], us[1]);
        cr_assert_lt(us[2], us[1]);
        cr_assert_gt(us[0], 0);
    }
    s_end(xs);
}

Test(exec, a_rank_that_dies_ends_the_call_for_all)
{
    cr_exec_t *xs[N];
    s_start(xs);
    const int mode[N] = {3, 2, 3}; /* its peers would wait for it forever */
    s_modes(xs, mode);
    for (int k = 0; k < N; k++)
        cr_exec_set_deadline(xs[k], cr_time_mono_ns() + 20000000000LL);
    int64_t t0 = cr_time_mono_ms();
    int failed = -1;
    cr_assert_eq(cr_exec_command_all(xs, N, CR_EXEC_OP_CALL, NULL, &failed), CR_E_EXEC);
    cr_assert_lt(cr_time_mono_ms() - t0, 5000, "the peers were waited for");
    cr_assert_eq(failed, 1);
    const cr_exec_fault_t *f = cr_exec_fault(xs[1]);
    cr_assert_neq(f->kind, CR_EXEC_OK);
    cr_assert_null(strstr(f->msg, "ended by the judge"), "%s", f->msg);
    for (int k = 0; k < N; k += 2) {
        f = cr_exec_fault(xs[k]);
        cr_assert_eq(f->kind, CR_EXEC_SIGNALED);
        cr_assert(strstr(f->msg, "ended by the judge: another rank of its job stopped serving"),
                  "%s", f->msg);
    }
    /* nothing more is sent to any of them */
    int again = -1;
    cr_assert_eq(cr_exec_command_all(xs, N, CR_EXEC_OP_PING, NULL, &again), CR_E_EXEC);
    s_end(xs);
}

Test(exec, a_hang_ends_at_the_deadline_naming_a_rank)
{
    cr_exec_t *xs[N];
    s_start(xs);
    const int mode[N] = {0, 3, 0};
    s_modes(xs, mode);
    for (int k = 0; k < N; k++)
        cr_exec_set_deadline(xs[k], cr_time_mono_ns() + 300000000LL);
    int failed = -1;
    cr_assert_eq(cr_exec_command_all(xs, N, CR_EXEC_OP_CALL, NULL, &failed), CR_E_EXEC);
    cr_assert_eq(failed, 1, "the only rank still running at the deadline");
    cr_assert_eq(cr_exec_fault(xs[1])->kind, CR_EXEC_TIMEOUT);
    cr_assert(strstr(cr_exec_fault(xs[1])->msg, "did not return before the run's deadline"));
    s_end(xs);
}

/* One that returns saying its call failed (here: it has no object; a CUDA
 * rank that met an error says so the same way) while its peers still run:
 * nobody is waited for any longer, and the caller reads its report. */
Test(exec, a_rank_that_reports_a_failure_ends_the_call_for_all)
{
    cr_exec_t *xs[N];
    s_start_but(xs, 1);
    const int mode[N] = {3, 0, 3};
    s_modes(xs, mode);
    for (int k = 0; k < N; k++)
        cr_exec_set_deadline(xs[k], cr_time_mono_ns() + 20000000000LL);
    int64_t t0 = cr_time_mono_ms();
    int failed = -1;
    cr_assert_eq(cr_exec_command_all(xs, N, CR_EXEC_OP_CALL, NULL, &failed), CR_E_EXEC);
    cr_assert_lt(cr_time_mono_ms() - t0, 5000, "the peers were waited for");
    cr_assert_eq(failed, 1);
    cr_assert_eq(cr_exec_fault(xs[1])->kind, CR_EXEC_OK, "its own fault: none, it returned");
    cr_assert_neq(cr_exec_ctl(xs[1])->result, 0);
    cr_assert_eq(cr_exec_fault(xs[0])->kind, CR_EXEC_SIGNALED);
    cr_assert_eq(cr_exec_fault(xs[2])->kind, CR_EXEC_SIGNALED);
    s_end(xs);
}

Test(exec, one_executor_is_cr_exec_command)
{
    cr_exec_t *xs[N];
    s_start(xs);
    const int mode[N] = {1, 0, 0};
    s_modes(xs, mode);
    double us = 0;
    int failed = 7;
    cr_assert_eq(cr_exec_command_all(xs, 1, CR_EXEC_OP_CALL, &us, &failed), 0);
    cr_assert_eq(failed, -1);
    cr_assert_gt(us, 3000);
    s_end(xs);
}

/* One executor of an object built from src_text (name.c, name.so in the
 * test's folder), with s_opts' threads. */
static cr_exec_t *s_exec_of(const char *name, const char *src_text, int threads)
{
    char so[128];
    s_build(name, src_text, so, sizeof so);
    cr_exec_opts_t o = s_opts(so, threads);
    char err[600] = "";
    cr_exec_t *x = NULL;
    cr_assert_eq(cr_exec_new(&o, &x, err, sizeof err), 0, "%s", err);
    return x;
}

/* Between commands the judge holds an executor frozen (exec.c note 2), so
 * that nothing it does escapes a command's time. A timer armed while the
 * object loads (a constructor's; the second filter, which traps timers,
 * comes after the load) whose signal is SIGCONT needs no handler: it resumes
 * the executor every 20 ms, and the "frozen" executor runs between commands
 * (a torch candidate, whose harness loop is Python it can patch, could write
 * its answer into the output arena while the reference is timed). The judge
 * sees the resumption at its next command: a sandbox violation. */
static const char s_src_cont[] =
    "#define _GNU_SOURCE\n"
    "#include <signal.h>\n"
    "#include <string.h>\n"
    "#include <time.h>\n"
    "#include <unistd.h>\n"
    "#include <sys/syscall.h>\n"
    "__attribute__((constructor)) static void s_arm(void)\n"
    "{\n"
    "    struct sigevent sev;\n"
    "    memset(&sev, 0, sizeof sev);\n"
    "    sev.sigev_notify = SIGEV_SIGNAL;\n"
    "    sev.sigev_signo = SIGCONT;\n"
    "    int id = -1;\n"
    "    struct itimerspec its = {{0, 20000000}, {0, 20000000}};\n"
    "    if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id) == 0)\n"
    "        syscall(SYS_timer_settime, id, 0, &its, NULL);\n"
    "}\n"
    "__attribute__((visibility(\"default\"))) void cr_entry(void **args) { (void)args; }\n";

Test(exec, an_executor_resumed_while_frozen_is_a_sandbox_violation)
{
    cr_exec_t *x = s_exec_of("cont", s_src_cont, 0);
    int rc = cr_exec_load(x, NULL, NULL, 0);
    if (rc == 0) { /* frozen after the load (the timer rarely fires within the freeze) */
        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
        cr_exec_ctl(x)->nargs = 0;
        cr_exec_set_deadline(x, cr_time_mono_ns() + 3000000000ll); /* resumed, it misses the wake */
        double us = 0;
        int failed = 7;
        rc = cr_exec_command_all(&x, 1, CR_EXEC_OP_CALL, &us, &failed);
    }
    cr_expect_neq(rc, 0, "a call after the executor ran while frozen passed");
    cr_expect_eq(cr_exec_fault(x)->kind, CR_EXEC_SANDBOX, "%d: %s", cr_exec_fault(x)->kind,
                 cr_exec_fault(x)->msg);
    cr_exec_destroy(&x);
}

/* A threaded executor (a GPU task's: timed by the wall clock) with
 * wall_to_done (the torch judge's) is timed from just before its SIGCONT to
 * the moment the judge sees it done, not to its stop (exec.c note 3): a
 * group stop waits for every thread to be scheduled into it, milliseconds a
 * command for a torch executor's threads on a loaded host, and in the sample
 * that is noise of the harness, not the call. The
 * entry leaves 200 threads asleep, so each stop is long; the command's time,
 * its least cost and the stop then add up to no more than the judge's whole
 * wait (with the stop inside the command's time they would be one stop over). */
static const char s_src_threads[] =
    "#include <pthread.h>\n"
    "#include <unistd.h>\n"
    "static void *s_sleep(void *a) { (void)a; for (;;) pause(); return 0; }\n"
    "__attribute__((visibility(\"default\"))) void cr_entry(void **args)\n"
    "{\n"
    "    static int started;\n"
    "    (void)args;\n"
    "    for (; started < 200; started++) {\n"
    "        pthread_t t;\n"
    "        if (pthread_create(&t, 0, s_sleep, 0) != 0)\n"
    "            break;\n"
    "    }\n"
    "}\n";

Test(exec, a_threaded_executors_time_ends_at_done_not_at_its_stop)
{
    cr_exec_t *x = s_exec_of("threads", s_src_threads, 1);
    cr_assert_eq(cr_exec_load(x, NULL, NULL, 0), 0, "%s", cr_exec_fault(x)->msg);
    int over = 0, long_stops = 0;
    for (int i = 0; i < 12; i++) {
        cr_exec_ctl(x)->nargs = 0;
        int64_t t0 = cr_time_mono_ns();
        double us = 0;
        cr_assert_eq(cr_exec_command(x, CR_EXEC_OP_CALL, &us), 0, "%s", cr_exec_fault(x)->msg);
        double whole = (double)(cr_time_mono_ns() - t0) / 1e3;
        double stop = cr_exec_freeze_us(x);
        if (i < 2)
            continue; /* the first starts the threads */
        long_stops += stop > 20;
        /* 1 us: the clock reads between the judge's and ours */
        over += us + cr_exec_overhead_us(x) + stop > whole + 1.0;
    }
    cr_expect_gt(long_stops, 5, "the stops of 200 threads read under 20 us");
    cr_expect_eq(over, 0, "%d of 10 commands' times held their stops", over);
    cr_exec_destroy(&x);
}

/* A wall_to_done command reports how long the executor's main thread waited
 * for a core in its window (exec.c note 3), never more than the window.
 * Beside more spinning processes than there are cores (given 100 ms to be
 * scheduled first), CPU-bound calls wait a good part of their time: over
 * eight of them, at least a tenth in all (one call alone can run inside the
 * scheduler's first slice; the sum cannot). */
Test(exec, a_wall_to_done_command_reports_its_wait_for_a_core)
{
    cr_exec_opts_t o = s_opts(s_so, 1);
    cr_exec_t *x = NULL;
    char err[600] = "";
    cr_assert_eq(cr_exec_new(&o, &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(cr_exec_load(x, NULL, NULL, 0), 0, "%s", cr_exec_fault(x)->msg);
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int ncpu = CPU_COUNT(&set), mode = 1, nhog = 0;
    pid_t hog[64];
    double waited = 0, took = 0;
    for (int round = 0; round < 9; round++) {
        if (round == 1) { /* from the second call on */
            for (; nhog <= ncpu && nhog < 64; nhog++)
                if ((hog[nhog] = fork()) == 0) {
                    alarm(30);
                    for (volatile unsigned long i = 0;; i++)
                        ;
                }
            usleep(100000);
        }
        cr_exec_ctl_t *ctl = cr_exec_ctl(x);
        memset(&ctl->args[0], 0, sizeof ctl->args[0]);
        ctl->args[0].kind = CR_EXEC_ARG_VALUE;
        memcpy(ctl->args[0].val, &mode, sizeof mode);
        ctl->nargs = 1;
        double us = 0;
        cr_assert_eq(cr_exec_command(x, CR_EXEC_OP_CALL, &us), 0, "%s", cr_exec_fault(x)->msg);
        double w = cr_exec_wait_us(x);
        cr_expect_geq(w, 0, "no wait read");
        cr_expect_leq(w, us + cr_exec_overhead_us(x) + 1.0, "waited %.1f us in %.1f", w, us);
        if (round > 0)
            waited += w, took += us;
    }
    for (int i = 0; i < nhog; i++) {
        kill(hog[i], SIGKILL);
        waitpid(hog[i], NULL, 0);
    }
    cr_expect_gt(waited, 0.1 * took, "8 calls beside %d busy processes waited %.1f of %.1f us",
                 nhog, waited, took);
    cr_exec_destroy(&x);
}

/* opts.whole_times (the torch judge's on a GPU): nothing is taken off, so a
 * command's time is its whole window, from just before its SIGCONT to its
 * done (cr_exec_last_window, the same clock reads); without it each one
 * would be short by its executor's least cost. */
Test(exec, whole_times_keep_the_least_cost)
{
    char so[128];
    s_build("threads", s_src_threads, so, sizeof so);
    cr_exec_opts_t o = s_opts(so, 1);
    o.whole_times = 1;
    cr_exec_t *x = NULL;
    char err[600] = "";
    cr_assert_eq(cr_exec_new(&o, &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(cr_exec_load(x, NULL, NULL, 0), 0, "%s", cr_exec_fault(x)->msg);
    cr_assert_gt(cr_exec_overhead_us(x), 0.5, "an empty command of a threaded executor "
                 "read %.2f us", cr_exec_overhead_us(x));
    for (int i = 0; i < 6; i++) {
        cr_exec_ctl(x)->nargs = 0;
        double us = 0;
        cr_assert_eq(cr_exec_command(x, CR_EXEC_OP_CALL, &us), 0, "%s", cr_exec_fault(x)->msg);
        int64_t t0 = 0, td = 0;
        cr_exec_last_window(x, &t0, &td);
        cr_expect_float_eq(us, (double)(td - t0) / 1e3, 1e-3, "a time of %.3f us in a window "
                           "of %.3f (least cost %.3f)", us, (double)(td - t0) / 1e3,
                           cr_exec_overhead_us(x));
    }
    cr_exec_destroy(&x);
}
