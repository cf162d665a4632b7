import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 8 (background thread): starts a thread to finish the work after the call
    returns. A CPU task allows no threads: the sandbox traps the clone."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.zeros_like(x)

        def work():
            torch.relu(x, out=y)
        threading.Thread(target=work, daemon=True).start()
        return y
