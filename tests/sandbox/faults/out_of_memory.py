"""Allocates 1 GiB after 1 GiB (untouched, so the host is not actually filled) until the
allocation fails, then reports how far it got.

task: l1_relu
expect: RUNTIME_ERROR
error: allocation failed after
"""

import torch
import torch.nn as nn
import torch.utils.deterministic


class ModelNew(nn.Module):
    def forward(self, x):
        torch.utils.deterministic.fill_uninitialized_memory = False
        held = []
        try:
            while len(held) < 256:
                held.append(torch.empty(2**30, dtype=torch.uint8))
        except RuntimeError as error:
            raise MemoryError(f"allocation failed after {len(held)} GiB: {str(error)[:120]}") from error
        return x
