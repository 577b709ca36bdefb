import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Batch normalisation with stored statistics, the same in train and eval mode (inference-style):
    out[:, c] = (x[:, c] - running_mean[c]) / sqrt(running_var[c] + eps) * weight[c] + bias[c].
    The statistics are buffers and are never updated.
    """

    def __init__(self, num_features: int, eps: float = 1e-5):
        """
        Args:
            num_features (int): Number of channels (dim 1).
            eps (float): Added to the variance for numerical stability.
        """
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(num_features))
        self.bias = nn.Parameter(0.1 * torch.randn(num_features))
        self.register_buffer("running_mean", 0.1 * torch.randn(num_features))
        self.register_buffer("running_var", 0.5 + torch.rand(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input of shape (batch_size, num_features, dim1, dim2).

        Returns:
            torch.Tensor: Normalised tensor, same shape as x.
        """
        return nn.functional.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias, training=False, eps=self.eps
        )


batch_size = 8
features = 32
dim1 = 16
dim2 = 16


def get_inputs():
    x = torch.randn(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features]
