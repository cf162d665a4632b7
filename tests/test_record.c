#include <criterion/criterion.h>
Test(placeholder, todo) { cr_skip_test("not written yet"); }
