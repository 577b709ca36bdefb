import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Softmax of a scaled linear layer: out = softmax((x @ W^T + b) * scale, dim=1).
    """

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, in_features).

        Returns:
            torch.Tensor: Row-wise probabilities, shape (batch_size, out_features).
        """
        x = self.linear(x)
        x = x * self.scale
        return torch.softmax(x, dim=1)


batch_size = 64
in_features = 128
out_features = 96
scale = 4.0


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
