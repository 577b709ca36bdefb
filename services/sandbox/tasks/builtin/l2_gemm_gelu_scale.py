import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Linear layer, exact GELU, then scaling: out = gelu(x @ W^T + b) * scaling_factor.
    """

    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, in_features).

        Returns:
            torch.Tensor: Output of shape (batch_size, out_features).
        """
        x = self.linear(x)
        x = nn.functional.gelu(x)
        x = x * self.scaling_factor
        return x


batch_size = 64
in_features = 160
out_features = 128
scaling_factor = 1.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
