"""The task's reference model inside the judge process, with its outputs cached.

Reference outputs depend only on the task source and the run spec, so they are kept (up to a
byte budget) and reused across every candidate judged against the same task and seeds. So
are the inputs the reference modifies in place (``torch.relu_``, say) with the values it
leaves in them: a candidate may mirror exactly that behaviour, nothing else. And so is what
makes the task's answer degenerate on those inputs (an output equal to an input, one value
throughout), where a kernel that copies or fills one value does the task's own work.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from services.profiler import KernelTime, profile_calls
from services.sandbox.judge.compare import equal
from services.sandbox.judge.identity_tail import has_identity_tail
from services.sandbox.shared.clock import Clock, GraphedCalls, TrialTiming
from services.sandbox.shared.runner import ModelRunner, flatten_outputs, load_module
from services.sandbox.shared.task_source import TaskSource, with_constants
from services.sandbox.shared.tensor_bits import Snapshot
from services.sandbox.wire.judge_candidate import RunSpec, Wrote


class TaskFailed(Exception):
    """The task's own code failed for a spec."""


@dataclass(frozen=True)
class ReferenceRun:
    """What one reference forward call returned, the inputs it modified (by position) with
    the values it left in them, and the writes that are its own answer on these inputs
    (``answers``): ``copy`` when an output equals one of its inputs, parameters or buffers
    (ReLU of non-negative inputs), ``constant`` when a float output holds one value (a softmax
    over a dimension of size 1). A kernel that only copies or fills one value (candidate/work.py)
    then computes the task, and is not taken for one that does no work."""

    outputs: list[torch.Tensor]
    modified_inputs: dict[int, torch.Tensor] = field(default_factory=dict)
    input_bytes: int = 0
    weight_bytes: int = 0
    answers: frozenset[Wrote] = frozenset()

    @property
    def nbytes(self) -> int:
        tensors = [*self.outputs, *self.modified_inputs.values()]
        return sum(t.numel() * t.element_size() for t in tensors)


def degenerate_answers(outputs: list[torch.Tensor], sources: list[torch.Tensor]) -> frozenset[Wrote]:
    """The kinds of degenerate write that ``outputs`` themselves are (ReferenceRun.answers)."""
    answers: set[Wrote] = set()
    with torch.no_grad():
        for output in outputs:
            if output.is_floating_point() and output.numel() > 1 and bool(output.amin() == output.amax()):
                answers.add("constant")
            if any(equal(source, output) for source in sources):
                answers.add("copy")
    return frozenset(answers)


class OutputCache:
    """Least-recently-used reference runs, bounded in bytes."""

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity_bytes = capacity_bytes
        self._entries: OrderedDict[tuple[str, RunSpec], ReferenceRun] = OrderedDict()
        self._bytes = 0

    def get(self, key: tuple[str, RunSpec]) -> ReferenceRun | None:
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        return None

    def put(self, key: tuple[str, RunSpec], run: ReferenceRun) -> None:
        if run.nbytes > self.capacity_bytes:
            return
        self._entries[key] = run
        self._bytes += run.nbytes
        while self._bytes > self.capacity_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.nbytes

    @property
    def nbytes(self) -> int:
        return self._bytes

    def clear(self, keep: tuple[str, RunSpec] | None = None) -> int:
        """Drops every entry but ``keep``'s (to make room on the device); returns the bytes kept."""
        kept = self._entries.get(keep) if keep is not None else None
        self._entries.clear()
        self._bytes = 0
        if kept is None or keep is None:
            return 0
        self.put(keep, kept)
        return self._bytes


class Reference:
    """Runs the task's ``Model`` for run specs."""

    def __init__(self, task: TaskSource, device: torch.device, module_dir: Path, cache: OutputCache) -> None:
        self.task = task
        self.key = hashlib.sha256(task.source.encode()).hexdigest()
        self._cache = cache
        self.runner = ModelRunner(task.inputs_source, self._model_class, device, module_dir)
        self._module_dir = module_dir
        self._profiles: dict[tuple[RunSpec, int], list[KernelTime]] = {}
        self._graph: GraphedCalls | None = None
        self._tails: dict[tuple[object, ...], bool] = {}

    def _model_class(self, constants: dict[str, int]) -> type[torch.nn.Module]:
        module = load_module(with_constants(self.task.source, constants), self._module_dir, "task")
        return module.Model

    def run(self, spec: RunSpec) -> ReferenceRun:
        """The reference's outputs for a spec; raises TaskFailed if the task fails."""
        cached = self._cache.get((self.key, spec))
        if cached is not None:
            return cached
        try:
            model = self.runner.model(spec)
            inputs = self.runner.inputs(spec)
            before = {i: Snapshot(x) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)}
            outputs = [t.detach() for t in flatten_outputs(self.runner.forward(model, inputs, spec))]
            modified = {i: inputs[i].detach() for i, snapshot in before.items() if not snapshot.unchanged(inputs[i])}
        except Exception as error:
            raise TaskFailed(f"{type(error).__name__}: {error}") from error
        weights = [*model.parameters(), *model.buffers()]
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        result = ReferenceRun(
            outputs,
            modified,
            input_bytes=sum(x.numel() * x.element_size() for x in tensors),
            weight_bytes=sum(t.numel() * t.element_size() for t in weights),
            answers=degenerate_answers(outputs, [*tensors, *(t.detach() for t in weights)]),
        )
        self._cache.put((self.key, spec), result)
        return result

    def identity_tail(self, spec: RunSpec) -> bool:
        """Whether the task's forward for ``spec`` ends in steps that leave an earlier result as
        it was (identity_tail.py); asked only where a candidate's copy of PyTorch's result
        would otherwise be a hack. Answered once per model, mode and input scale: it depends
        on what the inputs are drawn from, not on one draw, and a checked call's fresh seed
        must not run the reference again."""
        key = (spec.model_key, spec.scale, spec.train, spec.grad)
        if key not in self._tails:
            self._tails[key] = has_identity_tail(self.runner, spec)
        return self._tails[key]

    def profile(self, spec: RunSpec, calls: int) -> list[KernelTime]:
        """Every kernel of ``calls`` forward calls of the reference (the same for every
        candidate of this task and spec, so profiled once)."""
        key = (spec, calls)
        if key not in self._profiles:
            model = self.runner.model(spec)
            inputs = self.runner.inputs(spec)
            self._profiles[key] = profile_calls(
                lambda: self.runner.forward(model, inputs, spec), calls, self.runner.device
            )
        return self._profiles[key]

    def capture_graph(self, spec: RunSpec, calls: int) -> str:
        """Captures ``calls`` forward calls as a CUDA graph for timed trials; returns why
        not, or an empty string."""
        model = self.runner.model(spec)
        inputs = [self.runner.inputs(spec.call(index)) for index in range(calls)]
        self._graph = None
        try:
            self._graph = GraphedCalls(
                lambda x: flatten_outputs(self.runner.forward(model, x, spec)), inputs, self.runner.device
            )
        except Exception as error:  # noqa: BLE001 - uncapturable reference: timed eagerly
            torch.cuda.synchronize(self.runner.device)
            return f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
        return ""

    def time_trial(self, spec: RunSpec, clock: Clock, calls: int, *, graph: bool = False) -> TrialTiming:
        """One timed trial of ``calls`` forward calls, each on fresh inputs (replaying the
        captured graph with ``graph``)."""
        model = self.runner.model(spec)
        inputs = [self.runner.inputs(spec.call(index)) for index in range(calls)]
        if graph:
            assert self._graph is not None and len(self._graph.inputs) == calls
            self._graph.refill(inputs)
            return clock.time(self._graph.replay, calls, graph=True)

        def run() -> list[Any]:
            return [flatten_outputs(self.runner.forward(model, x, spec)) for x in inputs]

        return clock.time(run, calls)

    def cached_bytes(self) -> int:
        """Bytes of reference results the judge keeps cached."""
        return self._cache.nbytes

    def drop_cache(self, keep: RunSpec | None = None) -> int:
        """Frees every cached reference result but ``keep``'s, and the allocator's spare
        memory; returns the bytes of ``keep``'s result, still held."""
        kept = self._cache.clear(None if keep is None else (self.key, keep))
        if self.runner.device.type == "cuda":
            torch.cuda.empty_cache()
        return kept

    def release_graph(self) -> None:
        """Frees the captured graph and its memory pool."""
        self._graph = None
