import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 17 (fork): forks a helper process. The sandbox traps it."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        if os.fork() == 0:
            os._exit(0)
        return torch.relu(x)
