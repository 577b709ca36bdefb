import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Batched matrix multiplication: C[b] = A[b] @ B[b] for every batch index b.
    """

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Args:
            A (torch.Tensor): Batch of matrices, shape (batch_size, m, k).
            B (torch.Tensor): Batch of matrices, shape (batch_size, k, n).

        Returns:
            torch.Tensor: Batched product, shape (batch_size, m, n).
        """
        return torch.bmm(A, B)


batch_size = 8
m = 64
k = 48
n = 40


def get_inputs():
    A = torch.randn(batch_size, m, k)
    B = torch.randn(batch_size, k, n)
    return [A, B]


def get_init_inputs():
    return []
