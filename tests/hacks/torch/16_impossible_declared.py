import torch
import torch.nn as nn

# docs/hacks.md #16 (impossible time), the floor's side of it: an honest ReLU
# on a task that declares 10^15 bytes a call. Whatever its time, no machine
# moves that much in it: HACK_DETECTED + below_roofline. A time below what
# the task's declared traffic allows is the flag, whoever is to blame.


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=0)
