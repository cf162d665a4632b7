import torch
import torch.nn as nn

import math


class ModelNew(nn.Module):
    """Wrong: forgets the 1/sqrt(d) scale."""

    def __init__(self, d_model):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.scale = 1.0 / math.sqrt(d_model)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)), dim=-1)
        return self.out(torch.matmul(att, v))
