import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over the last dimension, returned expanded back to the input's shape (a view with
    stride 0 along the last dimension)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1, keepdim=True).expand(-1, x.shape[1])


batch_size = 32
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
