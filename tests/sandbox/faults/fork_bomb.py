"""A bounded fork bomb: forks children that sleep for an hour (named __TOKEN__ so that the
test can look for survivors) until fork fails or 2000 exist, then reports the count.

task: l1_relu
needs: isolation
expect: RUNTIME_ERROR
error: fork failed after
"""

import ctypes
import os
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        children = 0
        while children < 2000:
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                ctypes.CDLL(None).prctl(15, b"__TOKEN__", 0, 0, 0)
                time.sleep(3600)
                os._exit(0)
            children += 1
        raise RuntimeError(f"fork failed after {children} children")
