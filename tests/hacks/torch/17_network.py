import socket

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Row 17/11 (network): opens a socket, to report home or fetch an answer."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        return torch.relu(x)
