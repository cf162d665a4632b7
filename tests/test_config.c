/* test_config.c — walks every row of the settings table. */
#include "config.h"

#include "error.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* A valid value, different from the default, for each text row with a closed
 * set of values; other text rows take any text. A new validated row that is
 * not listed here makes the argv/env walk fail, which is the point. */
static const char *s_text_value(const cr_conf_row_t *r)
{
    static const char *const map[][2] = {
        {"clients-endpoint", "ipc:///tmp/cr-test-c.sock"},
        {"workers-endpoint", "ipc:///tmp/cr-test-w.sock"},
        {"reward", "kevin"},
        {"ref-policy", "cached"},
        {"clock-policy", "lock:1410"},
        {"format", "csv"},
        {"log-level", "debug"},
        {"backends", "c,cuda"},
        {"gpus", "0,2"},
        {"gpu-group", "1,0"},
        {"durability", "normal"},
        {"sample-mode", "single"},
        {"feedback", "json"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i][0], r->name) == 0)
            return map[i][1];
    return "some-text";
}

/* A valid non-default value for any row, as text. */
static void s_good_value(const cr_conf_row_t *r, char *buf, size_t len)
{
    switch (r->type) {
    case CR_CONF_INT: {
        long long v = r->min <= r->max ? (long long)r->max : 7;
        if (v == atoll(r->def))
            v = (long long)r->min;
        snprintf(buf, len, "%lld", v);
        break;
    }
    case CR_CONF_DOUBLE: {
        double v = r->min <= r->max ? r->max : 7.5;
        if (v == atof(r->def))
            v = r->min;
        snprintf(buf, len, "%g", v);
        break;
    }
    case CR_CONF_BOOL: snprintf(buf, len, "%d", atoi(r->def) ? 0 : 1); break;
    case CR_CONF_STR: snprintf(buf, len, "%s", s_text_value(r)); break;
    }
}

static void s_env_name(const cr_conf_row_t *r, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "CRUCIBLE_");
    for (const char *p = r->name; *p && k + 1 < len; p++)
        buf[k++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    buf[k] = '\0';
}

Test(config, table_is_sane)
{
    cr_assert_gt(cr_config_nrows, 20);
    for (size_t i = 0; i < cr_config_nrows; i++) {
        const cr_conf_row_t *r = &cr_config_rows[i];
        cr_assert(r->help && strlen(r->help) > 5, "%s has no help", r->name);
        cr_assert(r->cmds != 0, "%s applies to no command", r->name);
        cr_assert_eq(cr_config_find(r->name), r);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(cr_config_rows[j].name, r->name, "duplicate row");
    }
}

Test(config, defaults_parse_within_bounds)
{
    cr_config_t c;
    cr_config_defaults(&c);
    char buf[CR_CONFIG_STR + 32], err[256];
    for (size_t i = 0; i < cr_config_nrows; i++) {
        const cr_conf_row_t *r = &cr_config_rows[i];
        cr_config_t d = c;
        cr_assert_eq(cr_config_set(&d, r->name, r->def, err, sizeof err), 0, "%s: %s", r->name,
                     err);
        if (r->type != CR_CONF_STR && r->min <= r->max) {
            double v = strtod(cr_config_format(&c, r, buf, sizeof buf), NULL);
            cr_assert(v >= r->min && v <= r->max, "%s default %g out of bounds", r->name, v);
        }
        cr_assert_str_eq(cr_config_format(&c, r, buf, sizeof buf),
                         cr_config_format(&d, r, buf + 160, sizeof buf - 160));
    }
    /* the values the README promises */
    cr_assert_str_eq(c.clients_endpoint, "tcp://127.0.0.1:5555");
    cr_assert_str_eq(c.workers_endpoint, "tcp://127.0.0.1:5556");
    cr_assert_eq(c.queue_limit, 100000);
    cr_assert_eq(c.cpu, -1);
    cr_assert_float_eq(c.time_budget_s, 1.0, 1e-12);
    cr_assert_float_eq(c.rse_target, 0.005, 1e-12);
    cr_assert_str_eq(c.ref_policy, "interleaved");
    cr_assert_eq(c.max_msg, 67108864);
    cr_assert_eq(c.follow, 0);
}

Test(config, every_row_set_by_argv_and_env)
{
    char val[CR_CONFIG_STR], got[CR_CONFIG_STR + 32], err[256], opt[128], env[128];
    for (size_t i = 0; i < cr_config_nrows; i++) {
        const cr_conf_row_t *r = &cr_config_rows[i];
        s_good_value(r, val, sizeof val);
        cr_config_t want;
        cr_config_defaults(&want);
        cr_assert_eq(cr_config_set(&want, r->name, val, err, sizeof err), 0, "%s: %s", r->name,
                     err);
        cr_config_format(&want, r, val, sizeof val); /* canonical text */

        /* --name value and --name=value */
        for (int form = 0; form < 2; form++) {
            cr_config_t c;
            cr_config_defaults(&c);
            char eqopt[CR_CONFIG_STR + 64];
            snprintf(opt, sizeof opt, "--%s", r->name);
            snprintf(eqopt, sizeof eqopt, "--%s=%s", r->name, val);
            /* a flag takes no separate value: "--follow" alone means 1 */
            int flag = r->type == CR_CONF_BOOL;
            char *argv[] = {"pos", form ? eqopt : opt, val, NULL};
            int argc = form || flag ? 2 : 3, npos = -1;
            if (flag && !form)
                cr_assert_str_eq(val, "1");
            cr_assert_eq(cr_config_argv(&c, r->cmds, argc, argv, &npos, err, sizeof err), 0,
                         "%s: %s", r->name, err);
            cr_assert_eq(npos, 1);
            cr_assert_str_eq(cr_config_format(&c, r, got, sizeof got), val, "%s", r->name);
        }
        /* CRUCIBLE_NAME */
        s_env_name(r, env, sizeof env);
        setenv(env, val, 1);
        cr_config_t c;
        cr_config_defaults(&c);
        int rc = cr_config_env(&c, r->cmds, err, sizeof err);
        unsetenv(env);
        cr_assert_eq(rc, 0, "%s: %s", env, err);
        cr_assert_str_eq(cr_config_format(&c, r, got, sizeof got), val, "%s", env);
    }
}

Test(config, bad_numbers_name_the_option)
{
    char err[256], opt[128], env[128];
    for (size_t i = 0; i < cr_config_nrows; i++) {
        const cr_conf_row_t *r = &cr_config_rows[i];
        if (r->type == CR_CONF_STR)
            continue;
        snprintf(opt, sizeof opt, "--%s", r->name);
        const char *bad[3] = {"abc", "12x", NULL};
        char hi[64], lo[64];
        if (r->min <= r->max) {
            snprintf(hi, sizeof hi, "%.0f", r->max + 1 + (r->max > 1 ? r->max : 0));
            snprintf(lo, sizeof lo, "%.0f", r->min - 1 - (r->min < -1 ? -r->min : 0));
            bad[2] = hi;
        }
        for (int k = 0; k < 4; k++) {
            const char *v = k < 3 ? bad[k] : (r->min <= r->max ? lo : NULL);
            if (!v)
                continue;
            cr_config_t c;
            cr_config_defaults(&c);
            char eqopt[192];
            snprintf(eqopt, sizeof eqopt, "%s=%s", opt, v);
            char *argv[] = {eqopt, NULL};
            int npos;
            err[0] = '\0';
            cr_assert_eq(cr_config_argv(&c, r->cmds, 1, argv, &npos, err, sizeof err), CR_E_USAGE,
                         "%s accepted", eqopt);
            cr_assert(strstr(err, opt), "error '%s' does not name %s", err, opt);
            /* the environment is checked the same way, naming the variable */
            s_env_name(r, env, sizeof env);
            setenv(env, v, 1);
            int rc = cr_config_env(&c, r->cmds, err, sizeof err);
            unsetenv(env);
            cr_assert_eq(rc, CR_E_USAGE, "%s=%s accepted", env, v);
            cr_assert(strstr(err, env), "error '%s' does not name %s", err, env);
        }
    }
}

Test(config, bad_text_values_are_refused)
{
    static const char *const bad[][2] = {
        {"ref-policy", "sometimes"}, {"clock-policy", "lock:fast"}, {"clock-policy", "lock:"},
        {"format", "xml"},           {"log-level", "loud"},         {"reward", "nope"},
        {"reward", "default@99"},    {"backends", "c,,cuda"},       {"backends", "rust"},
        {"clients-endpoint", "localhost"},
        {"gpus", "0,,2"},            {"gpus", "1024"},              {"gpus", "some"},
        {"gpus", "0,"},
        {"gpu-group", "0,0"},        {"gpu-group", "0,1,2,3,4,5,6,7,8"}, {"gpu-group", "all"},
        {"gpu-group", "1,"},
    };
    char err[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_config_t c;
        cr_config_defaults(&c);
        cr_assert_eq(cr_config_set(&c, bad[i][0], bad[i][1], err, sizeof err), CR_E_USAGE,
                     "%s=%s accepted", bad[i][0], bad[i][1]);
        cr_assert(strstr(err, bad[i][0]), "%s", err);
    }
    cr_config_t c;
    cr_config_defaults(&c);
    char big[CR_CONFIG_STR + 8];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert_eq(cr_config_set(&c, "db", big, err, sizeof err), CR_E_USAGE);
    cr_assert_eq(cr_config_set(&c, "no-such-option", "1", err, sizeof err), CR_E_USAGE);
}

Test(config, positionals_keep_their_order)
{
    cr_config_t c;
    cr_config_defaults(&c);
    char *argv[] = {"a", "--workers", "3", "b", "--follow", "c", "--wait-s=2.5", "--", "--d", "-",
                    NULL};
    int npos = 0;
    char err[256];
    cr_assert_eq(cr_config_argv(&c, CR_CMD_ALL, 10, argv, &npos, err, sizeof err), 0, "%s", err);
    cr_assert_eq(npos, 5);
    const char *want[] = {"a", "b", "c", "--d", "-"};
    for (int i = 0; i < npos; i++)
        cr_assert_str_eq(argv[i], want[i]);
    cr_assert_eq(c.workers, 3);
    cr_assert_eq(c.follow, 1);
    cr_assert_float_eq(c.wait_s, 2.5, 1e-12);
}

Test(config, argv_errors_and_help)
{
    cr_config_t c;
    cr_config_defaults(&c);
    char err[256];
    int npos;
    char *missing[] = {"--workers", NULL};
    cr_assert_eq(cr_config_argv(&c, CR_CMD_RUN, 1, missing, &npos, err, sizeof err), CR_E_USAGE);
    cr_assert(strstr(err, "--workers") && strstr(err, "missing"), "%s", err);
    char *other[] = {"--db", "x.db", NULL}; /* a coordinator option given to submit */
    cr_assert_eq(cr_config_argv(&c, CR_CMD_SUBMIT, 2, other, &npos, err, sizeof err), CR_E_USAGE);
    cr_assert(strstr(err, "--db"), "%s", err);
    char *unknown[] = {"--frobnicate", NULL};
    cr_assert_eq(cr_config_argv(&c, CR_CMD_ALL, 1, unknown, &npos, err, sizeof err), CR_E_USAGE);
    cr_assert(strstr(err, "--frobnicate"), "%s", err);
    char *help[] = {"x", "--workers", "oops", "--help", NULL};
    cr_assert_eq(cr_config_argv(&c, CR_CMD_RUN, 4, help, &npos, err, sizeof err), 1);
}

Test(config, precedence_default_env_argv)
{
    cr_config_t c;
    cr_config_defaults(&c);
    char err[256];
    setenv("CRUCIBLE_WORKERS", "5", 1);
    setenv("CRUCIBLE_DB", "env.db", 1); /* not a run option: ignored for run */
    int rc = cr_config_env(&c, CR_CMD_RUN, err, sizeof err);
    unsetenv("CRUCIBLE_WORKERS");
    unsetenv("CRUCIBLE_DB");
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_eq(c.workers, 5);
    cr_assert_str_eq(c.db, "crucible.db");
    char *argv[] = {"--workers=7", NULL};
    int npos;
    cr_assert_eq(cr_config_argv(&c, CR_CMD_RUN, 1, argv, &npos, err, sizeof err), 0);
    cr_assert_eq(c.workers, 7);
}

Test(config, help_and_dump_print_every_row_of_a_command)
{
    for (int bit = 0; bit < 9; bit++) {
        unsigned cmd = 1u << bit;
        char *hbuf = NULL, *dbuf = NULL;
        size_t hlen = 0, dlen = 0;
        FILE *h = open_memstream(&hbuf, &hlen);
        FILE *d = open_memstream(&dbuf, &dlen);
        cr_config_t c;
        cr_config_defaults(&c);
        cr_config_help(h, cmd);
        cr_config_dump(d, &c, cmd);
        fclose(h);
        fclose(d);
        for (size_t i = 0; i < cr_config_nrows; i++) {
            const cr_conf_row_t *r = &cr_config_rows[i];
            char opt[128], line[128];
            snprintf(opt, sizeof opt, "--%s ", r->name);
            snprintf(line, sizeof line, "\n%s = ", r->name);
            char *dd = NULL;
            size_t n = strlen(dbuf) + 2;
            dd = malloc(n);
            snprintf(dd, n, "\n%s", dbuf);
            int in_help = strstr(hbuf, opt) != NULL, in_dump = strstr(dd, line) != NULL;
            free(dd);
            int want = (r->cmds & cmd) != 0;
            cr_assert_eq(in_help, want, "cmd bit %d: --%s in help: %d", bit, r->name, in_help);
            cr_assert_eq(in_dump, want, "cmd bit %d: %s in dump: %d", bit, r->name, in_dump);
            if (want)
                cr_assert(strstr(hbuf, r->help), "help for %s missing", r->name);
        }
        free(hbuf);
        free(dbuf);
    }
}
