import torch
import torch.nn as nn


class Model(nn.Module):
    """A GEMM, then Hardtanh with bounds far beyond what its sums reach: the tail leaves the
    GEMM's result as it was, at every size the judge runs."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.hardtanh = nn.Hardtanh(min_val=-40.0, max_val=40.0)

    def forward(self, x):
        return self.hardtanh(self.gemm(x))


batch_size = 48
in_features = 192
out_features = 72


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
