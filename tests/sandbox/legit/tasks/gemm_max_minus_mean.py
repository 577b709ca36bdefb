import torch
import torch.nn as nn


class Model(nn.Module):
    """A GEMM, the max of each row, minus the mean over that single column, GELU: as
    KernelBench's level-2 problem 80, the output is 0 whatever the inputs."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = torch.max(self.gemm(x), dim=1, keepdim=True).values
        return torch.nn.functional.gelu(x - x.mean(dim=1, keepdim=True))


batch_size = 64
in_features = 96
out_features = 80


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
