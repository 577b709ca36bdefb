import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Applies ReLU elementwise: out = max(x, 0).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: max(x, 0), same shape as x.
        """
        return torch.relu(x)


batch_size = 16
dim = 4096


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
