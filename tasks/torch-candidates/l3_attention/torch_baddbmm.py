import torch
import torch.nn as nn

import math


class ModelNew(nn.Module):
    """Honest: scores through baddbmm-free bmm with the scale folded into q."""

    def __init__(self, d_model):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.scale = 1.0 / math.sqrt(d_model)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = torch.softmax(torch.bmm(q * self.scale, k.transpose(1, 2)), dim=-1)
        return self.out(torch.bmm(att, v))
