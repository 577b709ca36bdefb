import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of inputs drawn with torch.rand, as KernelBench's 19_ReLU draws them: every input is
    non-negative, so the output equals the input."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 3000


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
