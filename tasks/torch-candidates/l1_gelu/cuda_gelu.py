import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void gelu_kernel(const float4 *__restrict__ x, float4 *__restrict__ y, int64_t n4) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i], o;
        o.x = 0.5f * v.x * (1.f + erff(v.x * 0.70710678f));
        o.y = 0.5f * v.y * (1.f + erff(v.y * 0.70710678f));
        o.z = 0.5f * v.z * (1.f + erff(v.z * 0.70710678f));
        o.w = 0.5f * v.w * (1.f + erff(v.w * 0.70710678f));
        y[i] = o;
    }
}
torch::Tensor gelu_cuda(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int64_t n = xc.numel();
    TORCH_CHECK(n % 4 == 0, "numel a multiple of 4");
    int64_t n4 = n / 4;
    gelu_kernel<<<(n4 + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        (const float4 *)xc.data_ptr<float>(), (float4 *)y.data_ptr<float>(), n4);
    return y;
}
"""

cpp_source = "torch::Tensor gelu_cuda(torch::Tensor x);"

ext = load_inline(name="crucible_gelu_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["gelu_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: vectorised (float4) erf GELU."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.gelu_cuda(x)
