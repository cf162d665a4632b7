import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor rowsum(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "2-D float32 CPU");
    auto xc = x.contiguous();
    int64_t rows = xc.size(0), cols = xc.size(1);
    auto y = torch::empty({rows, 1}, xc.options());
    const float *in = xc.data_ptr<float>();
    float *out = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; r++) {
        double acc = 0.0;  /* double: as exact as torch's pairwise sum */
        for (int64_t c = 0; c < cols; c++)
            acc += in[r * cols + c];
        out[r] = (float)acc;
    }
    return y;
}
"""

ext = load_inline(name="crucible_rowsum_cpu", cpp_sources=cpp_source, functions=["rowsum"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    """Honest: a C++ row sum (CPU), accumulated in double."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.rowsum(x)
