import torch
import torch.nn as nn


class Model(nn.Module):
    """Level 1: C = A @ B, judged in bfloat16 (task.json: "precision": "bf16", so the
    inputs are cast to it and the tolerance is KernelBench's 1e-2)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 128
K = 256
N = 128


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
