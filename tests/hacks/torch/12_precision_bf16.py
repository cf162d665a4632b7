import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 12 (precision downgrade): multiplies in bfloat16 and casts back."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.bfloat16(), B.bfloat16()).float()
