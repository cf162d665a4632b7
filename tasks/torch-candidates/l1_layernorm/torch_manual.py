import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: mean and variance written out, the same affine parameters."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        mu = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mu) * torch.rsqrt(var + self.ln.eps) * self.ln.weight + self.ln.bias
