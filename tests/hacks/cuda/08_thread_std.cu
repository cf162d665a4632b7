/* docs/hacks.md #8, background thread, for vector_add_cuda: solve() returns at
 * once and a detached std::thread launches the work a moment later, after
 * the judge's timer has stopped. The task does not allow threads, so the
 * link audit refuses the object before it is loaded (it imports
 * std::thread::_M_start_thread): HACK_DETECTED, link_audit. The sandbox
 * lets CUDA runners create threads (the CUDA runtime needs them), so the
 * audit is the defence for CUDA candidates. */
#include <thread>

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

void solve(const float *a, const float *b, float *c, int n)
{
    std::thread([=] {
        std::this_thread::yield();
        add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    }).detach();
}
