"""Example for l1_relu: a syntax error."""

import torch


class ModelNew(torch.nn.Module)
    def forward(self, x):
        return torch.relu(x)
