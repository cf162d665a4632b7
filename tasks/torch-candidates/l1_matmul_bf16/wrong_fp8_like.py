import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong even at bf16's tolerance: inputs rounded to 3 significant bits first (an
    fp8-like downgrade)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        def fp8ish(t):
            m, e = torch.frexp(t.float())
            return torch.ldexp(torch.round(m * 8) / 8, e)
        return torch.mm(fp8ish(A), fp8ish(B)).to(A.dtype)
