"""The Python functions registered as operator implementations through
``torch.library.Library.impl`` (the API beside ``custom_op``), kept so that the PyTorch trace
can trace inside them as it does inside custom ops (candidate/trace.py).

The dispatcher holds such a function where Python cannot read it back, so an operator whose
body runs an own kernel looked opaque: its results counted as the kernels', and PyTorch work
inside it went unseen (a red-team probe computed a whole GEMM, bias and ReLU in one, with a
kernel squaring the weight beside it: `CORRECT`, coverage 0.11). ``install`` wraps
``Library.impl`` before any candidate code runs and notes each function with its operator
and dispatch key; the wrapper is in the harness's integrity watch. Registrations below
``Library.impl`` (its C++ handle) stay opaque, and the docs say so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# Dispatch keys whose Python bodies serve a device, most specific first; after them, a body
# registered for any key but those that only describe (shapes, autograd) is taken.
_KEYS = {"cpu": ("CPU",), "cuda": ("CUDA",)}
_DEVICE_KEYS = ("CPU", "CUDA")  # another device's body is not this one's
_ANY_DEVICE = ("CompositeExplicitAutograd", "CompositeImplicitAutograd", "")
_DESCRIBING = ("Meta", "Autograd", "ADInplaceOrView", "Functionalize", "Python", "Fake")


class LibraryBodies:
    """The Python implementations registered through ``Library.impl``, by operator."""

    def __init__(self) -> None:
        self._bodies: dict[tuple[str, str], Callable[..., Any]] = {}
        self._wrapper: Callable[..., Any] | None = None

    def install(self) -> None:
        """Wraps ``torch.library.Library.impl`` (once)."""
        if self._wrapper is not None:
            return
        original = torch.library.Library.impl
        bodies = self._bodies

        def impl(library: Any, op_name: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(library, op_name, fn, *args, **kwargs)
            key = args[0] if args else kwargs.get("dispatch_key", "")
            if callable(fn) and not kwargs.get("with_keyset", False):
                bodies[(_qualified(library, op_name), key or library.dispatch_key)] = fn
            return result

        torch.library.Library.impl = impl  # type: ignore[method-assign]
        self._wrapper = impl

    def current_patches(self) -> dict[str, Any]:
        """The object now in the patched place, to detect a candidate undoing the wrapper."""
        return {"torch.library.Library.impl": torch.library.Library.impl}

    def body(self, operator: str, device_type: str | None) -> Callable[..., Any] | None:
        """The Python function serving ``operator`` ("namespace::name") on ``device_type``."""
        for key in (*_KEYS.get(device_type or "", ()), *_ANY_DEVICE):
            found = self._bodies.get((operator, key))
            if found is not None:
                return found
        others = [
            fn
            for (name, key), fn in self._bodies.items()
            if name == operator and not key.startswith(_DESCRIBING) and key not in _DEVICE_KEYS
        ]
        return others[0] if others else None


def _qualified(library: Any, op_name: Any) -> str:
    """The "namespace::name" of an operator given as an OpOverload or as "name[.overload]"."""
    schema = getattr(op_name, "_schema", None)
    if schema is not None:
        return str(schema.name)
    name = str(op_name).split(".")[0]
    return name if "::" in name else f"{library.ns}::{name}"
