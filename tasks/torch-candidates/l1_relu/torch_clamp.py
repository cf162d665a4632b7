import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the same result through clamp_min."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
