import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Index of the maximum over one dimension (int64; the first index wins a tie): out = x.argmax(dim).
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
            torch.Tensor: int64 indices of the maxima over `dim`, that dimension removed.
        """
        return torch.argmax(x, dim=self.dim)


batch_size = 16
dim1 = 96
dim2 = 64
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
