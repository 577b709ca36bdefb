import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Applies LeakyReLU elementwise: out = x if x >= 0 else negative_slope * x.
    """

    def __init__(self, negative_slope: float = 0.01):
        """
        Args:
            negative_slope (float): Slope applied to negative inputs.
        """
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: LeakyReLU(x), same shape as x.
        """
        return nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 16
dim = 4096
negative_slope = 0.2


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [negative_slope]
