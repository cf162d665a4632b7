import torch
import torch.nn as nn


class Model(nn.Module):
    """Level 1: argmax over a dimension (an integer output)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


batch_size = 256
dim1 = 1024


def get_inputs():
    return [torch.randn(batch_size, dim1)]


def get_init_inputs():
    return [1]
