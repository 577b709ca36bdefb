import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Matrix-vector multiplication: C = A @ B with B a single column.
    """

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): Matrix of shape (M, K).
            B (torch.Tensor): Column vector of shape (K, 1).

        Returns:
            torch.Tensor: A @ B, shape (M, 1).
        """
        return torch.matmul(A, B)


M = 128
K = 512


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, 1)
    return [A, B]


def get_init_inputs():
    return []
