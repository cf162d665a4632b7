import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Level 3: a transformer MLP block: LayerNorm, Linear, GELU, Linear, residual."""

    def __init__(self, d_model: int, d_hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


batch_size = 32
d_model = 512
d_hidden = 2048


def get_inputs():
    return [torch.randn(batch_size, d_model)]


def get_init_inputs():
    return [d_model, d_hidden]
