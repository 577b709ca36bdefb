import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Applies Swish (SiLU) elementwise: out = x * sigmoid(x).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: x * sigmoid(x), same shape as x.
        """
        return x * torch.sigmoid(x)


batch_size = 16
dim = 4096


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
