import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the stable softmax written out."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
