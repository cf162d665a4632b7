import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong at fp32 tolerance: the tanh approximation (error ~1e-3)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.gelu(x, approximate="tanh")
