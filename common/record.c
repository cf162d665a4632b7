/* record.c — RewardRecord as text: status names, JSON, CSV, delimited protobuf.
 *
 * JSON is generated from the protobuf-c descriptors rather than written out
 * field by field: every field of RewardRecord and its nested messages gets a
 * key named as in the .proto, and a field added to the .proto appears in the
 * JSONL output and round-trips through cr_record_from_json with no change
 * here. Enums are written by name (Status without its "STATUS_" prefix). */
#include "record.h"

#include "error.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ status */

const char *cr_status_name(int status)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&crucible__status__descriptor, status);
    /* every value is spelled STATUS_<NAME>; the short name is what people read */
    if (!v || status == 0 || strncmp(v->name, "STATUS_", 7) != 0)
        return "UNSPECIFIED";
    return v->name + 7;
}

int cr_status_parse(const char *name, int *out)
{
    char full[64];
    snprintf(full, sizeof full, "STATUS_%s", name);
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value_by_name(&crucible__status__descriptor, full);
    if (!v)
        return CR_E_USAGE;
    *out = v->value;
    return 0;
}

int cr_status_is_infra(int status)
{
    return status == CRUCIBLE__STATUS__STATUS_WORKER_LOST ||
           status == CRUCIBLE__STATUS__STATUS_INFRA_ERROR ||
           status == CRUCIBLE__STATUS__STATUS_CANCELLED;
}

/* ------------------------------------------------------------ JSON writing */

/* Bytes of one element of a field of type t, as protobuf-c lays out repeated fields. */
static size_t s_elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM: return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return 8;
    case PROTOBUF_C_TYPE_FLOAT: return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE: return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    }
    return 0;
}

static int s_is_status(const ProtobufCFieldDescriptor *f)
{
    return f->descriptor == &crucible__status__descriptor;
}

/* A JSON string from bytes that may not be UTF-8 (compiler logs, candidate
 * messages): invalid bytes become '?', so the line stays valid JSON. */
static json_t *s_string(const char *s)
{
    if (!s)
        s = "";
    json_t *j = json_string(s);
    if (j)
        return j;
    size_t n = strlen(s);
    char *c = malloc(n + 1);
    if (!c)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = (unsigned char)s[i];
        size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        int ok = len > 0 && i + len <= n;
        for (size_t m = 1; ok && m < len; m++)
            ok = ((unsigned char)s[i + m] >> 6) == 2;
        if (!ok) {
            c[k++] = '?';
            i++;
        } else {
            memcpy(c + k, s + i, len);
            k += len;
            i += len;
        }
    }
    j = json_stringn(c, k);
    if (!j) { /* overlong forms or surrogates slipped through: keep ASCII only */
        for (size_t i = 0; i < k; i++)
            if ((unsigned char)c[i] >= 0x80)
                c[i] = '?';
        j = json_stringn(c, k);
    }
    free(c);
    return j;
}

static json_t *s_msg_to_json(const ProtobufCMessage *m);

/* One value of field f stored at p. NULL on ENOMEM. */
static json_t *s_value_to_json(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: return json_integer(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: return json_integer(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: return json_integer(*(const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return json_integer((json_int_t) * (const uint64_t *)p);
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        double d = f->type == PROTOBUF_C_TYPE_FLOAT ? *(const float *)p : *(const double *)p;
        return isfinite(d) ? json_real(d) : json_null(); /* JSON has no NaN/Inf */
    }
    case PROTOBUF_C_TYPE_BOOL: return json_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM: {
        int v = *(const int *)p;
        if (s_is_status(f))
            return json_string(cr_status_name(v));
        const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
        return ev ? json_string(ev->name) : json_integer(v);
    }
    case PROTOBUF_C_TYPE_STRING: return s_string(*(char *const *)p);
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        char *hex = malloc(b->len * 2 + 1);
        if (!hex)
            return NULL;
        for (size_t i = 0; i < b->len; i++)
            sprintf(hex + 2 * i, "%02x", b->data[i]);
        hex[b->len * 2] = '\0';
        json_t *j = json_string(hex);
        free(hex);
        return j;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)p;
        return sub ? s_msg_to_json(sub) : json_null();
    }
    }
    return json_null();
}

static json_t *s_msg_to_json(const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    json_t *o = json_object();
    if (!o)
        return NULL;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *base = (const char *)m;
        json_t *v;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            const char *arr = *(const char *const *)(base + f->offset);
            v = json_array();
            for (size_t k = 0; v && k < n; k++)
                if (json_array_append_new(v, s_value_to_json(f, arr + k * s_elem_size(f->type))))
                    json_decref(v), v = NULL;
        } else if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
                   *(const uint32_t *)(base + f->quantifier_offset) != f->id) {
            continue; /* another member of the oneof is set */
        } else {
            v = s_value_to_json(f, base + f->offset);
        }
        if (!v || json_object_set_new(o, f->name, v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

char *cr_record_to_json(const Crucible__RewardRecord *rec)
{
    json_t *o = s_msg_to_json(&rec->base);
    if (!o)
        return NULL;
    /* 17 significant digits: a double read back is the double written */
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}

/* ------------------------------------------------------------ JSON reading */

static int s_json_fail(char *err, size_t errlen, const char *path, const char *what)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", path, what);
    return CR_E_JSON;
}

static int s_msg_from_json(json_t *o, const ProtobufCMessageDescriptor *d, ProtobufCMessage **out,
                           const char *path, char *err, size_t errlen);

/* Reads one JSON value j into field f's storage at p; path names it in errors. */
static int s_value_from_json(json_t *j, const ProtobufCFieldDescriptor *f, void *p,
                             const char *path, char *err, size_t errlen)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
        if (!json_is_integer(j))
            return s_json_fail(err, errlen, path, "expected an integer");
        json_int_t v = json_integer_value(j);
        if (s_elem_size(f->type) == 4)
            *(int32_t *)p = (int32_t)v;
        else
            *(int64_t *)p = (int64_t)v;
        return 0;
    }
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        if (!json_is_number(j) && !json_is_null(j))
            return s_json_fail(err, errlen, path, "expected a number");
        double v = json_is_null(j) ? 0 : json_number_value(j); /* null: not finite when written */
        if (f->type == PROTOBUF_C_TYPE_FLOAT)
            *(float *)p = (float)v;
        else
            *(double *)p = v;
        return 0;
    }
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(j))
            return s_json_fail(err, errlen, path, "expected true or false");
        *(protobuf_c_boolean *)p = json_is_true(j);
        return 0;
    case PROTOBUF_C_TYPE_ENUM: {
        if (json_is_integer(j)) {
            *(int *)p = (int)json_integer_value(j);
            return 0;
        }
        const char *s = json_string_value(j);
        int v = 0;
        const ProtobufCEnumValue *ev =
            s ? protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, s) : NULL;
        if (s && s_is_status(f) && cr_status_parse(s, &v) == 0)
            *(int *)p = v;
        else if (ev)
            *(int *)p = ev->value;
        else
            return s_json_fail(err, errlen, path, "unknown enum value");
        return 0;
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = json_string_value(j);
        if (!s)
            return s_json_fail(err, errlen, path, "expected a string");
        char *c = strdup(s);
        if (!c)
            return -ENOMEM;
        *(char **)p = c;
        return 0;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const char *s = json_string_value(j);
        size_t n = s ? strlen(s) : 0;
        if (!s || n % 2)
            return s_json_fail(err, errlen, path, "expected a hex string");
        ProtobufCBinaryData *b = p;
        b->data = malloc(n / 2 + 1);
        if (!b->data)
            return -ENOMEM;
        b->len = 0;
        for (size_t i = 0; i < n; i += 2) {
            unsigned x;
            if (sscanf(s + i, "%2x", &x) != 1)
                return s_json_fail(err, errlen, path, "expected a hex string");
            b->data[b->len++] = (uint8_t)x;
        }
        return 0;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        if (json_is_null(j))
            return 0;
        return s_msg_from_json(j, f->descriptor, (ProtobufCMessage **)p, path, err, errlen);
    }
    return s_json_fail(err, errlen, path, "unsupported field type");
}

/* Builds a message of type d from object o. On failure *out is NULL and any
 * part built is released. */
static int s_msg_from_json(json_t *o, const ProtobufCMessageDescriptor *d, ProtobufCMessage **out,
                           const char *path, char *err, size_t errlen)
{
    *out = NULL;
    if (!json_is_object(o))
        return s_json_fail(err, errlen, path[0] ? path : "record", "expected an object");
    ProtobufCMessage *m = malloc(d->sizeof_message);
    if (!m)
        return -ENOMEM;
    d->message_init(m);
    int rc = 0;
    for (unsigned i = 0; i < d->n_fields && rc == 0; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        json_t *j = json_object_get(o, f->name);
        if (!j || (json_is_null(j) && f->type != PROTOBUF_C_TYPE_DOUBLE))
            continue; /* absent: the field keeps its default */
        char sub[256];
        snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", f->name);
        char *base = (char *)m;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            if (!json_is_array(j)) {
                rc = s_json_fail(err, errlen, sub, "expected an array");
                break;
            }
            size_t n = json_array_size(j), es = s_elem_size(f->type);
            char *arr = calloc(n ? n : 1, es);
            if (!arr) {
                rc = -ENOMEM;
                break;
            }
            size_t *count = (size_t *)(base + f->quantifier_offset);
            *(char **)(base + f->offset) = arr;
            /* count grows only past complete elements, so a failure frees cleanly */
            for (size_t k = 0; k < n && rc == 0; k++) {
                char item[300];
                snprintf(item, sizeof item, "%s[%zu]", sub, k);
                rc = s_value_from_json(json_array_get(j, k), f, arr + k * es, item, err, errlen);
                if (rc == 0)
                    (*count)++;
            }
        } else {
            if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
                *(uint32_t *)(base + f->quantifier_offset) = f->id;
            rc = s_value_from_json(j, f, base + f->offset, sub, err, errlen);
        }
    }
    if (rc != 0) {
        protobuf_c_message_free_unpacked(m, NULL);
        return rc;
    }
    *out = m;
    return 0;
}

int cr_record_from_json(const char *line, Crucible__RewardRecord **out, char *err, size_t errlen)
{
    *out = NULL;
    json_error_t je;
    json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        if (err && errlen)
            snprintf(err, errlen, "column %d: %s", je.column, je.text);
        return CR_E_JSON;
    }
    ProtobufCMessage *m = NULL;
    int rc = s_msg_from_json(o, &crucible__reward_record__descriptor, &m, "", err, errlen);
    json_decref(o);
    if (rc == -ENOMEM)
        return rc;
    if (rc != 0)
        return CR_E_JSON;
    *out = (Crucible__RewardRecord *)m;
    return 0;
}

/* ------------------------------------------------------------------- CSV */

/* One RFC 4180 field: quoted when it holds a comma, quote or line break. */
static void s_csv_field(FILE *f, const char *s, int last)
{
    if (!s)
        s = "";
    if (strpbrk(s, ",\"\r\n")) {
        fputc('"', f);
        for (const char *p = s; *p; p++) {
            if (*p == '"')
                fputc('"', f);
            fputc(*p, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputs(last ? "\r\n" : ",", f);
}

/* The shortest text that reads back as v, or "" when absent. */
static void s_csv_num(char buf[32], int present, double v)
{
    buf[0] = '\0';
    for (int prec = 1; present && prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
}

void cr_record_csv_header(FILE *f)
{
    static const char *const cols[] = {
        "batch_id", "job_id", "task", "group_id", "sample_index", "turn", "attempt",
        "seq", "status", "reward", "speedup_geomean", "median_us", "ref_median_us",
        "hack_flags", "compile_s", "cache_hit", "worker_id", "device", "message"};
    size_t n = sizeof cols / sizeof cols[0];
    for (size_t i = 0; i < n; i++)
        s_csv_field(f, cols[i], i + 1 == n);
}

void cr_record_csv_row(FILE *f, const Crucible__RewardRecord *r)
{
    char num[10][32];
    const Crucible__BenchResult *b0 =
        r->profile && r->profile->n_cases ? r->profile->cases[0] : NULL;
    snprintf(num[0], 32, "%u", r->sample_index);
    snprintf(num[1], 32, "%u", r->turn);
    snprintf(num[2], 32, "%u", r->attempt);
    snprintf(num[3], 32, "%llu", (unsigned long long)r->seq);
    /* an absent value is an empty cell (an infra outcome has no reward), not a misleading 0 */
    s_csv_num(num[4], r->has_reward, r->reward);
    s_csv_num(num[5], r->profile != NULL, r->profile ? r->profile->speedup_geomean : 0);
    s_csv_num(num[6], b0 != NULL, b0 ? b0->median_us : 0);
    s_csv_num(num[7], b0 != NULL, b0 ? b0->ref_median_us : 0);
    s_csv_num(num[8], r->compile != NULL, r->compile ? r->compile->seconds : 0);
    snprintf(num[9], 32, "%s", r->compile ? (r->compile->cache_hit ? "1" : "0") : "");

    size_t flen = 1;
    for (size_t i = 0; i < r->n_hack_flags; i++)
        flen += strlen(r->hack_flags[i]) + 1;
    char *flags = malloc(flen);
    if (flags) {
        flags[0] = '\0';
        for (size_t i = 0; i < r->n_hack_flags; i++) {
            if (i)
                strcat(flags, "|");
            strcat(flags, r->hack_flags[i]);
        }
    }
    s_csv_field(f, r->batch_id, 0);
    s_csv_field(f, r->job_id, 0);
    s_csv_field(f, r->task, 0);
    s_csv_field(f, r->group_id, 0);
    for (int i = 0; i < 4; i++)
        s_csv_field(f, num[i], 0);
    s_csv_field(f, cr_status_name(r->status), 0);
    for (int i = 4; i < 8; i++)
        s_csv_field(f, num[i], 0);
    s_csv_field(f, flags ? flags : "", 0);
    s_csv_field(f, num[8], 0);
    s_csv_field(f, num[9], 0);
    s_csv_field(f, r->worker_id, 0);
    s_csv_field(f, r->device, 0);
    s_csv_field(f, r->message, 1);
    free(flags);
}

/* --------------------------------------------------------------- protobuf */

int cr_record_write_delimited(FILE *f, const Crucible__RewardRecord *rec)
{
    size_t n = crucible__reward_record__get_packed_size(rec);
    uint8_t *buf = malloc(n + 10);
    if (!buf)
        return -ENOMEM;
    size_t k = 0;
    for (uint64_t v = n; ; v >>= 7) { /* base-128 varint, low group first */
        buf[k++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    crucible__reward_record__pack(rec, buf + k);
    int rc = fwrite(buf, 1, k + n, f) == k + n ? 0 : -(errno ? errno : EIO);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ KernelBench */

char *cr_record_to_kernelbench(const Crucible__RewardRecord *r)
{
    const Crucible__KernelBenchResult *kb = r->kernelbench;
    const Crucible__BenchResult *br =
        r->profile && r->profile->n_cases ? r->profile->cases[0] : NULL;
    int compile_fail = r->status == CRUCIBLE__STATUS__STATUS_COMPILE_ERROR ||
                       r->status == CRUCIBLE__STATUS__STATUS_COMPILE_TIMEOUT;
    json_t *md = json_object(), *o = json_object();
    if (!md || !o) {
        json_decref(md);
        json_decref(o);
        return NULL;
    }
    const char *msg = r->message ? r->message : "";
    if (compile_fail) {
        json_object_set_new(md, "compilation_error_name",
                            json_string(r->status == CRUCIBLE__STATUS__STATUS_COMPILE_TIMEOUT
                                            ? "TimeoutError" : "CompilationError"));
        json_object_set_new(md, "compilation_error", json_string(msg));
    }
    const char *rt = kb && kb->runtime_error && kb->runtime_error[0] ? kb->runtime_error : NULL;
    if (!rt && (r->status == CRUCIBLE__STATUS__STATUS_RUNTIME_ERROR ||
                r->status == CRUCIBLE__STATUS__STATUS_TIMEOUT ||
                r->status == CRUCIBLE__STATUS__STATUS_CUDA_FAULT ||
                r->status == CRUCIBLE__STATUS__STATUS_OOM))
        rt = msg;
    if (rt)
        json_object_set_new(md, "runtime_error", json_string(rt));
    const char *ci = kb && kb->correctness_issue && kb->correctness_issue[0]
                         ? kb->correctness_issue : NULL;
    if (!ci && (r->status == CRUCIBLE__STATUS__STATUS_INCORRECT ||
                r->status == CRUCIBLE__STATUS__STATUS_HACK_DETECTED))
        ci = msg;
    if (ci)
        json_object_set_new(md, "correctness_issue", json_string(ci));
    if (kb && kb->n_max_difference) {
        json_t *a = json_array();
        for (size_t i = 0; i < kb->n_max_difference; i++) {
            char v[48]; /* KernelBench keeps them as "%.6f" strings */
            snprintf(v, sizeof v, "%.6f", kb->max_difference[i]);
            json_array_append_new(a, json_string(v));
        }
        json_object_set_new(md, "max_difference", a);
    }
    if (kb && kb->correctness_trials && kb->correctness_trials[0])
        json_object_set_new(md, "correctness_trials", json_string(kb->correctness_trials));
    if (kb && kb->excessive_speedup)
        json_object_set_new(md, "excessive_speedup", json_true());
    if (r->device && r->device[0])
        json_object_set_new(md, "hardware", json_string(r->device));
    json_t *flags = json_array();
    for (size_t i = 0; i < r->n_hack_flags; i++)
        json_array_append_new(flags, json_string(r->hack_flags[i]));
    double runtime = kb ? kb->runtime : br && br->samples ? br->mean_us / 1e3 : -1;
    /* without the runner's figures: the reference's median stands in for its mean */
    double ref = kb ? kb->ref_runtime : br && br->ref_median_us > 0 ? br->ref_median_us / 1e3 : -1;
    json_object_set_new(o, "job_id", json_string(r->job_id ? r->job_id : ""));
    json_object_set_new(o, "task", json_string(r->task ? r->task : ""));
    json_object_set_new(o, "compiled", json_boolean(kb ? kb->compiled && !compile_fail
                                                       : !compile_fail));
    json_object_set_new(o, "correctness", json_boolean(r->status == CRUCIBLE__STATUS__STATUS_OK));
    json_object_set_new(o, "runtime", json_real(runtime));
    json_object_set_new(o, "ref_runtime", json_real(ref));
    json_object_set_new(o, "metadata", md);
    json_object_set_new(o, "status", json_string(cr_status_name(r->status)));
    json_object_set_new(o, "hack_flags", flags);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}
