import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Averages over one dimension, dropping it: out = x.mean(dim).
    """

    def __init__(self, dim: int):
        """
        Args:
            dim (int): Dimension to reduce over.
        """
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, dim1, dim2).

        Returns:
            torch.Tensor: Means over `dim`, that dimension removed.
        """
        return torch.mean(x, dim=self.dim)


batch_size = 16
dim1 = 64
dim2 = 96
reduce_dim = 2


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
