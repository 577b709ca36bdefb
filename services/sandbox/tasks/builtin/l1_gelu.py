import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Applies the exact (erf-based) GELU elementwise: out = 0.5 * x * (1 + erf(x / sqrt(2))).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: GELU(x), same shape as x.
        """
        return nn.functional.gelu(x)


batch_size = 16
dim = 4096


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
