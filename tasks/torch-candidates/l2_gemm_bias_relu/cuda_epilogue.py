import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void bias_relu_kernel(float *__restrict__ y, const float *__restrict__ b, int64_t n, int cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { float v = y[i] + b[i % cols]; y[i] = v > 0.f ? v : 0.f; }
}
torch::Tensor linear_relu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto y = torch::mm(x, w.t());   // cuBLAS for the GEMM, our epilogue fused after it
    int64_t n = y.numel();
    bias_relu_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>(),
        b.data_ptr<float>(), n, (int)y.size(1));
    return y;
}
"""

cpp_source = "torch::Tensor linear_relu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(name="crucible_bias_relu_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["linear_relu_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: cuBLAS GEMM with a fused bias+ReLU epilogue kernel."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu_cuda(x, self.linear.weight, self.linear.bias)
