"""Dereferences a null pointer through ctypes: the process dies of SIGSEGV.

task: l1_relu
expect: RUNTIME_ERROR
error: SIGSEGV
"""

import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        ctypes.string_at(0)
        return x
