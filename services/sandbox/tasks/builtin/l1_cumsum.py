import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Inclusive prefix sum along one dimension: out[i, j] = sum_{k <= j} x[i, k].
    """

    def __init__(self, dim: int):
        """
        Args:
            dim (int): Dimension to scan along.
        """
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, length).

        Returns:
            torch.Tensor: Cumulative sums along `dim`, same shape as x.
        """
        return torch.cumsum(x, dim=self.dim)


batch_size = 32
length = 2048
scan_dim = 1


def get_inputs():
    x = torch.randn(batch_size, length)
    return [x]


def get_init_inputs():
    return [scan_dim]
