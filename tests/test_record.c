/* test_record.c — status names, JSON / CSV / delimited records, reward formulas. */
#include "error.h"
#include "record.h"
#include "reward.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Text with every character CSV and JSON must escape, and some UTF-8. */
#define NASTY "a, \"quoted\"\nline\tü€"

/* Sets every field of m (recursively) to a non-default value, so a round
 * trip that drops any field, present or future, shows up. */
static void s_fill(ProtobufCMessage *m, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char *base = (char *)m;
        int rep = f->label == PROTOBUF_C_LABEL_REPEATED;
        size_t n = rep ? 2 : 1, es;
        switch (f->type) {
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_MESSAGE: es = sizeof(void *); break;
        case PROTOBUF_C_TYPE_DOUBLE:
        case PROTOBUF_C_TYPE_INT64:
        case PROTOBUF_C_TYPE_UINT64: es = 8; break;
        case PROTOBUF_C_TYPE_BOOL: es = sizeof(protobuf_c_boolean); break;
        default: es = 4; break;
        }
        char *p = rep ? calloc(n, es) : base + f->offset;
        for (size_t k = 0; k < n; k++) {
            char *e = p + k * es;
            unsigned v = 3 + i * 7 + (unsigned)k;
            switch (f->type) {
            case PROTOBUF_C_TYPE_STRING: {
                char *s = malloc(128);
                snprintf(s, 128, "%s-%u " NASTY, f->name, v);
                *(char **)e = s;
                break;
            }
            case PROTOBUF_C_TYPE_MESSAGE: {
                ProtobufCMessage *sub = malloc(((const ProtobufCMessageDescriptor *)f->descriptor)->sizeof_message);
                ((const ProtobufCMessageDescriptor *)f->descriptor)->message_init(sub);
                if (depth < 4)
                    s_fill(sub, depth + 1);
                *(ProtobufCMessage **)e = sub;
                break;
            }
            case PROTOBUF_C_TYPE_DOUBLE: *(double *)e = v + 1.0 / 3.0; break;
            case PROTOBUF_C_TYPE_INT64: *(int64_t *)e = -(int64_t)v * 1000000007LL; break;
            case PROTOBUF_C_TYPE_UINT64: *(uint64_t *)e = (uint64_t)v * 1000000007ULL; break;
            case PROTOBUF_C_TYPE_INT32: *(int32_t *)e = -(int32_t)v; break;
            case PROTOBUF_C_TYPE_BOOL: *(protobuf_c_boolean *)e = 1; break;
            case PROTOBUF_C_TYPE_ENUM: {
                const ProtobufCEnumDescriptor *ed = f->descriptor;
                *(int *)e = ed->values[ed->n_values - 1].value;
                break;
            }
            default: *(uint32_t *)e = v; break;
            }
        }
        if (rep) {
            *(size_t *)(base + f->quantifier_offset) = n;
            *(char **)(base + f->offset) = p;
        }
    }
}

static Crucible__RewardRecord *s_full_record(void)
{
    Crucible__RewardRecord *r = malloc(sizeof *r);
    crucible__reward_record__init(r);
    s_fill(&r->base, 0);
    r->status = CRUCIBLE__STATUS__STATUS_HACK_DETECTED;
    return r;
}

/* Packed bytes of two records are equal: the strongest equality protobuf gives. */
static void s_assert_same(const Crucible__RewardRecord *a, const Crucible__RewardRecord *b)
{
    uint8_t *pa, *pb;
    size_t la, lb;
    cr_assert_eq(cr_wire_record_pack(a, &pa, &la), 0);
    cr_assert_eq(cr_wire_record_pack(b, &pb, &lb), 0);
    cr_assert_eq(la, lb, "packed sizes differ: %zu vs %zu", la, lb);
    cr_assert_eq(memcmp(pa, pb, la), 0);
    free(pa);
    free(pb);
}

Test(record, status_names_cover_every_enum_value)
{
    const ProtobufCEnumDescriptor *d = &crucible__status__descriptor;
    for (unsigned i = 0; i < d->n_values; i++) {
        int v = d->values[i].value;
        const char *name = cr_status_name(v);
        cr_assert_str_eq(name, d->values[i].name + strlen("STATUS_"));
        int back = -1;
        cr_assert_eq(cr_status_parse(name, &back), 0, "%s", name);
        cr_assert_eq(back, v);
    }
    cr_assert_str_eq(cr_status_name(CRUCIBLE__STATUS__STATUS_OK), "OK");
    cr_assert_str_eq(cr_status_name(CRUCIBLE__STATUS__STATUS_INVALID_TASK), "INVALID_TASK");
    cr_assert_str_eq(cr_status_name(999), "UNSPECIFIED");
    int x;
    cr_assert_eq(cr_status_parse("NOT_A_STATUS", &x), CR_E_USAGE);
    cr_assert(cr_status_is_infra(CRUCIBLE__STATUS__STATUS_WORKER_LOST));
    cr_assert(cr_status_is_infra(CRUCIBLE__STATUS__STATUS_INFRA_ERROR));
    cr_assert(cr_status_is_infra(CRUCIBLE__STATUS__STATUS_CANCELLED));
    cr_assert_not(cr_status_is_infra(CRUCIBLE__STATUS__STATUS_TIMEOUT));
    cr_assert_not(cr_status_is_infra(CRUCIBLE__STATUS__STATUS_INCORRECT));
}

Test(record, json_round_trip_of_a_full_record)
{
    Crucible__RewardRecord *r = s_full_record();
    char *json = cr_record_to_json(r);
    cr_assert_not_null(json);
    cr_assert_null(strchr(json, '\n'), "a JSONL line must not contain a newline");
    cr_assert(strstr(json, "\"status\":\"HACK_DETECTED\""), "%s", json);
    cr_assert(strstr(json, "\"profile\":{\"cases\":[{"), "%s", json);
    cr_assert(strstr(json, "\"hack_flags\":[\""), "%s", json);
    cr_assert(strstr(json, "\"components\":{\"formula\":"), "%s", json);
    Crucible__RewardRecord *back = NULL;
    char err[256] = "";
    cr_assert_eq(cr_record_from_json(json, &back, err, sizeof err), 0, "%s", err);
    s_assert_same(r, back);
    char *again = cr_record_to_json(back);
    cr_assert_str_eq(json, again);
    free(again);
    free(json);
    crucible__reward_record__free_unpacked(back, NULL);
    crucible__reward_record__free_unpacked(r, NULL);
}

Test(record, json_of_a_sparse_record_keeps_absent_parts_absent)
{
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    r.job_id = "t/x.c";
    r.status = CRUCIBLE__STATUS__STATUS_CANCELLED;
    char *json = cr_record_to_json(&r);
    cr_assert(strstr(json, "\"profile\":null"), "%s", json);
    Crucible__RewardRecord *back = NULL;
    char err[256];
    cr_assert_eq(cr_record_from_json(json, &back, err, sizeof err), 0, "%s", err);
    cr_assert_null(back->profile);
    cr_assert_str_eq(back->job_id, "t/x.c");
    cr_assert_eq(back->status, CRUCIBLE__STATUS__STATUS_CANCELLED);
    free(json);
    crucible__reward_record__free_unpacked(back, NULL);
    /* a line with only some keys: the rest keep their defaults */
    cr_assert_eq(cr_record_from_json("{\"job_id\":\"a\",\"seq\":4}", &back, err, sizeof err), 0);
    cr_assert_eq(back->seq, 4);
    cr_assert_str_eq(back->task, "");
    crucible__reward_record__free_unpacked(back, NULL);
}

Test(record, json_errors_name_the_field)
{
    static const char *const bad[][2] = {
        {"{\"seq\":\"x\"}", "seq"},
        {"{\"status\":\"GREAT\"}", "status"},
        {"{\"profile\":{\"cases\":[{\"median_us\":1},{\"median_us\":\"a\"}]}}",
         "profile.cases[1].median_us"},
        {"{\"hack_flags\":\"x\"}", "hack_flags"},
        {"{\"compile\":{\"ok\":1}}", "compile.ok"},
        {"[1,2]", "record"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Crucible__RewardRecord *r = (void *)1;
        char err[256] = "";
        cr_assert_eq(cr_record_from_json(bad[i][0], &r, err, sizeof err), CR_E_JSON, "%s",
                     bad[i][0]);
        cr_assert_null(r);
        cr_assert(strstr(err, bad[i][1]), "'%s' does not name %s", err, bad[i][1]);
    }
    Crucible__RewardRecord *r = NULL;
    char err[256];
    cr_assert_eq(cr_record_from_json("{\"seq\":", &r, err, sizeof err), CR_E_JSON);
}

Test(record, invalid_utf8_still_gives_valid_json)
{
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    r.message = "bad \xff\xfe bytes \xc3";
    char *json = cr_record_to_json(&r);
    cr_assert_not_null(json);
    Crucible__RewardRecord *back = NULL;
    char err[256];
    cr_assert_eq(cr_record_from_json(json, &back, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(back->message, "bad ?? bytes ?");
    free(json);
    crucible__reward_record__free_unpacked(back, NULL);
}

/* Splits one RFC 4180 record starting at *p into fields; returns the count. */
static int s_csv_parse(const char **p, char fields[][256], int max)
{
    int n = 0;
    const char *s = *p;
    for (;;) {
        char *o = fields[n];
        size_t k = 0;
        if (*s == '"') {
            s++;
            for (;;) {
                if (*s == '"' && s[1] == '"') {
                    o[k++] = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    o[k++] = *s++;
                }
            }
        } else {
            while (*s && *s != ',' && *s != '\r' && *s != '\n')
                o[k++] = *s++;
        }
        o[k] = '\0';
        n++;
        if (*s == ',' && n < max) {
            s++;
            continue;
        }
        if (*s == '\r')
            s++;
        if (*s == '\n')
            s++;
        break;
    }
    *p = s;
    return n;
}

Test(record, csv_quotes_commas_quotes_and_newlines)
{
    Crucible__RewardRecord *r = s_full_record();
    r->status = CRUCIBLE__STATUS__STATUS_OK;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_record_csv_header(f);
    cr_record_csv_row(f, r);
    fclose(f);
    char head[32][256], row[32][256];
    const char *p = buf;
    int nh = s_csv_parse(&p, head, 32);
    int nr = s_csv_parse(&p, row, 32);
    cr_assert_eq(nh, 19);
    cr_assert_eq(nr, nh, "row has %d fields, header %d", nr, nh);
    cr_assert_eq(*p, '\0');
    for (int i = 0; i < nh; i++) {
        if (strcmp(head[i], "message") == 0)
            cr_assert_str_eq(row[i], r->message);
        if (strcmp(head[i], "job_id") == 0)
            cr_assert_str_eq(row[i], r->job_id);
        if (strcmp(head[i], "status") == 0)
            cr_assert_str_eq(row[i], "OK");
        if (strcmp(head[i], "hack_flags") == 0) {
            char want[256];
            snprintf(want, sizeof want, "%s|%s", r->hack_flags[0], r->hack_flags[1]);
            cr_assert_str_eq(row[i], want);
        }
        if (strcmp(head[i], "median_us") == 0)
            cr_assert_eq(strtod(row[i], NULL), r->profile->cases[0]->median_us);
        if (strcmp(head[i], "seq") == 0)
            cr_assert_eq(strtoull(row[i], NULL, 10), r->seq);
    }
    free(buf);
    crucible__reward_record__free_unpacked(r, NULL);
}

Test(record, delimited_protobuf_reads_back)
{
    Crucible__RewardRecord *r = s_full_record();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(cr_record_write_delimited(f, r), 0);
    cr_assert_eq(cr_record_write_delimited(f, r), 0);
    fclose(f);
    const uint8_t *p = (const uint8_t *)buf;
    for (int rep = 0; rep < 2; rep++) {
        uint64_t n = 0;
        int shift = 0;
        while (*p & 0x80) {
            n |= (uint64_t)(*p++ & 0x7f) << shift;
            shift += 7;
        }
        n |= (uint64_t)*p++ << shift;
        Crucible__RewardRecord *back = NULL;
        cr_assert_eq(cr_wire_record_unpack(p, n, &back), 0);
        s_assert_same(r, back);
        crucible__reward_record__free_unpacked(back, NULL);
        p += n;
    }
    cr_assert_eq((size_t)(p - (const uint8_t *)buf), len);
    free(buf);
    crucible__reward_record__free_unpacked(r, NULL);
}

/* ---- rewards ---- */

static Crucible__RewardRecord *s_rec(int status, double speedup, int nflags)
{
    Crucible__RewardRecord *r = malloc(sizeof *r);
    crucible__reward_record__init(r);
    r->status = status;
    if (speedup > 0) {
        r->profile = malloc(sizeof *r->profile);
        crucible__profile_result__init(r->profile);
        r->profile->speedup_geomean = speedup;
    }
    if (nflags) {
        r->n_hack_flags = (size_t)nflags;
        r->hack_flags = calloc((size_t)nflags, sizeof(char *));
        for (int i = 0; i < nflags; i++)
            r->hack_flags[i] = strdup("input_modified");
    }
    return r;
}

/* Applies formula and checks has_reward, reward and that the components add up. */
static void s_check(int status, double speedup, int nflags, const char *formula, int has,
                    double want)
{
    Crucible__RewardRecord *r = s_rec(status, speedup, nflags);
    cr_assert_eq(cr_reward_apply(r, formula), 0, "%s", formula);
    cr_assert_eq(r->has_reward, has, "%s %s", formula, cr_status_name(status));
    cr_assert_float_eq(r->reward, want, 1e-9, "%s %s x%g flags %d: %g != %g", formula,
                       cr_status_name(status), speedup, nflags, r->reward, want);
    cr_assert_not_null(r->components);
    cr_assert_not_null(strchr(r->components->formula, '@'));
    if (has)
        cr_assert_float_eq(r->components->correct + r->components->speed - r->components->penalty,
                           r->reward, 1e-12);
    if (nflags)
        cr_assert_float_eq(r->components->speed, 0, 1e-12, "a hack flag zeroes speed");
    /* applying again replaces the components (no leak under ASan) */
    cr_assert_eq(cr_reward_apply(r, formula), 0);
    crucible__reward_record__free_unpacked(r, NULL);
}

Test(reward, formulas_on_every_kind_of_outcome)
{
    const int OK = CRUCIBLE__STATUS__STATUS_OK, BAD = CRUCIBLE__STATUS__STATUS_INCORRECT,
              HACK = CRUCIBLE__STATUS__STATUS_HACK_DETECTED;
    /* default@1: 0.3 + 0.7 * min(s, 4) / 4, gated on OK and no flag */
    s_check(OK, 2.0, 0, NULL, 1, 0.3 + 0.7 * 0.5);
    s_check(OK, 2.0, 0, "default@1", 1, 0.65);
    s_check(OK, 10.0, 0, "default", 1, 1.0);
    s_check(OK, 0.5, 0, "", 1, 0.3 + 0.7 * 0.125);
    s_check(OK, 2.0, 1, "default", 1, 0.0);
    s_check(BAD, 0, 0, "default", 1, 0.0);
    s_check(HACK, 3.0, 2, "default", 1, 0.0);
    s_check(CRUCIBLE__STATUS__STATUS_COMPILE_ERROR, 0, 0, "default", 1, 0.0);
    /* kevin@2: 0.3*correct + speedup*correct */
    s_check(OK, 2.0, 0, "kevin", 1, 2.3);
    s_check(OK, 2.0, 1, "kevin@2", 1, 0.0); /* a hack flag: not correct */
    s_check(OK, 2.0, 1, "drkernel@2", 1, 0.0);
    s_check(BAD, 0, 0, "kevin", 1, 0.0);
    s_check(HACK, 5.0, 1, "kevin", 1, 0.0);
    /* drkernel@2: 0.5*correct + 0.5*min(speedup, 3) */
    s_check(OK, 2.0, 0, "drkernel", 1, 1.5);
    s_check(OK, 5.0, 0, "drkernel", 1, 2.0);
    s_check(BAD, 0, 0, "drkernel", 1, 0.0);
    /* infrastructure outcomes carry no reward under every formula */
    const char *all[] = {"default", "kevin", "drkernel"};
    for (int i = 0; i < 3; i++) {
        s_check(CRUCIBLE__STATUS__STATUS_WORKER_LOST, 0, 0, all[i], 0, 0);
        s_check(CRUCIBLE__STATUS__STATUS_INFRA_ERROR, 0, 0, all[i], 0, 0);
        s_check(CRUCIBLE__STATUS__STATUS_CANCELLED, 0, 0, all[i], 0, 0);
    }
    /* a non-finite speedup earns nothing extra */
    s_check(OK, INFINITY, 0, "default", 1, 0.3);
}

Test(reward, unknown_formula_is_rejected_and_record_untouched)
{
    const char *bad[] = {"nope", "default@2", "kevin@", "default@x", "@1"};
    for (int i = 0; i < 5; i++) {
        Crucible__RewardRecord *r = s_rec(CRUCIBLE__STATUS__STATUS_OK, 2.0, 0);
        r->reward = 42;
        cr_assert_eq(cr_reward_apply(r, bad[i]), CR_E_USAGE, "%s", bad[i]);
        cr_assert_not(cr_reward_known(bad[i]));
        cr_assert_null(r->components);
        cr_assert_float_eq(r->reward, 42, 0);
        crucible__reward_record__free_unpacked(r, NULL);
    }
    cr_assert(cr_reward_known("default"));
    cr_assert(cr_reward_known("drkernel@2"));
    /* @1 paid the correct term to a flagged record: no longer served */
    cr_assert_not(cr_reward_known("kevin@1"));
    cr_assert_not(cr_reward_known("drkernel@1"));
}

Test(reward, advantages_have_mean_zero)
{
    double r[6] = {0.1, 0.9, 0.4, 123.0, 0.65, 0.3};
    int has[6] = {1, 1, 1, 0, 1, 1};
    double adv[6];
    cr_reward_advantages(r, has, 6, adv);
    double sum = 0, sq = 0;
    for (int i = 0; i < 6; i++) {
        if (has[i]) {
            sum += adv[i];
            sq += adv[i] * adv[i];
        }
    }
    cr_assert_float_eq(sum, 0, 1e-9);
    cr_assert_float_eq(sq / 5, 1.0, 1e-4); /* unit variance up to the 1e-6 guard */
    cr_assert_eq(adv[3], 0, "a member without a reward gets 0");
    cr_assert_gt(adv[1], adv[4]);
    /* a group where everyone scored the same: no signal, all zero */
    double same[3] = {0.5, 0.5, 0.5}, a3[3];
    int h3[3] = {1, 1, 1};
    cr_reward_advantages(same, h3, 3, a3);
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(a3[i], 0, 1e-12);
    int none[3] = {0, 0, 0};
    cr_reward_advantages(same, none, 3, a3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(a3[i], 0);
}

/* `crucible results --format kernelbench`: KernelBench's fields, from the
 * runner's kernelbench part where there is one, else from the status. */
Test(record, kernelbench_fields)
{
    Crucible__RewardRecord r = CRUCIBLE__REWARD_RECORD__INIT;
    r.job_id = "t/c.py";
    r.task = "t";
    r.status = CRUCIBLE__STATUS__STATUS_COMPILE_ERROR;
    r.message = "compile error: error: expected ';'";
    char *s = cr_record_to_kernelbench(&r);
    cr_assert_not_null(s);
    json_t *o = json_loads(s, 0, NULL);
    cr_assert_not_null(o, "%s", s);
    cr_expect(json_is_false(json_object_get(o, "compiled")), "%s", s);
    cr_expect(json_is_false(json_object_get(o, "correctness")), "%s", s);
    cr_expect_float_eq(json_real_value(json_object_get(o, "runtime")), -1.0, 1e-12);
    json_t *md = json_object_get(o, "metadata");
    cr_expect_str_eq(json_string_value(json_object_get(md, "compilation_error")), r.message);
    json_decref(o);
    free(s);

    Crucible__KernelBenchResult kb = CRUCIBLE__KERNEL_BENCH_RESULT__INIT;
    double diffs[] = {0.5, 0.0625};
    kb.compiled = 1;
    kb.runtime = 0.25;
    kb.ref_runtime = 0.5;
    kb.correctness_issue = "Output mismatch";
    kb.correctness_trials = "(3 / 5)";
    kb.max_difference = diffs;
    kb.n_max_difference = 2;
    r.kernelbench = &kb;
    r.status = CRUCIBLE__STATUS__STATUS_INCORRECT;
    r.message = "case 3: output differs";
    s = cr_record_to_kernelbench(&r);
    o = json_loads(s, 0, NULL);
    cr_assert_not_null(o, "%s", s);
    cr_expect(json_is_true(json_object_get(o, "compiled")), "%s", s);
    cr_expect(json_is_false(json_object_get(o, "correctness")), "%s", s);
    cr_expect_float_eq(json_real_value(json_object_get(o, "runtime")), 0.25, 1e-12);
    cr_expect_float_eq(json_real_value(json_object_get(o, "ref_runtime")), 0.5, 1e-12);
    md = json_object_get(o, "metadata");
    cr_expect_str_eq(json_string_value(json_object_get(md, "correctness_issue")),
                     "Output mismatch");
    cr_expect_str_eq(json_string_value(json_object_get(md, "correctness_trials")), "(3 / 5)");
    json_t *d = json_object_get(md, "max_difference");
    cr_expect_eq(json_array_size(d), 2);
    cr_expect_str_eq(json_string_value(json_array_get(d, 0)), "0.500000"); /* KernelBench's %.6f */
    cr_expect_str_eq(json_string_value(json_object_get(o, "status")), "INCORRECT");
    json_decref(o);
    free(s);
}
