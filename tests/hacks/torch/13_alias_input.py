import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 13 (output aliasing): returns the input tensor itself."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x
