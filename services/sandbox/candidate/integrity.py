"""Detects a candidate replacing the functions that judge or time it.

The harness captures the real timers and comparison functions before any candidate code
runs and uses only those captures, so replacing them cannot change a measurement. This watch
additionally makes such tampering visible: a candidate has no legitimate reason to patch a
timer, a comparison, the module call path or the launch instrumentation, so any change is
reported as a hack.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

WATCHED: tuple[str, ...] = (
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.monotonic",
    "time.time",
    "torch.allclose",
    "torch.isclose",
    "torch.equal",
    "torch.testing.assert_close",
    "torch.set_grad_enabled",
    "torch.use_deterministic_algorithms",
    "torch.nn.Module.__call__",
    "torch.nn.Module._call_impl",
    "torch.nn.Module.train",
    "torch.cuda.synchronize",
    "torch.cuda.Event",
    "torch.cuda.Event.record",
    "torch.cuda.Event.elapsed_time",
    "torch.cuda.Event.synchronize",
    "torch.cuda.current_stream",
    "torch.profiler.profile",
    "triton.knobs.runtime.launch_enter_hook",
    # The harness's own evidence-gathering code, which runs in the candidate's process.
    "services.sandbox.candidate.harness.sample_values",
    "services.sandbox.candidate.harness.pack_tensors",
    "services.sandbox.candidate.harness.Snapshot",
    "services.sandbox.shared.tensor_bits.Snapshot.unchanged",
    "services.sandbox.shared.tensor_bits.bitwise_equal",
    "services.sandbox.candidate.work.Snapshot",
    "services.sandbox.candidate.work.replace",
    "services.sandbox.candidate.work.WorkProbe.armed",
    "services.sandbox.candidate.work.WorkProbe._launch",
    "services.sandbox.candidate.work.WorkProbe._classify",
    "services.sandbox.candidate.work.WorkProbe.replayed",
    "services.sandbox.candidate.trace.PyTorchTrace.__torch_dispatch__",
    "services.sandbox.candidate.trace.PyTorchTrace.derive",
    "services.sandbox.candidate.trace.PyTorchTrace.matches",
    "services.sandbox.candidate.harness.Harness.run",
    "services.sandbox.candidate.harness.Harness._checked_forward",
    "services.sandbox.candidate.harness.Harness._ask",
    "services.sandbox.candidate.harness.Harness.quiet",
    "services.sandbox.candidate.harness.Harness.time_trial",
    "services.sandbox.candidate.harness.Harness.capture_graph",
    "services.sandbox.shared.clock.GraphedCalls.replay",
    "services.sandbox.candidate.harness.superseded",
    "services.sandbox.candidate.harness.Harness.sample",
    "services.sandbox.shared.clock.Clock.time",
    "services.sandbox.candidate.launches.LaunchRecorder.take",
    "services.sandbox.candidate.launches.LaunchRecorder._record",
)


_MISSING = object()


def _resolve(path: str) -> Any:
    """Follows a dotted path through modules and attributes."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            value = getattr(value, attribute)
        return value
    raise LookupError(path)


class IntegrityWatch:
    """Remembers the identity of watched objects and reports any that changed."""

    def __init__(self, extra: Callable[[], Mapping[str, Any]] | None = None) -> None:
        self._extra = extra
        self._baseline = self._snapshot()

    def _snapshot(self) -> dict[str, Any]:
        snapshot: dict[str, Any] = {}
        for path in WATCHED:
            try:
                snapshot[path] = _resolve(path)
            except (LookupError, AttributeError):
                snapshot[path] = _MISSING
        if self._extra is not None:
            snapshot.update(self._extra())
        return snapshot

    def changed(self) -> list[str]:
        """Names of watched objects that are no longer the originals (compared by identity)."""
        now = self._snapshot()
        return sorted(name for name, original in self._baseline.items() if now.get(name, _MISSING) is not original)
