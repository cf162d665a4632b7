import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: torch.mm."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.mm(A, B)
