import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

// at::addmm for the GEMM, then the ReLU in place on its fresh output
torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto y = at::addmm(b, x, w.t());
    float *p = y.data_ptr<float>();
    const int64_t n = y.numel();
    for (int64_t i = 0; i < n; i++)
        p[i] = p[i] > 0.f ? p[i] : 0.f;
    return y;
}
"""

ext = load_inline(name="crucible_linear_relu_cpu", cpp_sources=cpp_source,
                  functions=["linear_relu"], verbose=False)


class ModelNew(nn.Module):
    """Honest: addmm and a fused ReLU loop in C++ (CPU)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu(x, self.linear.weight, self.linear.bias)
