"""Which CUDA streams the candidate's code makes current (candidate process).

PyTorch work lands on the current stream; a candidate that switches it (``torch.cuda.stream``,
``torch.cuda.set_stream``, an ExternalStream over a stream made with the driver API) can
leave work running there after forward returns. Every switch goes through
``torch._C._cuda_setStream``, which this watch wraps to remember the raw stream handles, so
that the clock can check each of those streams as it checks the ones the candidate's own
Triton kernels were launched on (timing.Clock).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch


class StreamWatch:
    """Records the raw handle of every stream made current; ``take()`` returns and clears them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handles: set[int] = set()
        self.patched: dict[str, Callable[..., Any]] = {}

    def install(self) -> None:
        """Wraps the one entry point of stream switches; call before any candidate code runs."""
        original = torch._C._cuda_setStream
        stream_class = torch.cuda.Stream
        watch = self

        def set_stream(stream_id: int, device_index: int, device_type: int) -> Any:
            result = original(stream_id=stream_id, device_index=device_index, device_type=device_type)
            handle = stream_class(stream_id=stream_id, device_index=device_index, device_type=device_type).cuda_stream
            with watch._lock:
                watch._handles.add(int(handle))
            return result

        torch._C._cuda_setStream = set_stream
        self.patched = {"torch._C._cuda_setStream": set_stream}

    def take(self) -> set[int]:
        with self._lock:
            handles, self._handles = self._handles, set()
        return handles

    def current_patches(self) -> dict[str, Any]:
        """The object now in the patched place, to detect a candidate undoing it."""
        return {"torch._C._cuda_setStream": torch._C._cuda_setStream}
