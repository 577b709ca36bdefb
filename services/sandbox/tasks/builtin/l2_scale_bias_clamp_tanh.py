import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Elementwise chain with a per-channel bias: out = tanh(clamp(x * scale + bias[c], clamp_min, clamp_max)).
    """

    def __init__(self, bias_shape: tuple, scale: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, channels, height, width).

        Returns:
            torch.Tensor: Output of the same shape.
        """
        x = x * self.scale + self.bias
        x = torch.clamp(x, min=self.clamp_min, max=self.clamp_max)
        return torch.tanh(x)


batch_size = 8
channels = 32
height = 16
width = 16
bias_shape = (channels, 1, 1)
scale = 0.75
clamp_min = -1.5
clamp_max = 1.0


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [bias_shape, scale, clamp_min, clamp_max]
