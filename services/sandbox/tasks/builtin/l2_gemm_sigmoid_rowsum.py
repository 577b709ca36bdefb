import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Linear layer, sigmoid, then a sum over the features: out = sum_j sigmoid(x @ W^T + b)[:, j],
    kept as a column.
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, input_size).

        Returns:
            torch.Tensor: Output of shape (batch_size, 1).
        """
        x = self.linear(x)
        x = torch.sigmoid(x)
        x = torch.sum(x, dim=1, keepdim=True)
        return x


batch_size = 64
input_size = 128
hidden_size = 160


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
