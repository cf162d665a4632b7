/* test_fuzz_regress.c — replays the fuzzers' saved inputs without libFuzzer.
 *
 * Every file under tests/fuzz/regressions/<harness>/ once crashed (or hung)
 * a harness; the seed corpora under tests/fuzz/corpus/<harness>/ are valid
 * inputs. Both go through the harness's own entry point, compiled here by
 * #include under a distinct name, so a fixed bug that comes back fails
 * ctest even where clang and libFuzzer are absent. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLVMFuzzerTestOneInput cr_fuzz_envelope_one
#include "fuzz/fuzz_envelope.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput cr_fuzz_task_one
#include "fuzz/fuzz_task.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput cr_fuzz_record_one
#include "fuzz/fuzz_record.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput cr_fuzz_elfsym_one
#include "fuzz/fuzz_elfsym.c"
#undef LLVMFuzzerTestOneInput

typedef int (*s_entry_fn)(const uint8_t *data, size_t size);

/* Feeds every regular file of CR_TEST_SOURCE_DIR/tests/fuzz/<kind>/<harness>
 * to fn; returns how many were replayed (a missing folder is 0 files). */
static int s_replay(const char *kind, const char *harness, s_entry_fn fn)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/%s/%s", CR_TEST_SOURCE_DIR, kind, harness);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "%s", path);
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        cr_assert_not_null(buf);
        cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len, "%s", path);
        fclose(f);
        cr_log_info("replaying %s (%ld bytes)", path, len);
        cr_assert_eq(fn(buf, (size_t)len), 0, "%s", path);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

Test(fuzz_regress, envelope)
{
    int seeds = s_replay("corpus", "fuzz_envelope", cr_fuzz_envelope_one);
    cr_expect_gt(seeds, 0, "the seed corpus is part of the tree");
    s_replay("regressions", "fuzz_envelope", cr_fuzz_envelope_one);
}

Test(fuzz_regress, task)
{
    int seeds = s_replay("corpus", "fuzz_task", cr_fuzz_task_one);
    cr_expect_gt(seeds, 0, "the seed corpus is part of the tree");
    s_replay("regressions", "fuzz_task", cr_fuzz_task_one);
}

Test(fuzz_regress, record)
{
    int seeds = s_replay("corpus", "fuzz_record", cr_fuzz_record_one);
    cr_expect_gt(seeds, 0, "the seed corpus is part of the tree");
    s_replay("regressions", "fuzz_record", cr_fuzz_record_one);
}

Test(fuzz_regress, elfsym)
{
    int seeds = s_replay("corpus", "fuzz_elfsym", cr_fuzz_elfsym_one);
    cr_expect_gt(seeds, 0, "the seed corpus is part of the tree");
    s_replay("regressions", "fuzz_elfsym", cr_fuzz_elfsym_one);
}
