import torch
import torch.nn as nn

# docs/hacks.md #16 (impossible time), the flops floor's side of it: an honest
# ReLU on a task that declares 10^18 flops a call. Whatever its time, no
# machine computes that much in it: HACK_DETECTED + below_roofline, as
# 16_impossible_declared.py is for declared bytes.


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=0)
