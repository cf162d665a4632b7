import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: conv2d, relu_ in place on the conv's own output, max_pool2d."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        y = torch.nn.functional.conv2d(x, self.conv.weight, self.conv.bias, padding=1)
        return torch.nn.functional.max_pool2d(y.relu_(), 2)
