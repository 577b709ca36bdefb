import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Linear layer, Swish, then a learned bias: y = x @ W^T + b; out = y * sigmoid(y) + bias.
    """

    def __init__(self, in_features: int, out_features: int, bias_shape: tuple):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, in_features).

        Returns:
            torch.Tensor: Output of shape (batch_size, out_features).
        """
        x = self.matmul(x)
        x = torch.sigmoid(x) * x
        x = x + self.bias
        return x


batch_size = 64
in_features = 96
out_features = 128
bias_shape = (out_features,)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
