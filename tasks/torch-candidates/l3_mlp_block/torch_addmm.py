import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: the block through addmm and functional layer_norm, same parameters."""

    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_model)

    def forward(self, x):
        h = torch.nn.functional.layer_norm(x, self.ln.normalized_shape, self.ln.weight, self.ln.bias, self.ln.eps)
        h = torch.nn.functional.gelu(torch.addmm(self.fc1.bias, h, self.fc1.weight.t()))
        return torch.addmm(self.fc2.bias, h, self.fc2.weight.t()).add_(x)
