"""The base of the candidate process's dispatch modes (the PyTorch trace, the kernel body's
operator log)."""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class PlainDispatchMode(TorchDispatchMode):
    """A dispatch mode whose ``__torch_dispatch__`` is not wrapped for TorchDynamo: the wrapper's
    first call imports TorchDynamo (seconds of CPU in every candidate process), and TorchDynamo
    already skips frames while a dispatch mode is on the stack."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False
