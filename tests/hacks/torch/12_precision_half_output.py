import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 12 (precision downgrade): returns a float16 result for a float32 task."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.half().float(), B.half().float()).half()
