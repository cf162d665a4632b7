/* rollout_cmd.c — `crucible rollout` and `crucible curate`: the command
 * lines of rollout/rollout.h, with an embedded cluster on --local-workers. */
#define _GNU_SOURCE
#include "cli.h"
#include "error.h"
#include "log.h"
#include "rollout.h"
#include "run.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    cr_local_t *local; /* the embedded cluster; NULL = none */
    char why[300];     /* which child ended */
} s_cmd_t;

static int s_tick(void *arg)
{
    s_cmd_t *c = arg;
    if (cr_cli_interrupted())
        return -EINTR;
    if (c->local && cr_local_check(c->local, c->why, sizeof c->why) >= 0) {
        fprintf(stderr, "crucible: %s\n", c->why);
        return CR_E_CHILD;
    }
    return 0;
}

/* Starts the embedded cluster when --local-workers asks for one. */
static int s_start(const char *name, const cr_config_t *cfg, s_cmd_t *c)
{
    if (!cfg->local_workers)
        return 0;
    char exe[4096], err[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "crucible %s: cannot find this binary: %s\n", name, strerror(errno));
        return -errno;
    }
    exe[n] = '\0';
    int rc = cr_local_start(exe, cfg, (int)cfg->local_workers, CR_LOCAL_IPC, &c->local, err,
                            sizeof err);
    if (rc != 0)
        fprintf(stderr, "crucible %s: %s\n", name, err);
    return rc;
}

int cr_cli_rollout(int argc, char **argv)
{
    static const char usage[] =
        "crucible rollout TASKS [--endpoints URL,...] [--samples N] [--turns T] [--out FILE]\n"
        "                 [--local-workers N | --clients-endpoint EP] [options]\n"
        "  for every task of TASKS (a task folder or a folder of them), --samples samples\n"
        "  (one GRPO group) from the OpenAI-compatible --endpoints, each up to --turns turns:\n"
        "  the kernel of every answer is judged and the feedback appended; trajectories\n"
        "  (messages, completions, kernels, records, rewards, returns, advantages) go to\n"
        "  --out as JSONL or protobuf, with a write-ahead log <out>.wal: run the same\n"
        "  command again to resume. The API key comes from --api-key-file or the variable\n"
        "  named by --api-key-env, never from the command line. docs/rollout.md";
    cr_config_t cfg;
    int npos, x = cr_cli_parse("rollout", CR_CMD_ROLLOUT, usage, 1, 1, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    cr_log_set_role("rollout");
    s_cmd_t c = {0};
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "crucible rollout: libcurl did not start\n");
        return CR_EXIT_FAIL;
    }
    int rc = !cfg.no_judge ? s_start("rollout", &cfg, &c) : 0;
    if (rc == 0)
        rc = cr_rollout_run(&cfg, argv[0], c.local ? c.local->clients_endpoint : NULL, s_tick, &c);
    cr_local_stop(&c.local);
    curl_global_cleanup();
    return rc == 0 ? CR_EXIT_OK : rc == CR_E_USAGE ? CR_EXIT_USAGE : CR_EXIT_FAIL;
}

int cr_cli_curate(int argc, char **argv)
{
    static const char usage[] =
        "crucible curate TASKS CORPUS [--out FILE] [--min-speedup X] [--report FILE]\n"
        "                [--local-workers N | --clients-endpoint EP] [options]\n"
        "  judges every solution of CORPUS (a JSONL manifest of {\"task\", \"file\" | \"source\",\n"
        "  \"job_id\"?} or a folder laid out <task>/<file>) against the tasks of TASKS; keeps\n"
        "  the correct ones (OK, no hack flag, speedup >= --min-speedup), one per normalised\n"
        "  source, as SFT JSONL {prompt, completion, task, speedup, hardware, record_id};\n"
        "  the report says what was dropped and why. docs/rollout.md";
    cr_config_t cfg;
    int npos, x = cr_cli_parse("curate", CR_CMD_CURATE, usage, 2, 2, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    cr_log_set_role("curate");
    s_cmd_t c = {0};
    int rc = s_start("curate", &cfg, &c);
    if (rc == 0)
        rc = cr_curate_run(&cfg, argv[0], argv[1], c.local ? c.local->clients_endpoint : NULL,
                           s_tick, &c);
    cr_local_stop(&c.local);
    return rc == 0 ? CR_EXIT_OK : rc == CR_E_USAGE ? CR_EXIT_USAGE : CR_EXIT_FAIL;
}
