import sys

import torch.nn as nn


class ModelNew(nn.Module):
    """Row 14 (calling the reference): builds the reference's Model from wherever the
    harness loaded it. There is none in the candidate's process: it raises."""

    def __init__(self):
        super().__init__()
        ref = sys.modules.get("problem") or sys.modules.get("__main__")
        self.ref = ref.Model()

    def forward(self, x):
        return self.ref(x)
