import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Group normalisation with a learned per-channel affine: the channels are split into num_groups
    groups; each (sample, group) is normalised with its own mean and biased variance over the group's
    channels and all spatial positions, then out[:, c] = normalised[:, c] * weight[c] + bias[c].
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5):
        """
        Args:
            num_groups (int): Number of groups; divides num_channels.
            num_channels (int): Number of channels (dim 1).
            eps (float): Added to the variance for numerical stability.
        """
        super().__init__()
        self.num_groups = num_groups
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(num_channels))
        self.bias = nn.Parameter(0.1 * torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, num_channels, dim1, dim2).

        Returns:
            torch.Tensor: Normalised tensor, same shape as x.
        """
        return nn.functional.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


batch_size = 8
num_groups = 4
channels_per_group = 8
num_channels = num_groups * channels_per_group
dim1 = 16
dim2 = 16


def get_inputs():
    x = torch.randn(batch_size, num_channels, dim1, dim2)
    return [x]


def get_init_inputs():
    return [num_groups, num_channels]
