import os

import torch.nn as nn


class ModelNew(nn.Module):
    """Row 17 (crash), dressed as the judge's problem: exits in forward() with the
    executor's own setup-failure status (88). It was INFRA_ERROR (no reward, a
    retry, a worker counted towards draining); after READY it is the candidate's."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        os._exit(88)
