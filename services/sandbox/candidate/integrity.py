"""Detects a candidate replacing the functions that judge or time it.

The harness captures the real timers and comparison functions before any candidate code
runs and uses only those captures, so replacing them cannot change a measurement. This watch
additionally makes such tampering visible: a candidate has no legitimate reason to patch a
timer, a comparison, the module call path or the launch instrumentation, so any change is
reported as a hack.

On CPU the numbers a kernel makes come from Python objects in the candidate's own process:
Triton's interpreter, the language modules a kernel calls into, NumPy and the sandbox's own
libdevice and bfloat16 code. Comparing them between checked calls misses a candidate that
swaps one only while its kernels run and puts it back before forward returns, so
``InterpreterWatch`` also compares them right before and right after every interpreted launch
(bounds.py's launch wrapper), where the interpreter's own patches of the language are not in
effect; what it finds there is reported with the rest, even when it was put back later.
"""

from __future__ import annotations

import contextlib
import importlib
import operator
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import ModuleType
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
    "torch._C._set_deterministic_algorithms",
    "torch.nn.Module.__call__",
    "torch.nn.Module._call_impl",
    "torch.nn.Module.train",
    "torch.cuda.synchronize",
    "torch.cuda.Event",
    "torch.cuda.Event.record",
    "torch.cuda.Event.elapsed_time",
    "torch.cuda.Event.synchronize",
    "torch.cuda.current_stream",
    "torch.autograd.profiler.profile",
    "triton.knobs.runtime.launch_enter_hook",
    # The harness's own evidence-gathering code, which runs in the candidate's process.
    "services.sandbox.candidate.harness.sample_values",
    "services.sandbox.candidate.harness.pack_tensors",
    "services.sandbox.candidate.harness.Snapshot",
    "services.sandbox.shared.tensor_bits.Snapshot.unchanged",
    "services.sandbox.shared.tensor_bits.bitwise_equal",
    "services.sandbox.shared.tensor_bits.flat_bytes",
    "services.sandbox.shared.tensor_bits.copy_into",
    "services.sandbox.shared.tensor_bits.detached",
    "services.sandbox.wire.tensors.pack_tensors",
    "services.sandbox.candidate.work.Snapshot",
    "services.sandbox.candidate.work.replace",
    "services.sandbox.candidate.work.WorkProbe.armed",
    "services.sandbox.candidate.work.WorkProbe._launch",
    "services.sandbox.candidate.work.WorkProbe._classify",
    "services.sandbox.candidate.work.WorkProbe.replayed",
    "services.sandbox.candidate.trace.PyTorchTrace.__torch_dispatch__",
    "services.sandbox.candidate.trace.PyTorchTrace.derive",
    "services.sandbox.candidate.trace.PyTorchTrace.written",
    "services.sandbox.candidate.trace.PyTorchTrace.copied",
    "services.sandbox.candidate.trace.PyTorchTrace.worked",
    "services.sandbox.candidate.trace.PyTorchTrace.plain",
    "services.sandbox.candidate.trace.PyTorchTrace.matches",
    "services.sandbox.candidate.trace.PyTorchTrace.replayed",
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


# The ATen operators the judge's own code runs on the candidate's tensors inside its process
# (shared/tensor_bits.py's snapshots and hand-over, the knock-out): a kernel registered anew for
# one of them (torch.library) would change what they compute for the judge too.
JUDGED_OPERATORS: tuple[str, ...] = (
    "aten::clone",
    "aten::copy_",
    "aten::detach",
    "aten::alias",
    "aten::view",
    "aten::view.dtype",
    "aten::reshape",
    "aten::_reshape_alias",
    "aten::contiguous",
    "aten::slice.Tensor",
    "aten::equal",
    "aten::_to_copy",
    "aten::arange.start_step",
    "aten::zeros",
    "aten::mul.Tensor",
    "aten::mul.Scalar",
    "aten::add.Tensor",
    "aten::add_.Tensor",
    "aten::bitwise_or.Scalar",
    "aten::sum",
    "aten::_local_scalar_dense",
    "aten::fill_.Scalar",
    "aten::logical_not_",
)

_MISSING = object()


# The dispatch keys a plain CPU or CUDA tensor's operation goes through. Others change for
# honest reasons (importing torch._dynamo registers Meta kernels, say) and never run for them.
_REAL_TENSOR_KEYS = frozenset(
    {
        "CPU",
        "CUDA",
        "AutogradCPU",
        "AutogradCUDA",
        "ADInplaceOrView",
        "CompositeImplicitAutograd",
        "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional",
    }
)


def _real_tensor_kernels(table: str) -> str:
    return "\n".join(line for line in table.splitlines() if line.split(":", 1)[0].strip() in _REAL_TENSOR_KEYS)


def below_python() -> dict[str, str]:
    """What decides, below any Python attribute, what the judge's tensor operations do: the
    dispatch table of each judged operator, and the stacks of PyTorch's dispatch and function
    modes (a mode left on after forward would see, and could answer, every operation after it)."""
    import torch

    state = {
        f"the ATen kernels of {op}": _real_tensor_kernels(torch._C._dispatch_dump_table(op)) for op in JUDGED_OPERATORS
    }
    state["the dispatch mode stack (a TorchDispatchMode left on)"] = str(torch._C._len_torch_dispatch_stack())
    state["the function mode stack (a TorchFunctionMode left on)"] = str(torch._C._len_torch_function_stack())
    return state


def _resolve(path: str) -> Any:
    """Follows a dotted path through modules and attributes."""
    parts = path.split(".")
    count, value = _longest_module(parts)
    for attribute in parts[count:]:
        value = getattr(value, attribute)
    return value


def _longest_module(parts: list[str]) -> tuple[int, Any]:
    """How many leading ``parts`` name a module, and the module: the longest prefix already
    imported (``sys.modules``: this runs after every timed trial, and a failed import of a
    longer prefix searches the file system), else the longest that imports."""
    prefixes = [(count, ".".join(parts[:count])) for count in range(len(parts), 0, -1)]
    for count, name in prefixes:
        if sys.modules.get(name) is not None:
            return count, sys.modules[name]
    for count, name in prefixes:
        try:
            return count, importlib.import_module(name)
        except ImportError:
            continue
    raise LookupError(".".join(parts))


def _shadowing(instruments: Mapping[str, Any]) -> dict[str, Any]:
    """Instance attributes of the instruments that stand over a method of their class (a
    method replaced on one object, out of the class watch's sight), by ``Class.name``."""
    return {
        f"{name}.{attribute}": value
        for name, instrument in instruments.items()
        for attribute, value in vars(instrument).items()
        if callable(getattr(type(instrument), attribute, None))
    }


class IntegrityWatch:
    """Remembers the identity of watched objects, the state below Python that the judge's
    tensor operations go through (``below_python``) and the instruments' instance attributes
    that stand over their class's (``instruments`` by name), and reports any that changed,
    with what ``found`` saw replaced at moments between calls (``InterpreterWatch.found``)."""

    def __init__(
        self,
        extra: Callable[[], Mapping[str, Any]] | None = None,
        instruments: Mapping[str, Any] | None = None,
        found: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self._extra = extra
        self._instruments = dict(instruments or {})
        self._found = found
        self._baseline = self._snapshot()
        self._below = below_python()

    def _snapshot(self) -> dict[str, Any]:
        snapshot: dict[str, Any] = {}
        for path in WATCHED:
            try:
                snapshot[path] = _resolve(path)
            except (LookupError, AttributeError):
                snapshot[path] = _MISSING
        if self._extra is not None:
            snapshot.update(self._extra())
        snapshot.update(_shadowing(self._instruments))
        return snapshot

    def changed(self) -> list[str]:
        """Names of watched objects that are no longer the originals (compared by identity), and
        of the state below Python that differs."""
        now = self._snapshot()
        below = below_python()
        return sorted(
            [name for name, original in self._baseline.items() if now.get(name, _MISSING) is not original]
            + [name for name in now.keys() - self._baseline.keys()]
            + [name for name, original in self._below.items() if below.get(name) != original]
            + list(self._found() if self._found is not None else ())
        )


class LibraryCode:
    """The functions candidate kernels' results pass through below PyTorch: NumPy's (Triton's
    CPU interpreter computes with them, and the judge's bounds and libdevice use them) and, on
    CPU, the interpreter's own classes and functions (what ``tl.exp`` runs there: a red-team
    probe replaced ``InterpreterBuilder.create_exp`` with a GELU, so that a kernel written as
    ``exp`` was correct under the interpreter only). Their names are fixed when this is made,
    before candidate code runs; ``current_patches`` gives what those names hold now, read from
    the owners' own dictionaries (a class method read through ``getattr`` is a new object at
    each read)."""

    def __init__(self, interpreted: bool) -> None:
        import numpy

        owners: list[tuple[str, Any]] = [("numpy", numpy)]
        if interpreted:
            from triton.runtime import interpreter

            owners.append(("triton.runtime.interpreter", interpreter))
            owners += [
                (f"triton.runtime.interpreter.{name}", value)
                for name, value in vars(interpreter).items()
                if isinstance(value, type) and value.__module__ == interpreter.__name__
            ]
        self._places = [
            (f"{label}.{name}", vars(owner), name)
            for label, owner in owners
            for name, value in vars(owner).items()
            if callable(value) or isinstance(value, (staticmethod, classmethod))
        ]

    def current_patches(self) -> dict[str, Any]:
        """What each watched name holds now."""
        return {label: namespace.get(name, _MISSING) for label, namespace, name in self._places}


# What else the interpreter computes with, besides its own module and the language modules:
# the sandbox's libdevice, bfloat16 arithmetic and bounds checks, and the libraries its
# operations call (NumPy, math, and the builtins such as ``range`` that its grid loop runs on).
_COMPUTED_WITH: tuple[str, ...] = (
    "services.sandbox.candidate.libdevice_numpy",
    "services.sandbox.candidate.bf16_interpreter",
    "services.sandbox.candidate.bounds",
    "services.sandbox.candidate.cpu_support",
    "numpy",
    "math",
    "builtins",
)
# Attributes that change for honest reasons: the grid the builder is told at every launch
# (``set_grid_dim``, ``set_grid_idx``); what Python makes on first use: annotations, the slot names
# ``copy`` caches on a class, the registry added to a module whose code warned (an overflow in
# NumPy's exp, say).
_BUILDER_STATE = frozenset({"grid_dim", "grid_idx"})
_MADE_BY_PYTHON = frozenset({"__annotations__", "__slotnames__", "__warningregistry__"})
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a type whose attributes cannot be set


def _interpreted_namespaces() -> list[tuple[str, Any, frozenset[str]]]:
    """What Triton's interpreter computes with, as (label, owner of the attributes, the names
    that change honestly): its module, the language modules loaded now (``triton.language`` and
    everything under it, libdevice included), ``_COMPUTED_WITH``, the classes each of them
    defines (those whose attributes can be set), and the builder and semantic objects the
    interpreter's operations run on."""
    from triton.runtime import interpreter

    language = [
        module
        for name, module in sorted(sys.modules.items())
        if (name == "triton.language" or name.startswith("triton.language.")) and isinstance(module, ModuleType)
    ]
    namespaces: list[tuple[str, Any, frozenset[str]]] = []
    for module in [interpreter, *language, *(importlib.import_module(name) for name in _COMPUTED_WITH)]:
        namespaces.append((module.__name__, module, _MADE_BY_PYTHON))
        namespaces += [
            (f"{module.__name__}.{name}", value, _MADE_BY_PYTHON)
            for name, value in vars(module).items()
            if isinstance(value, type) and value.__module__ == module.__name__ and not value.__flags__ & _IMMUTABLE_TYPE
        ]
    return [
        *namespaces,
        ("triton.runtime.interpreter.interpreter_builder", interpreter.interpreter_builder, _BUILDER_STATE),
        ("triton.runtime.interpreter.interpreter_semantic", interpreter.interpreter_semantic, frozenset()),
    ]


class _Namespace:
    """One owner's attributes (a module's globals, a class's or an object's dictionary) as they
    were before candidate code ran, and as last seen. The values are compared by identity (an
    object's ``__eq__`` is the candidate's to define), the names in order, in C while nothing
    changed: about 20 ns a name. ``interpreter`` is the interpreter's globals then, which its
    rewrite of a ``@triton.jit`` function copies into the function's module."""

    def __init__(self, label: str, owner: Any, changing: frozenset[str], interpreter: Mapping[str, Any]) -> None:
        self.label = label
        self._owner = owner
        self._changing = changing
        self._interpreter = interpreter
        self._baseline = dict(vars(owner))
        self._seen = (list(self._baseline), tuple(self._baseline.values()))

    def replaced(self) -> list[str]:
        """The names that hold another object than before candidate code ran, other than
        honest changes; looked for only if anything changed since the last call."""
        attributes = vars(self._owner)
        names, values = self._seen
        if (
            len(attributes) == len(names)
            and all(map(operator.is_, attributes.values(), values))
            and list(attributes) == names
        ):
            return []
        current = dict(attributes)
        self._seen = (list(current), tuple(current.values()))
        return sorted(
            f"{self.label}.{name}"
            for name in current.keys() | self._baseline.keys()
            if (value := current.get(name, _MISSING)) is not self._baseline.get(name, _MISSING)
            and not self._honest(name, value)
        )

    def _honest(self, name: str, value: Any) -> bool:
        """Whether the change is one that Triton, Python or the import system makes itself."""
        if name in self._changing:
            return True
        if name in self._baseline:
            return False
        owner = self._owner
        if isinstance(owner, type):
            # The interpreter restores a language attribute it patched by setting what it read
            # before, which for one the class inherited (``tensor.__repr__``) is the inherited one.
            return next((vars(base)[name] for base in owner.__mro__[1:] if name in vars(base)), _MISSING) is value
        return isinstance(owner, ModuleType) and (
            sys.modules.get(f"{owner.__name__}.{name}") is value  # a submodule imported since
            or self._interpreter.get(name, _MISSING) is value
        )


class InterpreterWatch:
    """Compares what Triton's interpreter computes with (``_interpreted_namespaces``) with what
    it was when this was made, right before and right after every interpreted launch
    (``launch``), and keeps every name it found replaced (``found``), even if it was put back
    later. A candidate that swaps an interpreter operation, a language or libdevice function
    or the semantic's builder only while its kernels run makes them compute what their source
    does not say, and the watch between calls never sees it (red-team probes swapped
    ``InterpreterBuilder.create_exp`` inside forward only, and ``interpreter_semantic.builder``).

    The interpreter patches the language modules with its own versions while a launch runs and
    restores them before the launch returns, except those that a device function call (one
    ``@triton.jit`` function calling another: ``tl.sum`` calls into ``tl.core``) patched in
    modules the launch did not: Triton 3.9 never restores those. The launch's own patches are
    made to include them (``_install``), so that at both moments compared the language is
    exactly what it was before any launch. Make this after every other instrument is installed
    (it holds what they installed as the originals) and before candidate code runs."""

    def __init__(self) -> None:
        from triton.runtime import interpreter

        self._local = threading.local()  # the launch running on this thread, if any
        self._lock = threading.Lock()
        self._found: set[str] = set()
        self._install(interpreter)
        globals_then = dict(vars(interpreter))
        self._namespaces = [_Namespace(*namespace, globals_then) for namespace in _interpreted_namespaces()]
        # Those the launch's own patches leave alone (they patch triton.language, its core and
        # math modules and their classes, not libdevice): compared again once the grid is set.
        self._unpatched = [
            namespace
            for namespace in self._namespaces
            if not namespace.label.startswith("triton.language") or namespace.label.startswith("triton.language.extra")
        ]

    def _install(self, interpreter: ModuleType) -> None:
        """Wraps the interpreter's language patching: a device function call's patches are moved
        into the patches of the launch it runs in, which the launch restores when it ends."""
        patch_lang = interpreter._patch_lang
        local = self._local

        def patch_lang_for_the_launch(fn: Any) -> Any:
            scope = patch_lang(fn)
            if getattr(local, "launching", False):
                if local.scope is None:  # the launch's own, made before its programs run
                    local.scope = scope
                elif scope is not local.scope:
                    local.scope._changes.extend(scope._changes)
                    scope._changes.clear()
            return scope

        interpreter._patch_lang = patch_lang_for_the_launch
        builder = interpreter.interpreter_builder
        set_grid_dim = builder.set_grid_dim

        def set_grid_dim_then_compare(*grid: int) -> None:
            set_grid_dim(*grid)
            if getattr(local, "launching", False):  # the grid function and pre-run hooks have run
                self._check(self._unpatched)

        builder.set_grid_dim = set_grid_dim_then_compare

    @contextlib.contextmanager
    def launch(self) -> Iterator[None]:
        """One interpreted launch (bounds.py runs them one at a time): compared before it runs
        and after it returned, when the interpreter's own patches are not in effect, and, but
        for what those patches touch, once its grid is set: a grid function or pre-run hook
        that swapped an operation which then put itself back in the last program was seen by
        neither of the other two."""
        self._check(self._namespaces)
        self._local.scope, self._local.launching = None, True
        try:
            yield
        finally:
            self._local.scope, self._local.launching = None, False
            self._check(self._namespaces)

    def _check(self, namespaces: list[_Namespace]) -> None:
        for namespace in namespaces:
            replaced = namespace.replaced()
            if replaced:
                with self._lock:
                    self._found.update(replaced)

    def found(self) -> list[str]:
        """Every name found replaced at a launch so far."""
        with self._lock:
            return [f"{name} (at a kernel launch)" for name in sorted(self._found)]


class OperatorRecording:
    """Keeps PyTorch's operator recording on: profiles (the coverage on CPU) see an operator only
    while it is recorded, and ``torch.autograd._enable_record_function(False)`` would hide the
    operators run after it. The switch is replaced, before any candidate code runs, by one that
    leaves recording on and notes the attempt (``take``)."""

    _PLACES = ("torch._C._autograd", "torch.autograd")

    def __init__(self) -> None:
        self._attempts = 0
        self.patched: dict[str, Callable[..., Any]] = {}

    def install(self) -> None:
        recording = self

        def keep_recording(enable: bool) -> None:
            if not enable:
                recording._attempts += 1

        for place in self._PLACES:
            importlib.import_module(place)._enable_record_function = keep_recording
            self.patched[f"{place}._enable_record_function"] = keep_recording

    def take(self) -> list[str]:
        """A finding when the candidate tried to switch recording off since the last call."""
        attempts, self._attempts = self._attempts, 0
        if not attempts:
            return []
        return [
            "it switched PyTorch's operator recording off (torch.autograd._enable_record_function), "
            "which hides operators from profiles"
        ]

    def current_patches(self) -> dict[str, Any]:
        """The objects now in the patched places, to detect a candidate undoing them."""
        return {
            f"{place}._enable_record_function": getattr(importlib.import_module(place), "_enable_record_function", None)
            for place in self._PLACES
        }
