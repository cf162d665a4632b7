import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: the unbiased variance (divides by n - 1), and no bias term."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        mu = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=True, keepdim=True)
        return (x - mu) * torch.rsqrt(var + self.ln.eps) * self.ln.weight
