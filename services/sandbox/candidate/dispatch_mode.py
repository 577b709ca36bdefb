"""The base of the candidate process's dispatch modes (the PyTorch trace, the kernel body's
operator log), and the context the judge's own tensor work runs in there."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

_no_torch_function = torch._C.DisableTorchFunction  # as it was before candidate code ran


class PlainDispatchMode(TorchDispatchMode):
    """A dispatch mode whose ``__torch_dispatch__`` is not wrapped for TorchDynamo: the wrapper's
    first call imports TorchDynamo (seconds of CPU in every candidate process), and TorchDynamo
    already skips frames while a dispatch mode is on the stack."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


@contextmanager
def no_modes() -> Iterator[None]:
    """No dispatch mode sees what runs inside, and no torch function mode or subclass answers
    for it: the judge's own tensor work in the candidate's process (a candidate's function
    mode once made the judge's comparisons say "equal")."""
    with _disable_current_modes(), _no_torch_function():
        yield
