/* test_kept.c — the serving judge's bookkeeping of what it keeps between
 * jobs (worker/runner/kept.c): which kept reference executor a job takes,
 * which one a full set ends, when a changed object's executor is handed
 * back stale, and the settings read from the environment. Items are plain
 * integers' addresses: the set never looks at them. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include "../worker/runner/kept.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_item[CR_KEPT_MAX + 4];

/* A file identity: inode ino, modified at second mt. */
static struct stat s_st(int ino, int mt)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_dev = 1;
    st.st_ino = (ino_t)ino;
    st.st_size = 4096;
    st.st_mtim.tv_sec = mt;
    return st;
}

static void *s_take(cr_kept_t *k, const char *path, int ino, int mt, void **stale)
{
    struct stat now = s_st(ino, mt), got;
    return cr_kept_take(k, path, &now, &got, stale);
}

static void s_put(cr_kept_t *k, int i, const char *path, int ino, void **evicted)
{
    struct stat st = s_st(ino, 0);
    cr_assert_eq(cr_kept_put(k, &s_item[i], path, &st, evicted), 0);
}

Test(kept, one_kept_is_session_14s_design)
{
    cr_kept_t k;
    cr_kept_init(&k, 1);
    void *ev, *stale;
    s_put(&k, 0, "/o/a.so", 10, &ev);
    cr_assert_null(ev);
    /* a job of another reference finds nothing and leaves a's kept ... */
    cr_assert_null(s_take(&k, "/o/b.so", 11, 0, &stale));
    cr_assert_null(stale);
    cr_assert_eq(cr_kept_count(&k), 1);
    /* ... until its own is kept in a's place */
    s_put(&k, 1, "/o/b.so", 11, &ev);
    cr_assert_eq(ev, &s_item[0]);
    cr_assert_eq(s_take(&k, "/o/b.so", 11, 0, &stale), &s_item[1]);
    cr_assert_eq(cr_kept_count(&k), 0);
}

Test(kept, a_switch_back_costs_nothing_and_the_least_recent_goes)
{
    cr_kept_t k;
    cr_kept_init(&k, 3);
    void *ev, *stale;
    const char *p[4] = {"/o/a.so", "/o/b.so", "/o/c.so", "/o/d.so"};
    for (int i = 0; i < 3; i++) {
        s_put(&k, i, p[i], 10 + i, &ev);
        cr_assert_null(ev);
    }
    /* a is used again: taken and put back, now the most recent */
    cr_assert_eq(s_take(&k, p[0], 10, 0, &stale), &s_item[0]);
    cr_assert_null(stale);
    cr_assert_eq(cr_kept_count(&k), 2);
    s_put(&k, 0, p[0], 10, &ev);
    cr_assert_null(ev);
    /* d is new: the set is full, b (least recently put) is ended */
    s_put(&k, 3, p[3], 13, &ev);
    cr_assert_eq(ev, &s_item[1]);
    cr_assert_null(s_take(&k, p[1], 11, 0, &stale));
    cr_assert_eq(s_take(&k, p[2], 12, 0, &stale), &s_item[2]);
    cr_assert_eq(s_take(&k, p[0], 10, 0, &stale), &s_item[0]);
    cr_assert_eq(s_take(&k, p[3], 13, 0, &stale), &s_item[3]);
    cr_assert_eq(cr_kept_count(&k), 0);
}

Test(kept, a_changed_object_hands_back_its_executor_stale)
{
    cr_kept_t k;
    cr_kept_init(&k, 4);
    void *ev, *stale;
    s_put(&k, 0, "/o/a.so", 10, &ev);
    s_put(&k, 1, "/o/b.so", 11, &ev);
    /* a rebuilt in place: another inode, or the same one modified */
    cr_assert_null(s_take(&k, "/o/a.so", 20, 0, &stale));
    cr_assert_eq(stale, &s_item[0]);
    s_put(&k, 0, "/o/a.so", 10, &ev);
    cr_assert_null(s_take(&k, "/o/a.so", 10, 5, &stale));
    cr_assert_eq(stale, &s_item[0]);
    /* gone (stat failed) */
    s_put(&k, 0, "/o/a.so", 10, &ev);
    struct stat got;
    cr_assert_null(cr_kept_take(&k, "/o/a.so", NULL, &got, &stale));
    cr_assert_eq(stale, &s_item[0]);
    /* b untouched throughout, and its identity comes back with it */
    cr_assert_eq(cr_kept_count(&k), 1);
    struct stat now = s_st(11, 0);
    cr_assert_eq(cr_kept_take(&k, "/o/b.so", &now, &got, &stale), &s_item[1]);
    cr_assert_eq(got.st_ino, 11);
    cr_assert_null(cr_kept_take(&k, NULL, &now, &got, &stale));
    cr_assert_null(stale);
}

Test(kept, one_item_a_path_and_paths_that_do_not_fit)
{
    cr_kept_t k;
    cr_kept_init(&k, 4);
    void *ev;
    s_put(&k, 0, "/o/a.so", 10, &ev);
    s_put(&k, 1, "/o/b.so", 11, &ev);
    s_put(&k, 2, "/o/a.so", 10, &ev); /* a second for a's path: the older one ends */
    cr_assert_eq(ev, &s_item[0]);
    cr_assert_eq(cr_kept_count(&k), 2);
    char *longp = malloc(PATH_MAX + 8);
    memset(longp, 'x', PATH_MAX + 7);
    longp[0] = '/';
    longp[PATH_MAX + 7] = '\0';
    struct stat st = s_st(12, 0);
    cr_assert_eq(cr_kept_put(&k, &s_item[3], longp, &st, &ev), -1);
    cr_assert_null(ev);
    cr_assert_eq(cr_kept_count(&k), 2);
    free(longp);
    /* pop ends them all, least recent first */
    cr_assert_eq(cr_kept_pop(&k), &s_item[1]);
    cr_assert_eq(cr_kept_pop(&k), &s_item[2]);
    cr_assert_null(cr_kept_pop(&k));
}

Test(kept, the_cap_is_clamped_and_a_full_table_still_evicts)
{
    cr_kept_t k;
    cr_kept_init(&k, 0);
    cr_assert_eq(k.cap, 1);
    cr_kept_init(&k, CR_KEPT_MAX + 5);
    cr_assert_eq(k.cap, CR_KEPT_MAX);
    void *ev;
    char path[32];
    for (int i = 0; i < CR_KEPT_MAX + 2; i++) {
        snprintf(path, sizeof path, "/o/%d.so", i);
        s_put(&k, i, path, 100 + i, &ev);
        if (i < CR_KEPT_MAX)
            cr_assert_null(ev);
        else
            cr_assert_eq(ev, &s_item[i - CR_KEPT_MAX]);
    }
    cr_assert_eq(cr_kept_count(&k), CR_KEPT_MAX);
    /* a set never initialised (all zero) keeps one */
    cr_kept_t z;
    memset(&z, 0, sizeof z);
    s_put(&z, 0, "/o/a.so", 10, &ev);
    s_put(&z, 1, "/o/b.so", 11, &ev);
    cr_assert_eq(ev, &s_item[0]);
}

Test(kept, settings_from_the_environment)
{
    unsetenv("CR_TEST_KEPT_SETTING");
    cr_assert_eq(cr_kept_setting("CR_TEST_KEPT_SETTING", 1, 1, 16), 1);
    setenv("CR_TEST_KEPT_SETTING", "", 1);
    cr_assert_eq(cr_kept_setting("CR_TEST_KEPT_SETTING", 1, 1, 16), 1);
    setenv("CR_TEST_KEPT_SETTING", "4", 1);
    cr_assert_eq(cr_kept_setting("CR_TEST_KEPT_SETTING", 1, 1, 16), 4);
    const char *bad[] = {"0", "17", "-2", "3x", "two", " 4"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("CR_TEST_KEPT_SETTING", bad[i], 1);
        cr_assert_eq(cr_kept_setting("CR_TEST_KEPT_SETTING", 2, 1, 16), 2, "'%s'", bad[i]);
    }
    unsetenv("CR_TEST_KEPT_SETTING");
}
