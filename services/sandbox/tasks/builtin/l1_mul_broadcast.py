import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Scales every channel by its own factor (broadcast over batch and length):
    out[b, c, l] = x[b, c, l] * y[c, 0].
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, channels, length).
            y (torch.Tensor): Per-channel factors of shape (channels, 1).

        Returns:
            torch.Tensor: x * y, shape (batch_size, channels, length).
        """
        return x * y


batch_size = 16
channels = 32
length = 128


def get_inputs():
    x = torch.randn(batch_size, channels, length)
    y = torch.randn(channels, 1)
    return [x, y]


def get_init_inputs():
    return []
