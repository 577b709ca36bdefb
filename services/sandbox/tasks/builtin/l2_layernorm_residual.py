import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Layer normalisation over the last dimension (learned affine), then a residual add:
    out = layer_norm(x) * weight + bias + residual.
    """

    def __init__(self, hidden_size: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=eps)
        with torch.no_grad():
            self.norm.weight.add_(0.1 * torch.randn(hidden_size))
            self.norm.bias.add_(0.1 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, seq_len, hidden_size).
            residual (torch.Tensor): Tensor of the same shape, added after the normalisation.

        Returns:
            torch.Tensor: Output of shape (batch_size, seq_len, hidden_size).
        """
        return self.norm(x) + residual


batch_size = 8
seq_len = 16
hidden_size = 384


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden_size), torch.randn(batch_size, seq_len, hidden_size)]


def get_init_inputs():
    return [hidden_size]
