/* report.c — see report.h.
 *
 * Every plot is an inline <svg> drawn from the records alone: the file can
 * be mailed, archived beside the results and opened offline. Each plot has
 * an id (plot-status, plot-flags, plot-speedup, plot-reward, plot-throughput,
 * plot-busy, plot-slowest, plot-cache) so that tests and readers can find
 * it. Times are the records' own (ms since the epoch, coordinator and
 * worker clocks). */
#define _GNU_SOURCE
#include "report.h"

#include "cli.h"
#include "error.h"
#include "record.h"
#include "wire.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define S_W 760            /* px: plot width */
#define S_BAR_H 22         /* px: one bar of a bar chart */
#define S_LEFT 200         /* px: label column of bar charts */
#define S_MAX_ROWS 40      /* bars, tasks, workers drawn at most; the rest summed as "other" */
#define S_BINS 30          /* time bins of the throughput and busy plots */
#define S_SLOWEST 10       /* jobs in the slowest-jobs plot */

static const char *const s_palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define S_NPAL (sizeof s_palette / sizeof s_palette[0])

/* Writes s with &, <, >, " escaped. */
static void s_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* ---- counting by name ---- */

typedef struct {
    char name[128];
    double v;      /* count or sum */
    double v2;     /* second sum (cache: hits) */
} s_kv_t;

typedef struct {
    s_kv_t e[S_MAX_ROWS + 1]; /* the last one is "other" */
    int n;
} s_tally_t;

static s_kv_t *s_tally(s_tally_t *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->e[i].name, name) == 0)
            return &t->e[i];
    if (t->n == S_MAX_ROWS) {
        snprintf(t->e[S_MAX_ROWS].name, sizeof t->e[0].name, "(other)");
        return &t->e[S_MAX_ROWS];
    }
    snprintf(t->e[t->n].name, sizeof t->e[0].name, "%s", name);
    return &t->e[t->n++];
}

static int s_rows(const s_tally_t *t)
{
    return t->n + (t->e[S_MAX_ROWS].v > 0);
}

/* A horizontal bar chart of t (value v), one colour per bar. */
static void s_bars(FILE *f, const char *id, const char *title, const s_tally_t *t,
                   const char *unit)
{
    int rows = s_rows(t);
    double max = 0;
    for (int i = 0; i < rows; i++) {
        const s_kv_t *e = i < t->n ? &t->e[i] : &t->e[S_MAX_ROWS];
        max = e->v > max ? e->v : max;
    }
    int h = 30 + (rows ? rows : 1) * S_BAR_H + 10;
    fprintf(f, "<h2>%s</h2>\n<svg id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            title, id, S_W, h, S_W, h);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n", S_W, h);
    if (rows == 0)
        fprintf(f, "<text x=\"10\" y=\"40\" class=\"n\">none</text>\n");
    for (int i = 0; i < rows; i++) {
        const s_kv_t *e = i < t->n ? &t->e[i] : &t->e[S_MAX_ROWS];
        double w = max > 0 ? (S_W - S_LEFT - 90) * e->v / max : 0;
        int y = 20 + i * S_BAR_H;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", S_LEFT - 8, y + 15);
        s_esc(f, e->name);
        fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
                   "<text x=\"%.1f\" y=\"%d\">%g%s</text>\n",
                S_LEFT, y + 3, w < 1 && e->v > 0 ? 1 : w, S_BAR_H - 6, s_palette[i % S_NPAL],
                S_LEFT + w + 6, y + 15, e->v, unit);
    }
    fputs("</svg>\n", f);
}

/* ---- the plots ---- */

static double s_job_s(const Crucible__RewardRecord *r)
{
    return r->t_assigned > 0 && r->t_finished >= r->t_assigned
               ? (double)(r->t_finished - r->t_assigned) / 1000.0
               : 0;
}

/* Speedup per task: one row per task, a dot per OK record on a log axis
 * from 1/100 to 100, the task's geometric mean as a bar. */
static void s_speedups(FILE *f, Crucible__RewardRecord *const *recs, size_t n)
{
    s_tally_t tasks = {0};
    for (size_t i = 0; i < n; i++)
        s_tally(&tasks, recs[i]->task ? recs[i]->task : "?");
    int rows = s_rows(&tasks);
    int h = 50 + (rows ? rows : 1) * 28;
    const double lo = -2, hi = 2; /* log10 axis */
    int x0 = S_LEFT, x1 = S_W - 20;
#define S_X(l) (x0 + ((l) < lo ? 0 : (l) > hi ? 1 : ((l) - lo) / (hi - lo)) * (x1 - x0))
    fprintf(f, "<h2>Speedup per task (records with a profile; log scale)</h2>\n"
               "<svg id=\"plot-speedup\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
               "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n",
            S_W, h, S_W, h, S_W, h);
    for (int k = -2; k <= 2; k++) {
        double x = S_X((double)k);
        fprintf(f, "<line x1=\"%.1f\" y1=\"10\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%gx</text>\n",
                x, x, h - 30, k == 0 ? "#888" : "#ddd", x, h - 12, pow(10, k));
    }
    for (int t = 0; t < rows; t++) {
        const s_kv_t *e = t < tasks.n ? &tasks.e[t] : &tasks.e[S_MAX_ROWS];
        int y = 20 + t * 28;
        double lsum = 0;
        int cnt = 0;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", S_LEFT - 8, y + 14);
        s_esc(f, e->name);
        fputs("</text>\n", f);
        for (size_t i = 0; i < n; i++) {
            const Crucible__RewardRecord *r = recs[i];
            const char *name = r->task ? r->task : "?";
            int mine = t < tasks.n ? strcmp(name, e->name) == 0 : s_tally(&tasks, name) == e;
            double s = r->profile ? r->profile->speedup_geomean : 0;
            if (!mine || !(s > 0) || !isfinite(s))
                continue;
            double l = log10(s);
            lsum += l;
            cnt++;
            /* a little vertical jitter from the record's seq keeps dots apart */
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.7\"/>\n",
                    S_X(l), y + 10 + (double)(r->seq % 7) - 3, s_palette[t % S_NPAL]);
        }
        if (cnt)
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"3\" height=\"22\" fill=\"#222\"/>"
                       "<text x=\"%d\" y=\"%d\" class=\"n\" text-anchor=\"end\">gm %.2fx (%d)</text>\n",
                    S_X(lsum / cnt) - 1.5, y - 1, x1, y + 4, pow(10, lsum / cnt), cnt);
    }
#undef S_X
    fputs("</svg>\n", f);
}

/* Reward histogram over [0, max] in 20 bins, records with a reward only. */
static void s_rewards(FILE *f, Crucible__RewardRecord *const *recs, size_t n)
{
    enum { NB = 20 };
    double max = 0;
    unsigned bins[NB] = {0}, cnt = 0, top = 0;
    for (size_t i = 0; i < n; i++)
        if (recs[i]->has_reward && isfinite(recs[i]->reward) && recs[i]->reward > max)
            max = recs[i]->reward;
    if (max <= 0)
        max = 1;
    for (size_t i = 0; i < n; i++) {
        const Crucible__RewardRecord *r = recs[i];
        if (!r->has_reward || !isfinite(r->reward))
            continue;
        int b = (int)(r->reward / max * NB);
        b = b < 0 ? 0 : b >= NB ? NB - 1 : b;
        bins[b]++;
        cnt++;
        top = bins[b] > top ? bins[b] : top;
    }
    int h = 220, x0 = 60, y0 = 180, pw = S_W - 80;
    fprintf(f, "<h2>Reward distribution (%u records with a reward)</h2>\n"
               "<svg id=\"plot-reward\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
               "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n"
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n",
            cnt, S_W, h, S_W, h, S_W, h, x0, y0, x0 + pw, y0);
    for (int b = 0; b < NB; b++) {
        double bh = top ? 160.0 * bins[b] / top : 0;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#59a14f\">"
                   "<title>%u</title></rect>\n",
                x0 + (double)b * pw / NB + 1, y0 - bh, (double)pw / NB - 2, bh, bins[b]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3g"
               "</text><text x=\"10\" y=\"20\" class=\"n\">max bin %u</text>\n</svg>\n",
            x0, y0 + 18, x0 + pw, y0 + 18, max, top);
}

/* Per-worker lines over the batch's time span: what = 0 records finished
 * per minute, 1 GPU-busy fraction (verify + profile seconds / bin width,
 * charged to the bin the record finished in). */
static void s_timeline(FILE *f, Crucible__RewardRecord *const *recs, size_t n, int what)
{
    int64_t t0 = INT64_MAX, t1 = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s = recs[i]->t_assigned > 0 ? recs[i]->t_assigned : recs[i]->t_finished;
        if (recs[i]->t_finished > 0) {
            t0 = s < t0 ? s : t0;
            t1 = recs[i]->t_finished > t1 ? recs[i]->t_finished : t1;
        }
    }
    if (t1 <= t0)
        t0 = t1 - 1000;
    double bin_ms = (double)(t1 - t0 + 1) / S_BINS;
    s_tally_t workers = {0};
    static double v[S_MAX_ROWS + 1][S_BINS];
    memset(v, 0, sizeof v);
    for (size_t i = 0; i < n; i++) {
        const Crucible__RewardRecord *r = recs[i];
        if (r->t_finished <= 0 || !r->worker_id || !r->worker_id[0])
            continue;
        s_kv_t *e = s_tally(&workers, r->worker_id);
        int w = (int)(e - workers.e);
        int b = (int)((double)(r->t_finished - t0) / bin_ms);
        b = b < 0 ? 0 : b >= S_BINS ? S_BINS - 1 : b;
        double busy = (r->verify ? r->verify->seconds : 0) + (r->profile ? r->profile->seconds : 0);
        v[w][b] += what == 0 ? 60000.0 / bin_ms : busy * 1000.0 / bin_ms;
    }
    double max = what == 1 ? 1 : 0;
    int rows = s_rows(&workers);
    for (int w = 0; w < rows; w++)
        for (int b = 0; b < S_BINS; b++) {
            int k = w < workers.n ? w : S_MAX_ROWS;
            if (what == 1 && v[k][b] > 1)
                v[k][b] = 1; /* a record's time charged to one bin can spill past it */
            max = v[k][b] > max ? v[k][b] : max;
        }
    if (max <= 0)
        max = 1;
    int h = 240 + 18 * (rows ? rows : 1), x0 = 60, y0 = 190, pw = S_W - 80;
    fprintf(f, "<h2>%s</h2>\n<svg id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
               "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n"
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>"
               "<line x1=\"%d\" y1=\"20\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n"
               "<text x=\"%d\" y=\"16\" text-anchor=\"middle\">%.3g</text>"
               "<text x=\"%d\" y=\"%d\">0 s</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.1f s"
               "</text>\n",
            what == 0 ? "Per-worker throughput (records per minute)"
                      : "Per-worker GPU busy (share of each interval the runner measured)",
            what == 0 ? "plot-throughput" : "plot-busy", S_W, h, S_W, h, S_W, h, x0, y0, x0 + pw,
            y0, x0, x0, y0, x0, max, x0, y0 + 16, x0 + pw, y0 + 16, (double)(t1 - t0) / 1000.0);
    for (int w = 0; w < rows; w++) {
        int k = w < workers.n ? w : S_MAX_ROWS;
        fprintf(f, "<polyline fill=\"none\" stroke-width=\"2.5\" stroke=\"%s\" points=\"",
                s_palette[w % S_NPAL]);
        for (int b = 0; b < S_BINS; b++)
            fprintf(f, "%.1f,%.1f ", x0 + (b + 0.5) * pw / S_BINS, y0 - 170 * v[k][b] / max);
        fprintf(f, "\"/>\n<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                   "<text x=\"%d\" y=\"%d\">",
                x0, y0 + 28 + 18 * w, s_palette[w % S_NPAL], x0 + 18, y0 + 38 + 18 * w);
        s_esc(f, workers.e[k].name);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}

static int s_by_job_s(const void *a, const void *b)
{
    double x = s_job_s(*(Crucible__RewardRecord *const *)a),
           y = s_job_s(*(Crucible__RewardRecord *const *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The slowest jobs (assigned -> finished), stacked by stage. */
static void s_slowest(FILE *f, Crucible__RewardRecord *const *recs, size_t n)
{
    Crucible__RewardRecord **s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return;
    memcpy(s, recs, n * sizeof *s);
    qsort(s, n, sizeof *s, s_by_job_s);
    size_t k = n < S_SLOWEST ? n : S_SLOWEST;
    double max = k ? s_job_s(s[0]) : 0;
    if (max <= 0)
        max = 1;
    int h = 50 + (int)(k ? k : 1) * S_BAR_H;
    fprintf(f, "<h2>Slowest jobs (assigned to finished; compile, verify, profile, other)</h2>\n"
               "<svg id=\"plot-slowest\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
               "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n",
            S_W, h, S_W, h, S_W, h);
    double pw = S_W - S_LEFT - 90;
    for (size_t i = 0; i < k; i++) {
        const Crucible__RewardRecord *r = s[i];
        double parts[4] = {r->compile ? r->compile->seconds : 0, r->verify ? r->verify->seconds : 0,
                           r->profile ? r->profile->seconds : 0, 0};
        double total = s_job_s(r), x = S_LEFT;
        parts[3] = total - parts[0] - parts[1] - parts[2];
        int y = 20 + (int)i * S_BAR_H;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", S_LEFT - 8, y + 15);
        s_esc(f, r->job_id);
        fputs("</text>", f);
        for (int p = 0; p < 4; p++) {
            double w = parts[p] > 0 ? pw * parts[p] / max : 0;
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", x,
                    y + 3, w, S_BAR_H - 6, s_palette[p]);
            x += w;
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.2f s %s</text>\n", x + 6, y + 15, total,
                cr_status_name(r->status));
    }
    fputs("</svg>\n", f);
    free(s);
}

/* The settings the records carry, each with how many records agree. */
static void s_settings(FILE *f, const char *batch, Crucible__RewardRecord *const *recs, size_t n)
{
    struct {
        const char *label;
        s_tally_t t;
    } rows[] = {{"hardware (device)"}, {"host"}, {"backend"},
                {"clock policy"}, {"reference policy"}, {"reward formula"},
                {"cache flushed"}};
    for (size_t i = 0; i < n; i++) {
        const Crucible__RewardRecord *r = recs[i];
        const char *v[7] = {r->device, r->host, r->backend,
                            r->profile ? r->profile->clock_policy : NULL,
                            r->profile ? r->profile->ref_policy : NULL,
                            r->components ? r->components->formula : NULL,
                            r->profile ? (r->profile->cache_flushed ? "yes" : "no") : NULL};
        for (int k = 0; k < 7; k++)
            if (v[k] && v[k][0])
                s_tally(&rows[k].t, v[k])->v++;
    }
    fputs("<h2>Settings (from the records)</h2>\n<table id=\"settings\"><tr><th>batch</th><td>", f);
    s_esc(f, batch);
    fputs("</td></tr>\n", f);
    for (int k = 0; k < 7; k++) {
        fprintf(f, "<tr><th>%s</th><td>", rows[k].label);
        if (rows[k].t.n == 0)
            fputs("<i>not recorded</i>", f);
        for (int i = 0; i < s_rows(&rows[k].t); i++) {
            const s_kv_t *e = i < rows[k].t.n ? &rows[k].t.e[i] : &rows[k].t.e[S_MAX_ROWS];
            fputs(i ? "<br>" : "", f);
            s_esc(f, e->name);
            fprintf(f, " <span class=\"n\">(%g records)</span>", e->v);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("<tr><th>not in the records</th><td>toolkit version, time budget, RSE target and "
          "timeouts: <code>crucible submit --dump-config</code> of the submitting side, and the "
          "worker's start-up log, hold them</td></tr>\n</table>\n",
          f);
}

int cr_report_html(FILE *f, const char *batch, Crucible__RewardRecord *const *recs, size_t n)
{
    char when[64];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tm));
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Crucible report ", f);
    s_esc(f, batch);
    fputs("</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
          "svg{display:block;margin:6px 0 18px 0}svg text{font-size:12px;fill:#222}"
          ".n{color:#666;fill:#666}table{border-collapse:collapse}th,td{border:1px solid #ccc;"
          "padding:3px 8px;text-align:left;vertical-align:top;font-size:13px}h2{font-size:16px;"
          "margin:18px 0 4px 0}</style></head><body>\n<h1>Batch ",
          f);
    s_esc(f, batch);
    fprintf(f, "</h1>\n<p class=\"n\">%zu records; report written %s by crucible report.</p>\n",
            n, when);
    s_settings(f, batch, recs, n);

    s_tally_t st = {0}, fl = {0}, cache = {0};
    for (size_t i = 0; i < n; i++) {
        const Crucible__RewardRecord *r = recs[i];
        s_tally(&st, cr_status_name(r->status))->v++;
        for (size_t k = 0; k < r->n_hack_flags; k++)
            s_tally(&fl, r->hack_flags[k])->v++;
        if (r->compile && r->compile->ok) {
            s_kv_t *e = s_tally(&cache, r->worker_id && r->worker_id[0] ? r->worker_id : "?");
            e->v2 += 1;
            e->v += r->compile->cache_hit; /* hits, as a share below */
        }
    }
    s_bars(f, "plot-status", "Records by status", &st, "");
    s_bars(f, "plot-flags", "Hack flags raised", &fl, "");
    s_speedups(f, recs, n);
    s_rewards(f, recs, n);
    s_timeline(f, recs, n, 0);
    s_timeline(f, recs, n, 1);
    s_slowest(f, recs, n);
    double hits = 0, all = 0;
    for (int i = 0; i < s_rows(&cache); i++) {
        s_kv_t *e = i < cache.n ? &cache.e[i] : &cache.e[S_MAX_ROWS];
        hits += e->v;
        all += e->v2;
        e->v = e->v2 > 0 ? round(1000.0 * e->v / e->v2) / 10.0 : 0;
    }
    char title[160];
    snprintf(title, sizeof title, "Compile-cache hit rate per worker (all: %.1f%% of %.0f compiles)",
             all > 0 ? 100.0 * hits / all : 0, all);
    s_bars(f, "plot-cache", title, &cache, "%");
    fputs("</body></html>\n", f);
    return ferror(f) ? -EIO : 0;
}

/* ---- the subcommand ---- */

typedef struct {
    Crucible__RewardRecord **recs; /* owned, each free_unpacked */
    size_t n, cap;
} s_recs_t;

static int s_keep(void *arg, const Crucible__RewardRecord *rec)
{
    s_recs_t *r = arg;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        Crucible__RewardRecord **p = realloc(r->recs, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        r->recs = p;
        r->cap = cap;
    }
    if (!(r->recs[r->n] = cr_wire_record_dup(rec)))
        return -ENOMEM;
    r->n++;
    return 0;
}

int cr_cli_report(int argc, char **argv)
{
    cr_config_t cfg;
    int npos, x = cr_cli_parse("report", CR_CMD_REPORT,
                               "crucible report BATCH [--out FILE] [options]\n  writes one "
                               "self-contained HTML file (inline SVG plots, no external assets) "
                               "from every record of the batch; waits until the batch is done "
                               "(or --wait-s passes)",
                               1, 1, argc, argv, &cfg, &npos);
    if (x >= 0)
        return x;
    cr_cli_catch_signals();
    char out[CR_CONFIG_STR + 32];
    if (cfg.out[0])
        snprintf(out, sizeof out, "%s", cfg.out);
    else
        snprintf(out, sizeof out, "report-%.200s.html", argv[0]);
    cr_client_t *c = cr_client_new_cfg(&cfg);
    if (!c) {
        fprintf(stderr, "crucible report: cannot connect to %s\n", cfg.clients_endpoint);
        return CR_EXIT_FAIL;
    }
    s_recs_t r = {0};
    cr_stream_t s = {.client = c, .batch = argv[0], .wait_s = cfg.wait_s, .on_record = s_keep,
                     .arg = &r, .silence_ms = cr_cli_silence_ms(&cfg)};
    int rc = cr_cli_stream(&s);
    cr_client_destroy(&c);
    if (rc != 0) {
        fprintf(stderr, "crucible report: %s (%zu records read)\n",
                s.error[0] ? s.error : cr_strerror(rc), r.n);
    } else {
        FILE *f = fopen(out, "we");
        int wrc = f ? cr_report_html(f, argv[0], r.recs, r.n) : -EIO;
        if (f && fclose(f) != 0)
            wrc = -EIO;
        if (wrc != 0) {
            fprintf(stderr, "crucible report: %s: %s\n", out, strerror(errno));
            rc = -EIO;
        } else {
            fprintf(stderr, "report of batch %s (%zu records) written to %s\n", argv[0], r.n, out);
        }
    }
    for (size_t i = 0; i < r.n; i++)
        crucible__reward_record__free_unpacked(r.recs[i], NULL);
    free(r.recs);
    return rc == 0 ? CR_EXIT_OK : CR_EXIT_FAIL;
}
