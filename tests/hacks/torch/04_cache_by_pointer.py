import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 4 (caching across calls): remembers answers by the input's address."""

    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        key = x.data_ptr()
        if key not in self.cache:
            self.cache[key] = torch.relu(x).clone()
        return self.cache[key]
