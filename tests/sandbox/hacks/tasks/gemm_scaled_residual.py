import torch
import torch.nn as nn


class Model(nn.Module):
    """A GEMM whose result is scaled and added back to itself, as in KernelBench's level-2
    problem 40: the output is (1 + s) times the GEMM's result."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        h = self.gemm(x)
        return h * self.scale + h.clone().detach()


batch_size = 32
in_features = 96
out_features = 64


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, 0.75]
