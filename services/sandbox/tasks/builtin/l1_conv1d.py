import torch
import torch.nn as nn


class Model(nn.Module):
    """
    1D convolution with bias (nn.Conv1d): out[b, o, l] = bias[o] +
    sum_{c, t} weight[o, c, t] * x_padded[b, c, l * stride + t].
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0):
        """
        Args:
            in_channels (int): Channels of the input.
            out_channels (int): Channels produced by the convolution.
            kernel_size (int): Width of the kernel.
            stride (int): Step between output positions.
            padding (int): Zero padding on both sides.
        """
        super().__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, in_channels, length).

        Returns:
            torch.Tensor: Output of shape (batch_size, out_channels, length_out).
        """
        return self.conv1d(x)


batch_size = 8
in_channels = 16
out_channels = 32
kernel_size = 5
length = 128
stride = 2
padding = 2


def get_inputs():
    x = torch.randn(batch_size, in_channels, length)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
