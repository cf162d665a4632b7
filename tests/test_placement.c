/* test_placement.c — worker/placement.c: GPU groups for multi-GPU tasks,
 * NVLink-joined where the matrix says so (docs/multigpu.md). */
#include "placement.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

/* An n x n matrix with the diagonal and the pairs a[i]-b[i] joined. */
static void s_matrix(unsigned char *m, int n, const int *a, const int *b, int npairs)
{
    memset(m, 0, (size_t)n * (size_t)n);
    for (int i = 0; i < n; i++)
        m[i * n + i] = 1;
    for (int k = 0; k < npairs; k++)
        m[a[k] * n + b[k]] = m[b[k] * n + a[k]] = 1;
}

Test(placement, pairs_follow_nvlink)
{
    /* 0-2 and 1-3 joined (as on boards that pair GPUs across switches): not 0-1 */
    unsigned char m[16];
    int a[] = {0, 1}, b[] = {2, 3}, g[4], nv[2];
    char err[200];
    s_matrix(m, 4, a, b, 2);
    cr_assert_eq(cr_placement_groups(4, 2, m, g, nv, err, sizeof err), 2);
    int want[4] = {0, 2, 1, 3};
    cr_assert_arr_eq(g, want, sizeof want);
    cr_assert(nv[0] && nv[1]);
}

Test(placement, fully_joined_node_groups_in_order)
{
    unsigned char m[64];
    memset(m, 1, sizeof m); /* an HGX board: NVSwitch joins every pair */
    int g[8], nv[2];
    char err[200];
    cr_assert_eq(cr_placement_groups(8, 4, m, g, nv, err, sizeof err), 2);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(g[i], i);
    cr_assert(nv[0] && nv[1]);
    cr_assert_eq(cr_placement_groups(8, 8, m, g, nv, err, sizeof err), 1);
    cr_assert_eq(cr_placement_groups(8, 1, m, g, nv, err, sizeof err), 8);
}

Test(placement, no_nvlink_is_said_not_hidden)
{
    unsigned char m[16];
    int a[] = {2}, b[] = {3}, g[4], nv[2];
    char err[200];
    s_matrix(m, 4, a, b, 1); /* only 2-3 joined: 0 and 1 go over PCIe */
    cr_assert_eq(cr_placement_groups(4, 2, m, g, nv, err, sizeof err), 2);
    int want[4] = {0, 1, 2, 3};
    cr_assert_arr_eq(g, want, sizeof want);
    cr_assert(!nv[0], "0-1 is not NVLink");
    cr_assert(nv[1]);
    /* three GPUs where 0-1 and 1-2 are joined but not 0-2: a group of three is not all NVLink */
    unsigned char m3[9];
    int a3[] = {0, 1}, b3[] = {1, 2}, g3[3], nv3[1];
    s_matrix(m3, 3, a3, b3, 2);
    cr_assert_eq(cr_placement_groups(3, 3, m3, g3, nv3, err, sizeof err), 1);
    cr_assert(!nv3[0]);
}

Test(placement, groups_that_do_not_divide_are_refused)
{
    unsigned char m[9];
    memset(m, 1, sizeof m);
    int g[3], nv[3];
    char err[200] = "";
    cr_assert_eq(cr_placement_groups(3, 2, m, g, nv, err, sizeof err), -EINVAL);
    cr_assert(strstr(err, "3 GPUs cannot be split into groups of 2"), "%s", err);
    cr_assert_eq(cr_placement_groups(1, 2, m, g, nv, err, sizeof err), -EINVAL);
    cr_assert_eq(cr_placement_groups(2, 0, m, g, nv, err, sizeof err), -EINVAL);
}
