import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void sat_kernel(const float *__restrict__ x, const float *__restrict__ b, float *__restrict__ y,
                           float scale, int64_t n, int cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = tanhf(x[i] * scale + b[i % cols]);
}
torch::Tensor sat_cuda(torch::Tensor x, torch::Tensor b, double scale) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int64_t n = xc.numel();
    sat_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(),
        b.data_ptr<float>(), y.data_ptr<float>(), (float)scale, n, (int)xc.size(-1));
    return y;
}
"""

cpp_source = "torch::Tensor sat_cuda(torch::Tensor x, torch::Tensor b, double scale);"

ext = load_inline(name="crucible_sat_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["sat_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: scale, bias and tanh in one CUDA kernel."""

    def __init__(self, features, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x):
        return ext.sat_cuda(x, self.bias, self.scale)
