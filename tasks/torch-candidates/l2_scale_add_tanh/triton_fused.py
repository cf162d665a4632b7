import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sat_kernel(x_ptr, b_ptr, y_ptr, scale, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs % cols, mask=mask)
    v = x * scale + b
    e = tl.exp(-2.0 * tl.abs(v))
    t = (1.0 - e) / (1.0 + e)
    tl.store(y_ptr + offs, tl.where(v >= 0, t, -t), mask=mask)


class ModelNew(nn.Module):
    """Honest: a Triton tanh(x*scale+b) (tanh from exp, stable for large |v|)."""

    def __init__(self, features, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        sat_kernel[(triton.cdiv(n, 1024),)](x, self.bias, y, self.scale, n, x.shape[-1], BLOCK=1024)
        return y
