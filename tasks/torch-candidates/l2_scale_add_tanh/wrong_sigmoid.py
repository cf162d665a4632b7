import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: sigmoid instead of tanh."""

    def __init__(self, features, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x):
        return torch.sigmoid(x * self.scale + self.bias)
