/* docs/hacks.md #13, output aliasing with an in/out parameter: leaves y as it
 * came in, i.e. returns the input as the answer, hoping an in-place
 * parameter is only checked for being "written". The judge cannot poison an
 * inout buffer, so it compares values against the reference: INCORRECT. */
void solve(int n, float alpha, const float *x, float *y)
{
    (void)n, (void)alpha, (void)x, (void)y;
}
