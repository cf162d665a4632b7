import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 3 (input mutation): ReLU in place on the input and returns it. The input is a
    view of the judge's read-only arena: the store faults."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.relu_()
