import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Softmax over the feature dimension: out[i, j] = exp(x[i, j]) / sum_k exp(x[i, k]).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, dim).

        Returns:
            torch.Tensor: Softmax over dim 1, shape (batch_size, dim).
        """
        return torch.softmax(x, dim=1)


batch_size = 32
dim = 2048


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
