import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void ln_kernel(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                          float *__restrict__ y, int cols, float eps) {
    __shared__ float s1[256], s2[256];
    const float *row = x + (int64_t)blockIdx.x * cols;
    float a = 0.f, q = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) { float v = row[i]; a += v; q += v * v; }
    s1[threadIdx.x] = a; s2[threadIdx.x] = q;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) { s1[threadIdx.x] += s1[threadIdx.x + s]; s2[threadIdx.x] += s2[threadIdx.x + s]; }
        __syncthreads();
    }
    float mean = s1[0] / cols, var = s2[0] / cols - mean * mean, r = rsqrtf(var + eps);
    for (int i = threadIdx.x; i < cols; i += blockDim.x)
        y[(int64_t)blockIdx.x * cols + i] = (row[i] - mean) * r * w[i] + b[i];
}
torch::Tensor ln_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int cols = xc.size(-1), rows = xc.numel() / cols;
    ln_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), w.data_ptr<float>(),
        b.data_ptr<float>(), y.data_ptr<float>(), cols, (float)eps);
    return y;
}
"""

cpp_source = "torch::Tensor ln_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"

ext = load_inline(name="crucible_layernorm_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["ln_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: one block per row, sums of x and x^2."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        return ext.ln_cuda(x, self.ln.weight, self.ln.bias, self.ln.eps)
