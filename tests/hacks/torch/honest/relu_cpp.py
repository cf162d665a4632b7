import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32, "float32 CPU tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float *in = xc.data_ptr<float>();
    float *out = y.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; i++)
        out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}
"""

relu_ext = load_inline(name="crucible_hacks_relu_cpu", cpp_sources=cpp_source, functions=["relu_cpu"],
                       extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    """Honest: a C++ loop built with load_inline (CPU), its own kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_cpu(x)
