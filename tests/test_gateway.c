/* test_gateway.c — the gateway's kernel extraction (the cluster-level tests
 * are python/tests/test_gateway.py, registered as test_python_gateway). */
#include "gateway.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char *s_x(const char *text, int c)
{
    char *o = cr_gateway_extract(text, c);
    cr_assert_not_null(o);
    return o;
}

Test(extract, bare_source_is_kept)
{
    char *o = s_x("void solve(float *x) { }\n", 1);
    cr_assert_str_eq(o, "void solve(float *x) { }\n");
    free(o);
}

Test(extract, fenced_block_with_language)
{
    char *o = s_x("Here it is:\n```c\nvoid solve(void) {}\n```\nDone.", 1);
    cr_assert_str_eq(o, "void solve(void) {}\n");
    free(o);
}

Test(extract, last_block_that_defines_solve)
{
    char *o = s_x("```\nint helper;\n```\ntext\n```cuda\n__global__ void k(){}\nvoid solve(){}\n"
                  "```\nand a usage example:\n```\nsolve_it();\n```\n",
                  0);
    cr_assert_str_eq(o, "__global__ void k(){}\nvoid solve(){}\n");
    free(o);
}

Test(extract, last_block_when_none_names_solve)
{
    char *o = s_x("```c\nint a;\n```\n```c\nint b;\n```", 1);
    cr_assert_str_eq(o, "int b;\n");
    free(o);
}

Test(extract, unclosed_fence_runs_to_the_end)
{
    char *o = s_x("```cpp\nvoid solve(){}\n", 1);
    cr_assert_str_eq(o, "void solve(){}\n");
    free(o);
}

Test(extract, extern_c_dropped_for_c_kept_for_cuda)
{
    char *o = s_x("```c\nextern \"C\" void solve(){}\n```", 1);
    cr_assert_str_eq(o, "           void solve(){}\n");
    free(o);
    o = s_x("```cuda\nextern \"C\" void solve(){}\n```", 0);
    cr_assert_str_eq(o, "extern \"C\" void solve(){}\n");
    free(o);
}

Test(extract, tilde_fences_and_indented_fences)
{
    char *o = s_x("~~~c\nvoid solve(){}\n~~~\n   ```\nx\n   ```\n", 1);
    cr_assert_str_eq(o, "void solve(){}\n");
    free(o);
}
