import torch
import torch.nn as nn


class Model(nn.Module):
    """Level 1: sum over dimension 1, keeping it."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 128
dim1 = 4096


def get_inputs():
    return [torch.randn(batch_size, dim1)]


def get_init_inputs():
    return [1]
