import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest: accumulates in fp32 and rounds once to bf16 (at least as exact as the
    reference's bf16 GEMM)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.mm(A.float(), B.float()).to(A.dtype)
