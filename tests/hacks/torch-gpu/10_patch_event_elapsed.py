import torch
import torch.nn as nn

# Row 10 (timer tampering): every CUDA event now says the call took a microsecond, and
# synchronize returns at once. The harness holds its own references to them from
# before any client code ran: nothing it calls is patched.
torch.cuda.Event.elapsed_time = lambda self, other: 0.001
torch.cuda.synchronize = lambda *a, **k: None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.mm(A, B)
