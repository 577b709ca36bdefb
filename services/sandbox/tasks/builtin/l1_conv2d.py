import torch
import torch.nn as nn


class Model(nn.Module):
    """
    2D convolution with bias (nn.Conv2d, square kernel): out[b, o, i, j] = bias[o] +
    sum_{c, p, q} weight[o, c, p, q] * x_padded[b, c, i * stride + p, j * stride + q].
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0):
        """
        Args:
            in_channels (int): Channels of the input.
            out_channels (int): Channels produced by the convolution.
            kernel_size (int): Height and width of the kernel.
            stride (int): Step between output positions.
            padding (int): Zero padding on every side.
        """
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: Output of shape (batch_size, out_channels, height_out, width_out).
        """
        return self.conv2d(x)


batch_size = 8
in_channels = 3
out_channels = 16
kernel_size = 3
height = 16
width = 16
stride = 1
padding = 1


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
