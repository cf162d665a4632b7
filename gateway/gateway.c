/* gateway.c — `crucible gateway`: start, serve, stop; kernel extraction. See gateway.h. */
#define _GNU_SOURCE
#include "gw.h"

#include "client.h"
#include "curve.h"
#include "error.h"
#include "extract.h"
#include "file.h"
#include "hash.h"
#include "log.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ------------------------------------------------------------- extraction */

char *cr_gateway_extract(const char *text, int c_language)
{
    return cr_extract_kernel(text, c_language); /* common/extract.c, shared with rollout/ */
}

/* ------------------------------------------------------------------ start */

/* Loads one task folder, or every task folder inside dir. */
static int s_load_tasks(cr__gw_t *g, const char *dir)
{
    char err[1024];
    char *tj = cr_file_join(dir, "task.json");
    int single = tj && cr_file_exists(tj);
    free(tj);
    struct dirent **names = NULL;
    int n = single ? 1 : scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        cr_error("gateway: --tasks %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char *d = single ? strdup(dir)
                  : names[i]->d_name[0] == '.' ? NULL
                                               : cr_file_join(dir, names[i]->d_name);
        char *t = d ? cr_file_join(d, "task.json") : NULL;
        if (t && cr_file_exists(t)) {
            Crucible__TaskBundle *b = NULL;
            void *p = realloc(g->loaded, (g->nloaded + 1) * sizeof *g->loaded);
            if (p)
                g->loaded = p;
            if (!p || cr_client_task_bundle(d, &b, err, sizeof err) != 0) {
                cr_error("gateway: --tasks: %s", p ? err : "out of memory");
                rc = -1;
            } else if (cr__gw_loaded(g, b->name)) {
                cr_error("gateway: --tasks: two tasks are named %s (%s)", b->name, d);
                crucible__task_bundle__free_unpacked(b, NULL);
                rc = -1;
            } else {
                g->loaded[g->nloaded++] = b;
            }
        }
        free(t);
        free(d);
        if (!single)
            free(names[i]);
    }
    free(names);
    if (rc == 0)
        cr_info("gateway: %zu task%s from %s", g->nloaded, g->nloaded == 1 ? "" : "s", dir);
    return rc;
}

/* Reads the bearer tokens (one a line, # comments); keeps their hashes. */
static int s_load_tokens(cr__gw_t *g, const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        cr_error("gateway: --token-file %s: %s", path, strerror(errno));
        return -1;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        line[n] = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        n = strlen(s);
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
            s[--n] = '\0';
        if (!n || s[0] == '#')
            continue;
        if (n < 16) {
            cr_error("gateway: --token-file %s: a token of %zu characters is too short "
                     "(16 at least)", path, n);
            fclose(f);
            return -1;
        }
        void *p = realloc(g->tokens, (g->ntokens + 1) * sizeof *g->tokens);
        char *h = malloc(CR_HASH_HEX_LEN + 1);
        if (p)
            g->tokens = p;
        if (!p || !h) {
            free(h);
            fclose(f);
            return -1;
        }
        cr_hash_hex(s, n, h);
        g->tokens[g->ntokens++] = h;
        explicit_bzero(line, sizeof line);
    }
    fclose(f);
    if (g->ntokens == 0) {
        cr_error("gateway: --token-file %s holds no token", path);
        return -1;
    }
    return 0;
}

/* Whether --listen's host is loopback. */
static int s_loopback(const char *listen)
{
    return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "localhost:", 10) == 0 ||
           strncmp(listen, "[::1]:", 6) == 0;
}

int cr_gateway_main(const cr_config_t *cfg)
{
    cr__gw_t g = {.cfg = cfg, .wake_fd = -1};
    int code = 1, mu = 0, cond = 0, broker = 0;
    pthread_t th;
    void *daemon = NULL;
    char err[1024];
    cr_hash_global_init();
    if (!(g.by_id = json_object()))
        goto out;
    if (cfg->tasks[0] && s_load_tasks(&g, cfg->tasks) != 0)
        goto out;
    if (cfg->token_file[0] && s_load_tokens(&g, cfg->token_file) != 0)
        goto out;
    if (!s_loopback(cfg->listen) && g.ntokens == 0) {
        cr_error("gateway: --listen %s is not loopback: --token-file is required (bearer "
                 "tokens; see docs/gateway.md)", cfg->listen);
        goto out;
    }
    if (pthread_mutex_init(&g.mu, NULL) != 0)
        goto out;
    mu = 1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    cond = pthread_cond_init(&g.cond, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!cond || (g.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        goto out;
    /* SIGINT and SIGTERM go to this thread's sigwait, never to a handler
     * thread: blocked before any thread starts (they inherit the mask) */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (pthread_create(&th, NULL, cr__gw_broker, &g) != 0)
        goto out;
    broker = 1;
    if (!(daemon = cr__gw_http_start(&g, err, sizeof err))) {
        cr_error("gateway: %s", err);
        goto out;
    }
    char host[CR_CONFIG_STR];
    snprintf(host, sizeof host, "%s", cfg->listen);
    *strrchr(host, ':') = '\0';
    printf("listening on %s://%s:%u\n", cfg->tls_cert[0] ? "https" : "http", host,
           cr__gw_http_port(daemon));
    fflush(stdout);
    cr_info("gateway: serving %s for the coordinator at %s%s", cfg->listen,
            cfg->clients_endpoint, g.ntokens ? "; bearer tokens required" : "");
    int sig = 0;
    sigwait(&sigs, &sig);
    cr_info("gateway: stopping on signal %d", sig);
    code = 0;
out:
    cr__gw_http_stop(daemon);
    if (broker) {
        pthread_mutex_lock(&g.mu);
        g.stop = 1;
        pthread_mutex_unlock(&g.mu);
        cr__gw_wake(&g);
        pthread_join(th, NULL);
    }
    while (g.batches) {
        cr__gw_batch_t *b = g.batches;
        g.batches = b->next;
        cr__gw_batch_free(b);
    }
    for (size_t i = 0; i < g.nloaded; i++)
        crucible__task_bundle__free_unpacked(g.loaded[i], NULL);
    free(g.loaded);
    for (size_t i = 0; i < g.ntokens; i++)
        free(g.tokens[i]);
    free(g.tokens);
    free(g.status_json);
    json_decref(g.by_id);
    if (g.wake_fd >= 0)
        close(g.wake_fd);
    if (cond)
        pthread_cond_destroy(&g.cond);
    if (mu)
        pthread_mutex_destroy(&g.mu);
    return code;
}
