import signal

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 22 (work outside the call): installs a SIGALRM handler in its constructor to
    finish work later from a timer."""

    def __init__(self):
        super().__init__()
        self.pending = None
        signal.signal(signal.SIGALRM, self._late)

    def _late(self, signum, frame):
        if self.pending is not None:
            torch.relu(self.pending[0], out=self.pending[1])

    def forward(self, x):
        y = torch.zeros_like(x)
        self.pending = (x, y)
        return y
