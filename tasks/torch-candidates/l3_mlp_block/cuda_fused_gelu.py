import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void bias_gelu_kernel(float *__restrict__ h, const float *__restrict__ b, int64_t n, int cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { float v = h[i] + b[i % cols]; h[i] = 0.5f * v * (1.f + erff(v * 0.70710678f)); }
}
__global__ void bias_residual_kernel(float *__restrict__ y, const float *__restrict__ b, const float *__restrict__ x,
                                     int64_t n, int cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] += b[i % cols] + x[i];
}
torch::Tensor mlp_cuda(torch::Tensor x, torch::Tensor lw, torch::Tensor lb, double eps,
                       torch::Tensor w1, torch::Tensor b1, torch::Tensor w2, torch::Tensor b2) {
    auto xc = x.contiguous();
    auto h = torch::mm(at::layer_norm(xc, {xc.size(-1)}, lw, lb, eps), w1.t());
    int64_t n = h.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    bias_gelu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(h.data_ptr<float>(), b1.data_ptr<float>(), n, (int)h.size(1));
    auto y = torch::mm(h, w2.t());
    int64_t m = y.numel();
    bias_residual_kernel<<<(m + 255) / 256, 256, 0, stream>>>(y.data_ptr<float>(), b2.data_ptr<float>(),
                                                             xc.data_ptr<float>(), m, (int)y.size(1));
    return y;
}
"""

cpp_source = "torch::Tensor mlp_cuda(torch::Tensor x, torch::Tensor lw, torch::Tensor lb, double eps, torch::Tensor w1, torch::Tensor b1, torch::Tensor w2, torch::Tensor b2);"

ext = load_inline(name="crucible_mlp_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["mlp_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: cuBLAS GEMMs with fused bias+GELU and bias+residual epilogues."""

    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_model)

    def forward(self, x):
        return ext.mlp_cuda(x, self.ln.weight, self.ln.bias, self.ln.eps, self.fc1.weight, self.fc1.bias,
                            self.fc2.weight, self.fc2.bias)
