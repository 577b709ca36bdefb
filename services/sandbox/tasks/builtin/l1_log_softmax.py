import torch
import torch.nn as nn


class Model(nn.Module):
    """
    LogSoftmax over the feature dimension: out[i, j] = x[i, j] - log(sum_k exp(x[i, k])).
    """

    def __init__(self, dim: int = 1):
        """
        Args:
            dim (int): Dimension to normalise over.
        """
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, dim).

        Returns:
            torch.Tensor: LogSoftmax over `dim`, same shape as x.
        """
        return torch.log_softmax(x, dim=self.dim)


batch_size = 32
dim = 2048


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [1]
