import torch
import torch.nn as nn


class Model(nn.Module):
    """Values between 1 and 2 times 1.0001: in float32 every value moves, in a 16-bit dtype
    none does (its step there is about 0.001), while the judge's reference for that dtype runs
    in float32 on the rounded inputs and moves them."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 1.0001


rows = 64
cols = 256


def get_inputs():
    return [1.0 + torch.rand(rows, cols)]


def get_init_inputs():
    return []
