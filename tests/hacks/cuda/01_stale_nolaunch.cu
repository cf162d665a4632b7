/* docs/hacks.md #1, stale output, for vector_add_cuda: returns without touching
 * the output, hoping it still holds an answer from an earlier run or from
 * the reference. The judge poisons every output before each call and runs
 * the reference afterwards in buffers of its own, so nothing is there:
 * INCORRECT, output_unwritten. (No kernel ran either, but with wrong
 * outputs that is the honest verdict's business: no_kernel_launched is for
 * right answers reached without a kernel, 15_decoy_host_compute.cu.) */
void solve(const float *a, const float *b, float *c, int n)
{
    (void)a;
    (void)b;
    (void)c;
    (void)n;
}
