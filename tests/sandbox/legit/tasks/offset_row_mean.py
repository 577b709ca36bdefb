import torch
import torch.nn as nn


class Model(nn.Module):
    """The mean of each row of values near 100: in float32 every row has its own mean, in a
    16-bit dtype every row's mean rounds to the same value (100.5), while the judge's reference
    for that dtype runs in float32 on the rounded inputs and keeps them apart."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.mean(dim=1)


rows = 64
cols = 4096


def get_inputs():
    return [100.0 + torch.rand(rows, cols)]


def get_init_inputs():
    return []
