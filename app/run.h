/* run.h — `crucible run`: a whole cluster on this machine, in one command.
 *
 * The local cluster is a coordinator and N workers started as child
 * processes of a crucible binary, talking over ipc:// endpoints inside a
 * private temporary folder that also holds the database, the work dirs and
 * each child's log. The end-to-end tests use the same code.
 *
 * Nothing outlives the process that started the cluster, even when it is
 * killed with SIGKILL: the children get SIGTERM from the kernel
 * (PR_SET_PDEATHSIG) and a janitor process removes the folder when the pipe
 * it waits on closes without a word. */
#ifndef CR_RUN_H
#define CR_RUN_H

#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define CR_LOCAL_MAX_WORKERS 256 /* the "workers" row's upper bound */

typedef struct {
    char dir[128];                         /* temporary folder; removed by cr_local_stop */
    char log_dir[256];                     /* where the children log; dir unless --log-dir */
    char clients_endpoint[200];            /* ipc://<dir>/clients.sock or tcp://127.0.0.1:<port> */
    char workers_endpoint[200];            /* ipc://<dir>/workers.sock or tcp://127.0.0.1:<port> */
    pid_t janitor;                         /* removes dir if we die without cr_local_stop; 0 = none */
    int janitor_fd;                        /* write end of its pipe: a byte = "stand down" */
    int n;                                 /* children: [0] coordinator, [1..] workers */
    pid_t pid[1 + CR_LOCAL_MAX_WORKERS];   /* 0 once reaped */
    char name[1 + CR_LOCAL_MAX_WORKERS][32]; /* "coordinator", "worker local-w0", ... */
    int status[1 + CR_LOCAL_MAX_WORKERS];  /* wait status once reaped */
} cr_local_t;

/* How the local cluster's processes talk: Unix sockets in the temporary
 * folder (no port to collide with), or TCP on loopback with ports the kernel
 * picked free a moment before (what a farm uses, minus the network). */
typedef enum { CR_LOCAL_IPC, CR_LOCAL_TCP } cr_local_transport_t;

/* Makes the temporary folder and starts exe as `coordinator` and nworkers
 * `worker`s over transport. Each child gets the rows of cfg that apply to both `run` and
 * its own command, then its endpoints, database and work dir; its stdout and
 * stderr go to <dir>/<name>.log; it is sent SIGTERM if this process dies.
 * Returns 0 and *out (stop with cr_local_stop), or a negative code with err
 * saying what failed (nothing is left running or on disk). */
int cr_local_start(const char *exe, const cr_config_t *cfg, int nworkers,
                   cr_local_transport_t transport, cr_local_t **out, char *err, size_t errlen);

/* Reaps children that ended. Returns -1 while all run, else the index of
 * one that ended, with why describing it ("worker local-w1 exited (exit 1)"). */
int cr_local_check(cr_local_t *l, char *why, size_t len);

/* Writes the last lines of child i's log to f, indented. */
void cr_local_log_tail(const cr_local_t *l, int i, FILE *f, int lines);

/* SIGTERM to the workers, then the coordinator; SIGKILL to whatever is left
 * after 5 s; reaps all; removes the folder. Safe on NULL; nulls *self_p. */
void cr_local_stop(cr_local_t **self_p);

/* The `crucible run TASKS [CANDIDATES]` command. */
int cr_run_main(int argc, char **argv);

#endif
