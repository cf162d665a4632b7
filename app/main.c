/* main.c — the `crucible` binary: one table of subcommands, as git's commands[]. */
#include "cli.h"
#include "curve.h"
#include "report.h"
#include "run.h"

#include <stdio.h>
#include <string.h>

#ifndef CRUCIBLE_VERSION
#define CRUCIBLE_VERSION "0.1.0" /* CMakeLists.txt project(VERSION) */
#endif

/* crucible keygen --out PREFIX: a CURVE key pair for --key / --server-key
 * and the allow-lists. Not a config-table command: it has one option. */
static int s_keygen(int argc, char **argv)
{
    static const char usage[] = "usage: crucible keygen --out PREFIX\n"
                                "writes PREFIX.key (secret key, mode 0600; --key) and PREFIX.pub "
                                "(public key, z85;\n--server-key, or a line of --allow-clients / "
                                "--allow-workers)\n";
    const char *prefix = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return CR_EXIT_OK;
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc && !prefix) {
            prefix = argv[++i];
        } else if (strncmp(argv[i], "--out=", 6) == 0 && !prefix) {
            prefix = argv[i] + 6;
        } else {
            fprintf(stderr, "crucible keygen: unexpected '%s'\n%s", argv[i], usage);
            return CR_EXIT_USAGE;
        }
    }
    if (!prefix || !prefix[0]) {
        fprintf(stderr, "crucible keygen: --out PREFIX is needed\n%s", usage);
        return CR_EXIT_USAGE;
    }
    char err[512];
    if (cr_curve_keygen(prefix, err, sizeof err) != 0) {
        fprintf(stderr, "crucible keygen: %s\n", err);
        return CR_EXIT_FAIL;
    }
    printf("%s.key (secret) and %s.pub (public) written\n", prefix, prefix);
    return CR_EXIT_OK;
}

typedef struct {
    const char *name;                 /* argv[1] */
    int (*fn)(int argc, char **argv); /* gets the arguments after the name */
    const char *help;                 /* one line for `crucible --help` */
} s_command_t;

static const s_command_t s_commands[] = {
    {"run", cr_run_main, "start a local coordinator and workers, judge, print a table"},
    {"submit", cr_cli_submit, "submit tasks and candidates as a batch; prints the batch id"},
    {"watch", cr_cli_watch, "show a batch's progress until it is done"},
    {"results", cr_cli_results, "write a batch's records as JSONL, CSV or protobuf"},
    {"report", cr_cli_report, "write a batch's report: one HTML file with plots and settings"},
    {"status", cr_cli_status, "show the cluster's or a batch's state"},
    {"cancel", cr_cli_cancel, "cancel a batch, or one job of it"},
    {"task", cr_cli_task, "task check DIR...: validate task folders"},
    {"coordinator", cr_cli_coordinator, "run the coordinator (queue, scheduler, store)"},
    {"worker", cr_cli_worker, "run a worker (compile pool and judge) for this machine"},
    {"rollout", cr_cli_rollout, "sample the policy (OpenAI-compatible servers), judge every turn, write trajectories"},
    {"curate", cr_cli_curate, "judge a corpus of solutions; keep the correct, fast, distinct ones as SFT JSONL"},
    {"gateway", cr_cli_gateway, "run the HTTP/JSON gateway for trainers (native API, OpenRLHF, slime)"},
    {"keygen", s_keygen, "keygen --out PREFIX: a CURVE key pair for --key and the allow-lists"},
};

static void s_usage(FILE *f)
{
    fprintf(f, "usage: crucible <command> [arguments] [--option value ...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof s_commands / sizeof s_commands[0]; i++)
        fprintf(f, "  %-12s %s\n", s_commands[i].name, s_commands[i].help);
    fprintf(f, "\n`crucible <command> --help` lists the command's options.\n"
               "Start here: crucible run tasks/examples\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        s_usage(stderr);
        return CR_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        s_usage(stdout);
        return CR_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("crucible %s\n", CRUCIBLE_VERSION);
        return CR_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof s_commands / sizeof s_commands[0]; i++)
        if (strcmp(argv[1], s_commands[i].name) == 0)
            return s_commands[i].fn(argc - 2, argv + 2);
    fprintf(stderr, "crucible: '%s' is not a command\n\n", argv[1]);
    s_usage(stderr);
    return CR_EXIT_USAGE;
}
