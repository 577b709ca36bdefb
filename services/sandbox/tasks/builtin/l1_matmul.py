import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Matrix multiplication: C = A @ B.
    """

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): Matrix of shape (M, K).
            B (torch.Tensor): Matrix of shape (K, N).

        Returns:
            torch.Tensor: A @ B, shape (M, N).
        """
        return torch.matmul(A, B)


M = 128
K = 96
N = 80


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
