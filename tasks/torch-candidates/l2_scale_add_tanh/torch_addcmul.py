import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: torch.addcmul-free fused expression, the same bias parameter."""

    def __init__(self, features, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x):
        return torch.tanh(torch.add(self.bias, x, alpha=self.scale))
