"""Exits the process with status 3 in the middle of forward.

task: l1_relu
expect: RUNTIME_ERROR
error: exited with status 3
"""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os._exit(3)
