import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 7 (side-stream work): the GEMM runs on another stream and nothing waits for it,
    so the harness's events on the current stream see an empty call. The judge counts the
    call by its own wall clock, less the harness's cost: no faster than honest."""

    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, A, B):
        with torch.cuda.stream(self.side):
            return torch.mm(A, B)
