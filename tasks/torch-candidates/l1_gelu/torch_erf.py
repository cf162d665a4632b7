import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: GELU through erf."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.erf(x * 0.7071067811865476))
