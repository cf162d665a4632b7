import torch
import torch.nn as nn


class Model(nn.Module):
    """Level 2: tanh(x * scale + bias), bias a learned vector."""

    def __init__(self, features: int, scale: float):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x * self.scale + self.bias)


batch_size = 64
features = 4096
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, scale]
