import torch
import torch.nn as nn


class Model(nn.Module):
    """
    RMS normalisation over the channel dimension (dim 1) of an NCHW tensor, no affine:
    out = x / sqrt(mean(x ** 2, dim=1) + eps).
    """

    def __init__(self, num_features: int, eps: float = 1e-5):
        """
        Args:
            num_features (int): Number of channels (dim 1).
            eps (float): Added to the mean square for numerical stability.
        """
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, num_features, dim1, dim2).

        Returns:
            torch.Tensor: Normalised tensor, same shape as x.
        """
        rms = torch.sqrt(torch.mean(x**2, dim=1, keepdim=True) + self.eps)
        return x / rms


batch_size = 8
features = 32
dim1 = 16
dim2 = 16


def get_inputs():
    x = torch.randn(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features]
