import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: no padding, so the output is smaller (a shape mismatch)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return torch.nn.functional.conv2d(x, self.conv.weight, self.conv.bias)
