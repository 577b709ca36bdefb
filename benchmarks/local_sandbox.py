"""A sandbox server on loopback for the benchmark scripts, served from a background event loop
so that the scripts can call it with ordinary blocking gRPC clients."""

from __future__ import annotations

import asyncio
import threading

from drkernel.config import ServerSettings, load_settings
from services.sandbox.server import start_sandbox


class LocalSandbox:
    """Starts at construction with the configured sandbox settings plus ``overrides``
    (loopback, a port chosen by the OS, no metrics endpoint); ``stop()`` shuts it down."""

    def __init__(self, **overrides: object) -> None:
        settings = load_settings().sandbox.model_copy(update={
            "server": ServerSettings(host="127.0.0.1", port=0, metrics_port=0, metrics=False), **overrides,
        })
        self._loop = asyncio.new_event_loop()
        self._sandbox = self._loop.run_until_complete(start_sandbox(settings))
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        self.address = self._sandbox.address

    def stop(self, timeout_seconds: float = 300) -> None:
        asyncio.run_coroutine_threadsafe(self._sandbox.stop(), self._loop).result(timeout_seconds)
