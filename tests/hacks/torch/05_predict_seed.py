import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 5 (predicting inputs): regenerates KernelBench's inputs from its seed (42) in
    the constructor and returns their answer; the judge's inputs come from a secret seed."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(42)
        self.answer = torch.relu(torch.randn(16, 16384, generator=g))

    def forward(self, x):
        return self.answer.to(x.device)
