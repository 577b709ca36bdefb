import torch
import torch.nn as nn


class Model(nn.Module):
    """A GEMM, minus 2.5, ReLU: with inputs in [0, 1) and nn.Linear's initialisation the sums
    stay far below 2.5, so the output is 0 at the task's scale and only larger inputs show
    anything (as in KernelBench's level-2 problem 9)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.gemm(x) - 2.5)


batch_size = 48
in_features = 72
out_features = 40


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
