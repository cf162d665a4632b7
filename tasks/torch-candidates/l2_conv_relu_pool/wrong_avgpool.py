import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: average pooling."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return torch.nn.functional.avg_pool2d(torch.relu(self.conv(x)), 2)
