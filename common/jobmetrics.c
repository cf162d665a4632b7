/* jobmetrics.c — see jobmetrics.h. */
#include "jobmetrics.h"

#include "record.h"

#include <stdio.h>
#include <string.h>

int cr_jobmetrics_declare(cr_metrics_t *m, const char *prefix)
{
    static const struct {
        const char *suffix;
        cr_metric_type_t type;
        const char *help;
    } fam[] = {
        {"jobs_total", CR_METRIC_COUNTER, "records by status and backend"},
        {"hack_flags_total", CR_METRIC_COUNTER, "hack flags raised, by flag"},
        {"stage_seconds", CR_METRIC_HISTOGRAM, "seconds per stage (compile, verify, profile)"},
        {"assign_to_result_seconds", CR_METRIC_HISTOGRAM,
         "seconds from assignment to the finished record"},
        {"compile_cache_hits_total", CR_METRIC_COUNTER, "compiles served from the cache"},
        {"compiles_total", CR_METRIC_COUNTER, "records whose candidate compiled"},
    };
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s_%s", prefix, fam[i].suffix);
        int rc = cr_metrics_declare(m, name, fam[i].type, fam[i].help, cr_metrics_latency_buckets,
                                    cr_metrics_latency_nbuckets);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void cr_jobmetrics_record(cr_metrics_t *m, const char *prefix, const char *extra,
                          const Crucible__RewardRecord *rec)
{
    char name[160], labels[512], v1[160], v2[64];
    const char *x = extra ? extra : "", *sep = x[0] ? "," : "";
    snprintf(name, sizeof name, "%s_jobs_total", prefix);
    snprintf(labels, sizeof labels, "%s%sstatus=\"%s\",backend=\"%s\"", x, sep,
             cr_status_name(rec->status),
             cr_metrics_label_escape(rec->backend && rec->backend[0] ? rec->backend : "unknown",
                                     v2, sizeof v2));
    cr_metrics_add(m, name, labels, 1);
    snprintf(name, sizeof name, "%s_hack_flags_total", prefix);
    for (size_t i = 0; i < rec->n_hack_flags; i++) {
        snprintf(labels, sizeof labels, "%s%sflag=\"%s\"", x, sep,
                 cr_metrics_label_escape(rec->hack_flags[i], v1, sizeof v1));
        cr_metrics_add(m, name, labels, 1);
    }
    snprintf(name, sizeof name, "%s_stage_seconds", prefix);
    const struct {
        const char *stage;
        int has;
        double s;
    } st[] = {
        {"compile", rec->compile != NULL, rec->compile ? rec->compile->seconds : 0},
        {"verify", rec->verify != NULL, rec->verify ? rec->verify->seconds : 0},
        {"profile", rec->profile != NULL && rec->profile->n_cases > 0,
         rec->profile ? rec->profile->seconds : 0},
    };
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) {
        if (!st[i].has || !(st[i].s >= 0))
            continue;
        snprintf(labels, sizeof labels, "%s%sstage=\"%s\"", x, sep, st[i].stage);
        cr_metrics_observe(m, name, labels, st[i].s);
    }
    if (rec->t_assigned > 0 && rec->t_finished >= rec->t_assigned) {
        snprintf(name, sizeof name, "%s_assign_to_result_seconds", prefix);
        cr_metrics_observe(m, name, x, (double)(rec->t_finished - rec->t_assigned) / 1000.0);
    }
    if (rec->compile && rec->compile->ok) {
        snprintf(name, sizeof name, "%s_compiles_total", prefix);
        cr_metrics_add(m, name, x, 1);
        snprintf(name, sizeof name, "%s_compile_cache_hits_total", prefix);
        cr_metrics_add(m, name, x, rec->compile->cache_hit ? 1 : 0);
    }
}
