import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Conv2d with bias, then batch normalisation with stored statistics (inference-style, the same in
    train and eval mode; the statistics are buffers and never updated), then ReLU:
    y = conv(x); out = relu((y - running_mean) / sqrt(running_var + eps) * bn_weight + bn_bias),
    all per output channel.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, padding: int, eps: float = 1e-5):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        self.eps = eps
        self.bn_weight = nn.Parameter(1.0 + 0.1 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.1 * torch.randn(out_channels))
        self.register_buffer("running_mean", 0.1 * torch.randn(out_channels))
        self.register_buffer("running_var", 0.5 + torch.rand(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, in_channels, height, width).

        Returns:
            torch.Tensor: Output of shape (batch_size, out_channels, height_out, width_out).
        """
        x = self.conv(x)
        x = nn.functional.batch_norm(
            x, self.running_mean, self.running_var, self.bn_weight, self.bn_bias, training=False, eps=self.eps
        )
        return torch.relu(x)


batch_size = 8
in_channels = 3
out_channels = 16
kernel_size = 3
padding = 1
height = 16
width = 16


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
