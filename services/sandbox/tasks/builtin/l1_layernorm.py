import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Layer normalisation over the last dimension with a learned elementwise affine:
    out = (x - mean) / sqrt(var + eps) * weight + bias, statistics per row of the last dimension
    (biased variance).
    """

    def __init__(self, normalized_size: int, eps: float = 1e-5):
        """
        Args:
            normalized_size (int): Size of the last dimension, which is normalised.
            eps (float): Added to the variance for numerical stability.
        """
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(normalized_size))
        self.bias = nn.Parameter(0.1 * torch.randn(normalized_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, seq_len, normalized_size).

        Returns:
            torch.Tensor: Normalised tensor, same shape as x.
        """
        return nn.functional.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


batch_size = 8
seq_len = 16
normalized_size = 512


def get_inputs():
    x = torch.randn(batch_size, seq_len, normalized_size)
    return [x]


def get_init_inputs():
    return [normalized_size]
