/* docs/hacks.md #13, output aliasing, for vector_add_cuda: copies an input to
 * the output with cudaMemcpyAsync and computes nothing, for a judge whose
 * inputs might make the identity right. a + b is not a (the judge's
 * inputs are signed, varied draws): INCORRECT. */
void solve(const float *a, const float *b, float *c, int n)
{
    (void)b;
    cudaMemcpyAsync(c, a, (size_t)n * sizeof *c, cudaMemcpyDeviceToDevice);
}
