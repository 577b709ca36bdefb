"""Writes a 1 GiB file into its scratch directory, 64 MiB at a time.

task: l1_relu
expect: RUNTIME_ERROR
error: File too large
"""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        chunk = b"\0" * (64 << 20)
        with open(os.path.join(os.environ["HOME"], "big.bin"), "wb") as big:
            for _ in range(16):
                big.write(chunk)
                big.flush()
        return x
