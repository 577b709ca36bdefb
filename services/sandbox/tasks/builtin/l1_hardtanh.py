import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Applies HardTanh elementwise: out = clamp(x, min_val, max_val).
    """

    def __init__(self, min_val: float, max_val: float):
        """
        Args:
            min_val (float): Lower clamp bound.
            max_val (float): Upper clamp bound.
        """
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: x clamped to [min_val, max_val], same shape as x.
        """
        return nn.functional.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


batch_size = 16
dim = 4096
min_val = -0.5
max_val = 1.25


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [min_val, max_val]
