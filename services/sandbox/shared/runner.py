"""Building a model and its inputs from a spec, and running one forward call.

The judge runs the reference through this module and the candidate's sandboxed process runs
the candidate through the very same code, so that equal specs give bitwise-equal weights and
inputs in both processes without any tensor crossing between them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from services.sandbox.shared.task_source import with_constants
from services.sandbox.wire.judge_candidate import RunSpec

_MODELS_KEPT = 4
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


class UserCodeError(Exception):
    """Code of the task or candidate raised; carries a readable message."""


def load_module(source: str, directory: Path, stem: str) -> ModuleType:
    """Imports ``source`` from a real file (Triton reads kernel source from files)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"{stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    path = directory / f"{stem}_{digest}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def flatten_outputs(value: Any) -> list[torch.Tensor]:
    """A forward's result as a flat list of tensors (tuples and lists are flattened)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in flatten_outputs(item)]
    raise UserCodeError(f"forward returned {type(value).__name__}; expected tensors")


def _convert(value: Any, spec: RunSpec, device: torch.device) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    value = value.to(device)
    if not value.is_floating_point():
        return value
    if spec.scale != 1.0:
        value = value * spec.scale
    if spec.round_to is not None:
        value = value.to(DTYPES[spec.round_to]).to(value.dtype)
    if spec.dtype is not None:
        value = value.to(DTYPES[spec.dtype])
    return value


class ModelRunner:
    """Builds one model class's instances and inputs from specs, caching the latest model.

    ``model_class_for(constants)`` returns the class to instantiate for a spec's size
    constants: the reference's Model comes from the task re-executed with them, the
    candidate's ModelNew is always the same class.
    """

    def __init__(
        self,
        inputs_source: str,
        model_class_for: Callable[[dict[str, int]], type[torch.nn.Module]],
        device: torch.device,
        module_dir: Path,
    ) -> None:
        self._inputs_source = inputs_source
        self._model_class_for = model_class_for
        self.device = device
        self._module_dir = module_dir
        self._models: OrderedDict[tuple[object, ...], torch.nn.Module] = OrderedDict()

    def _inputs_module(self, spec: RunSpec) -> ModuleType:
        source = with_constants(self._inputs_source, dict(spec.constants))
        return load_module(source, self._module_dir, "task_inputs")

    def model(self, spec: RunSpec) -> torch.nn.Module:
        """The model for this spec: one instance per (constants, weight seed, dtype), kept for
        the last few, so that specs that differ only in their inputs share an instance and a
        cache kept inside the model meets inputs it did not see."""
        if spec.model_key in self._models:
            self._models.move_to_end(spec.model_key)
            return self._models[spec.model_key]
        model = self.build(spec)
        self._models[spec.model_key] = model
        while len(self._models) > _MODELS_KEPT:
            self._models.popitem(last=False)
        return model

    def build(self, spec: RunSpec) -> torch.nn.Module:
        """A new model for this spec, kept nowhere (``model`` keeps the ones judged calls use)."""
        inputs_module = self._inputs_module(spec)
        model_class = self._model_class_for(dict(spec.constants))
        torch.manual_seed(spec.weight_seed)
        init_inputs = inputs_module.get_init_inputs()
        torch.manual_seed(spec.weight_seed)
        with torch.device(self.device) if spec.init_on_device else contextlib.nullcontext():
            model = model_class(*init_inputs)
        model = model.to(self.device)
        if spec.round_to is not None:
            with torch.no_grad():
                for tensor in [*model.parameters(), *model.buffers()]:
                    if tensor.is_floating_point():
                        tensor.copy_(tensor.to(DTYPES[spec.round_to]))
        if spec.dtype is not None:
            model = model.to(DTYPES[spec.dtype])
        return model

    def weight_elements(self, spec: RunSpec) -> int | None:
        """Elements of the model's parameters and buffers for this spec, counted on a model built
        on the meta device (no memory, no random draws); None if its constructor cannot run there."""
        inputs_module = self._inputs_module(spec)
        model_class = self._model_class_for(dict(spec.constants))
        try:
            init_inputs = inputs_module.get_init_inputs()
            with torch.device("meta"):
                model = model_class(*init_inputs)
        except Exception:  # noqa: BLE001 - a constructor that needs real tensors: counted as unknown
            return None
        return sum(t.numel() for t in [*model.parameters(), *model.buffers()])

    def inputs(self, spec: RunSpec) -> list[Any]:
        """Fresh inputs for this spec, generated on the device from its seed."""
        module = self._inputs_module(spec)
        torch.manual_seed(spec.input_seed)
        with torch.device(self.device):
            raw = module.get_inputs()
        return [_convert(value, spec, self.device) for value in raw]

    @staticmethod
    def forward(model: torch.nn.Module, inputs: list[Any], spec: RunSpec) -> Any:
        """One forward call in the spec's mode (train/eval, with or without autograd)."""
        model.train(spec.train)
        with torch.set_grad_enabled(spec.grad):
            return model(*inputs)
