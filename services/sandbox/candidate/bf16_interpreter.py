"""bfloat16 arithmetic for Triton's CPU interpreter, as a GPU computes it.

NumPy has no bfloat16, so Triton 3.9's interpreter holds bfloat16 values as their uint16
bits; loads, stores, selects and bitcasts are right, but arithmetic, comparisons, reductions,
scans, ``tl.dot`` and casts other than to and from float32 then work on the bits as
integers, and a kernel that computes in bfloat16 (``a * x + y`` on bfloat16 loads) gives
garbage on CPU and the right answer on a GPU. Its casts to bfloat16 also truncate where the
GPU rounds to nearest even.

``install()`` makes the interpreter's builder compute every such operation on the values in
float32 and round each bfloat16 result to nearest even, which is what a GPU does for
bfloat16 arithmetic (an operation in float32, then one rounding); float16, float32 and
integer operations are left exactly as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import numpy as np

_INSTALLED: list[bool] = []

# Builder methods whose tensor arguments are values (not bits), with the position of the
# argument whose type the result has (bool data for comparisons): bfloat16 there means a
# bfloat16 result.
_VALUE_METHODS = {
    "binary_op": 0,
    "unary_op": 0,
    "ternary_op": 2,
    "create_fma": 2,
    "create_erf": 0,
    "create_rsqrt": 0,
    "create_dot": 2,
}


def to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits (uint16) as float32 values."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to nearest even bfloat16, as uint16 bits (NaN stays NaN)."""
    values = np.asarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    quiet_nan = ((bits >> np.uint32(16)) | np.uint32(0x0040)).astype(np.uint16)
    return np.where(np.isnan(values), quiet_nan, rounded)


def install() -> None:
    """Patches the interpreter's builder, reductions and scans in this process; call once,
    before candidate code runs (later calls change nothing)."""
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, ReduceOps, ScanOps, TensorHandle

    if _INSTALLED:
        return
    _INSTALLED.append(True)
    bf16, f32 = tl.bfloat16, tl.float32

    def is_bf16(value: Any) -> bool:
        return isinstance(value, TensorHandle) and value.dtype.scalar == bf16

    def widen(value: Any) -> Any:
        return TensorHandle(to_float32(value.data), f32) if is_bf16(value) else value

    def in_float32(original: Callable[..., Any], typed_by: int) -> Callable[..., Any]:
        @wraps(original)
        def method(builder: Any, *args: Any) -> Any:
            if not any(is_bf16(arg) for arg in args):
                return original(builder, *args)
            result = original(builder, *(widen(arg) for arg in args))
            if not is_bf16(args[typed_by]) or not isinstance(result, TensorHandle):
                return result
            if result.data.dtype == np.float32:
                return TensorHandle(to_bfloat16(result.data), bf16)
            # a comparison: bool values, labelled so (a later cast then converts values, not bits)
            return TensorHandle(result.data, tl.int1) if result.data.dtype == np.bool_ else result

        return method

    for name, typed_by in _VALUE_METHODS.items():
        setattr(InterpreterBuilder, name, in_float32(getattr(InterpreterBuilder, name), typed_by))

    cast_impl = InterpreterBuilder.cast_impl

    def cast(builder: Any, src: Any, dst_type: Any) -> Any:
        source, target = src.dtype.scalar, dst_type.scalar
        if source == bf16 and target != bf16:
            return cast_impl(builder, TensorHandle(to_float32(src.data), f32), dst_type)
        if target == bf16 and source != bf16:
            values = cast_impl(builder, src, f32) if source != f32 else src
            return TensorHandle(to_bfloat16(values.data), bf16)
        return cast_impl(builder, src, dst_type)

    InterpreterBuilder.cast_impl = cast  # type: ignore[method-assign]  # its cast entry points call it

    def over_values(original: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(original)
        def reduce(ops: Any, value: Any, *rest: Any, **options: Any) -> Any:
            if not isinstance(value, tl.core.tensor) or value.dtype.scalar != bf16:
                return original(ops, value, *rest, **options)
            widened = tl.core.tensor(TensorHandle(to_float32(value.handle.data), f32), value.type.with_element_ty(f32))
            results = original(ops, widened, *rest, **options)
            single = not isinstance(results, (tuple, list))
            narrowed = [_narrowed(result, tl, TensorHandle) for result in ([results] if single else results)]
            return narrowed[0] if single else type(results)(narrowed)

        return reduce

    ReduceOps.sum = over_values(ReduceOps.sum)  # type: ignore[method-assign]
    ReduceOps.min_max = over_values(ReduceOps.min_max)  # type: ignore[method-assign]
    ScanOps.cumsum = over_values(ScanOps.cumsum)  # type: ignore[method-assign]
    ScanOps.cumprod = over_values(ScanOps.cumprod)  # type: ignore[method-assign]


def _narrowed(result: Any, tl: Any, tensor_handle: type) -> Any:
    """A reduction's float32 result back in bfloat16 (indices stay as they are)."""
    if not isinstance(result, tl.core.tensor) or result.dtype.scalar != tl.float32:
        return result
    return tl.core.tensor(
        tensor_handle(to_bfloat16(result.handle.data), tl.bfloat16), result.type.with_element_ty(tl.bfloat16)
    )
