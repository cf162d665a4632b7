import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the indices of torch.max."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim).indices
