import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Adds a vector to every row of a matrix (broadcast over the batch): out[i, j] = x[i, j] + y[j].
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Matrix of shape (batch_size, dim).
            y (torch.Tensor): Vector of shape (dim,).

        Returns:
            torch.Tensor: x + y, shape (batch_size, dim).
        """
        return x + y


batch_size = 64
dim = 1024


def get_inputs():
    x = torch.randn(batch_size, dim)
    y = torch.randn(dim)
    return [x, y]


def get_init_inputs():
    return []
