"""Aborts (SIGABRT), as a failed C++ assertion in an extension would.

task: l1_relu
expect: RUNTIME_ERROR
error: SIGABRT
"""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.abort()
