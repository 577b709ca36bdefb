"""The task's reference model inside the judge process, with its outputs cached.

Reference outputs depend only on the task source and the run spec, so they are kept (up to a
byte budget) and reused across every candidate judged against the same task and seeds.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path

import torch

from services.profiler.collect import KernelTime, profile_calls
from services.sandbox.runner import ModelRunner, RunSpec, flatten_outputs, load_module
from services.sandbox.task_source import TaskSource, with_constants
from services.sandbox.timing import Clock, TrialTiming


class ReferenceError(Exception):
    """The task's own code failed for a spec."""


class OutputCache:
    """Least-recently-used reference outputs, bounded in bytes."""

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity_bytes = capacity_bytes
        self._entries: OrderedDict[tuple[str, RunSpec], list[torch.Tensor]] = OrderedDict()
        self._bytes = 0

    def get(self, key: tuple[str, RunSpec]) -> list[torch.Tensor] | None:
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        return None

    def put(self, key: tuple[str, RunSpec], outputs: list[torch.Tensor]) -> None:
        size = sum(t.numel() * t.element_size() for t in outputs)
        if size > self.capacity_bytes:
            return
        self._entries[key] = outputs
        self._bytes += size
        while self._bytes > self.capacity_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= sum(t.numel() * t.element_size() for t in evicted)


class Reference:
    """Runs the task's ``Model`` for run specs."""

    def __init__(self, task: TaskSource, device: torch.device, module_dir: Path, cache: OutputCache) -> None:
        self.task = task
        self.key = hashlib.sha256(task.source.encode()).hexdigest()
        self._cache = cache
        self.runner = ModelRunner(task.inputs_source, self._model_class, device, module_dir)
        self._module_dir = module_dir

    def _model_class(self, constants: dict[str, int]) -> type[torch.nn.Module]:
        module = load_module(with_constants(self.task.source, constants), self._module_dir, "task")
        return module.Model

    def outputs(self, spec: RunSpec) -> list[torch.Tensor]:
        """The reference's outputs for a spec; raises ReferenceError if the task fails."""
        cached = self._cache.get((self.key, spec))
        if cached is not None:
            return cached
        try:
            model = self.runner.model(spec)
            inputs = self.runner.inputs(spec)
            outputs = [t.detach() for t in flatten_outputs(self.runner.forward(model, inputs, spec))]
        except Exception as error:  # noqa: BLE001 - the task's code failed
            raise ReferenceError(f"{type(error).__name__}: {error}") from error
        self._cache.put((self.key, spec), outputs)
        return outputs

    def profile(self, spec: RunSpec, calls: int) -> list[KernelTime]:
        """Every kernel of ``calls`` forward calls of the reference."""
        model = self.runner.model(spec)
        inputs = self.runner.inputs(spec)
        return profile_calls(lambda: self.runner.forward(model, inputs, spec), calls, self.runner.device)

    def time_trial(self, spec: RunSpec, clock: Clock, calls: int) -> TrialTiming:
        """One timed trial of ``calls`` forward calls, each on fresh inputs."""
        model = self.runner.model(spec)
        inputs = [self.runner.inputs(spec.call(index)) for index in range(calls)]
        runs = [lambda x=x: flatten_outputs(self.runner.forward(model, x, spec)) for x in inputs]
        return clock.time(runs)
