import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Sums over one dimension, keeping it: out = x.sum(dim, keepdim=True).
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
            torch.Tensor: Sums over `dim`, that dimension kept with size 1.
        """
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 16
dim1 = 96
dim2 = 64
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
