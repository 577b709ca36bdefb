"""NumPy equivalents of CUDA's libdevice for Triton's CPU interpreter.

Kernels call libdevice (``triton.language.extra.libdevice``, ``tl.extra.cuda.libdevice``)
for tanh, erf, pow and the like. Triton 3.9's interpreter cannot run them: the generic module
holds empty stubs that the GPU compiler maps onto the CUDA module, and the CUDA module's
functions emit calls into a bitcode library that only the GPU compiler links. In the
candidate's process on CPU, ``install()`` makes both modules' functions the CUDA ones called
with the interpreter's semantics (so that Triton's own type dispatch and broadcasting apply,
exactly as on a GPU), and gives the interpreter's builder the one operation it lacks,
``create_extern_elementwise``, computed here with NumPy from the libdevice symbol's meaning.

Results are correctly rounded where libdevice's are (the ``_rn``/``_rz``/``_rd``/``_ru``
arithmetic, conversions) and otherwise computed in float64 and rounded to the result type,
which is at least as accurate as libdevice. The few functions with no NumPy equivalent here
(Bessel functions other than I0) raise an error that says so.

The GPU compile check (gpu_compile.py) restores the original modules while it compiles.
"""

from __future__ import annotations

import importlib
import math
import re
import struct
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import wraps
from types import MappingProxyType
from typing import Any

import numpy as np

CUDA_MODULE = "triton.language.extra.cuda.libdevice"
STUB_MODULE = "triton.language.extra.libdevice"
UNSUPPORTED = frozenset({"j0", "j1", "y0", "y1", "jn", "yn", "cyl_bessel_i1"})

_Impl = Callable[[list[np.ndarray], np.dtype], np.ndarray]
_SQRT2 = math.sqrt(2.0)


class LibdeviceUnavailable(NotImplementedError):
    """A libdevice function with no CPU equivalent in the sandbox."""


# Exact rounding -------------------------------------------------------------------------


def _exact(x: np.ndarray) -> np.ndarray:
    """Every element as an exact rational (object array)."""
    return np.array(
        [Fraction(v) if math.isfinite(v) else math.nan for v in x.astype(np.float64).ravel().tolist()], dtype=object
    ).reshape(x.shape)


def _signs(values: np.ndarray) -> np.ndarray:
    """The sign of each exact value of an object array; 0 where it is not finite."""
    return np.array(
        [(v > 0) - (v < 0) if isinstance(v, Fraction) else 0 for v in values.ravel()], dtype=np.int8
    ).reshape(values.shape)


def _error_sign(exact: np.ndarray, rounded: np.ndarray) -> np.ndarray:
    """sign(exact - rounded) elementwise; 0 where either is not finite."""
    return _signs(_rational(lambda e, r: e - r)(exact, _exact(rounded)))


def _directed(rounded: np.ndarray, error_sign: np.ndarray, mode: str) -> np.ndarray:
    """Moves a round-to-nearest result one step where the exact value lies on the other side
    of it for the rounding mode (``rn``, ``rz``, ``rd``, ``ru``)."""
    if mode == "rn":
        return rounded
    if mode == "rd":
        down = error_sign < 0
        up = np.zeros_like(down)
    elif mode == "ru":
        up = error_sign > 0
        down = np.zeros_like(up)
    else:  # rz: towards zero
        down = (error_sign < 0) & (rounded > 0)
        up = (error_sign > 0) & (rounded < 0)
    result = rounded.copy()
    result[down] = np.nextafter(rounded[down], rounded.dtype.type(-np.inf))
    result[up] = np.nextafter(rounded[up], rounded.dtype.type(np.inf))
    return result


def _rational(op: Callable[..., Any]) -> Callable[..., np.ndarray]:
    def apply(*arrays: np.ndarray) -> np.ndarray:
        exact = [(a if a.dtype == object else _exact(a)).ravel() for a in arrays]
        out = [
            op(*values) if all(isinstance(v, Fraction) for v in values) else math.nan
            for values in zip(*exact, strict=False)
        ]
        return np.array(out, dtype=object).reshape(arrays[0].shape)

    return apply


def _nearest(op: str, args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    """Correctly rounded add/sub/mul/div/sqrt/rcp/fma in ``out``: IEEE float64 arithmetic
    rounded to float32 is correctly rounded for these operations; fma rounds once."""
    from triton._C.libtriton import interpreter as native

    wide = [a.astype(np.float64) if out == np.float32 else a.astype(out) for a in args]
    with np.errstate(all="ignore"):
        if op == "fma":
            operands = [a.astype(out) for a in np.broadcast_arrays(*args)]
            fma = getattr(native, "fma_fp32" if out == np.float32 else "fma_fp64", None)
            if fma is None:  # Triton before 3.7
                return _fma_from_exact(operands, out)
            return fma(*operands)
        result = {
            "add": lambda: wide[0] + wide[1],
            "sub": lambda: wide[0] - wide[1],
            "mul": lambda: wide[0] * wide[1],
            "div": lambda: wide[0] / wide[1],
            "sqrt": lambda: np.sqrt(wide[0]),
            "rcp": lambda: 1 / wide[0],
        }[op]()
    return np.asarray(result).astype(out)


def _fma_one(x: float, y: float, z: float, float32: bool) -> float:
    """x * y + z rounded once: exactly as a fraction, then to the nearest double; for a
    float32 result the double is rounded to odd (moved one step toward the exact value when
    that was inexact and left it even), which the cast to float32 then rounds correctly."""
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return x * y + z  # infinities and NaN follow the same rules unrounded
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if exact == 0:
        return x * y + z  # the product is then a double: this gives the zero's IEEE sign
    try:
        nearest = float(exact)
    except OverflowError:
        return math.copysign(math.inf, exact)
    if float32 and Fraction(nearest) != exact and struct.unpack("<q", struct.pack("<d", nearest))[0] & 1 == 0:
        nearest = math.nextafter(nearest, math.inf if exact > nearest else -math.inf)
    return nearest


def _fma_from_exact(operands: list[np.ndarray], out: np.dtype) -> np.ndarray:
    """Correctly rounded fma where Triton's interpreter has no native one."""
    float32 = out == np.float32
    one = np.frompyfunc(lambda x, y, z: _fma_one(float(x), float(y), float(z), float32), 3, 1)
    return np.asarray(one(*operands), dtype=np.float64).astype(out)


_EXACT_OPS: dict[str, Callable[..., Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b if b != 0 else math.nan,
    "rcp": lambda a: 1 / a if a != 0 else math.nan,
    "fma": lambda a, b, c: a * b + c,
}


def _arithmetic(op: str, mode: str) -> _Impl:
    def impl(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
        rounded = _nearest(op, args, out)
        if mode == "rn":
            return rounded
        if op == "sqrt":  # sign(sqrt(a) - r) is sign(a - r*r) for r >= 0
            return _directed(rounded, _signs(_rational(lambda a, r: a - r * r)(args[0], rounded)), mode)
        exact = _rational(_EXACT_OPS[op])(*np.broadcast_arrays(*args))
        return _directed(rounded, _error_sign(exact, rounded), mode)

    return impl


def _convert(kind: str, mode: str) -> _Impl:
    """float -> integer with a rounding mode (saturating, NaN -> 0, as PTX ``cvt``), and
    integer or float -> float correctly rounded in the mode."""

    def impl(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
        x = args[0]
        if kind == "to_int":
            rounding = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}[mode]
            info = np.iinfo(out)
            with np.errstate(all="ignore"):
                value = np.clip(rounding(x.astype(np.float64)), info.min, info.max)
            value = np.where(np.isnan(value), 0, value)
            # float64 cannot hold the int64 limits exactly: clip those in integers.
            result = np.array([min(max(int(v), info.min), info.max) for v in value.ravel().tolist()], dtype=out)
            return result.reshape(x.shape)
        rounded = x.astype(out)
        if mode == "rn":
            return rounded
        exact = np.array(
            [
                Fraction(int(v)) if x.dtype.kind in "iu" else (Fraction(v) if math.isfinite(v) else math.nan)
                for v in x.ravel().tolist()
            ],
            dtype=object,
        ).reshape(x.shape)
        return _directed(rounded, _error_sign(exact, rounded), mode)

    return impl


# Elementwise functions ------------------------------------------------------------------


def _float(fn: Callable[..., Any]) -> _Impl:
    """A float function computed in float64 and rounded to the result type."""

    def impl(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[a.astype(np.float64) for a in args])).astype(out)

    return impl


def _scalar(fn: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """A math-module function, elementwise, with its domain errors as NaN or infinity."""

    def safe(x: float) -> float:
        try:
            return fn(x)
        except ValueError:
            return math.nan
        except OverflowError:
            return math.inf

    return np.vectorize(safe, otypes=[np.float64])


def _erfinv(y: np.ndarray) -> np.ndarray:
    """Inverse error function: Giles' single-precision approximation, refined by Newton steps."""
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - y) * (1.0 + y))
        small = w < 5.0
        ws, wl = w - 2.5, np.sqrt(w) - 3.0
        ps = np.polyval(
            [
                2.81022636e-08,
                3.43273939e-07,
                -3.5233877e-06,
                -4.39150654e-06,
                0.00021858087,
                -0.00125372503,
                -0.00417768164,
                0.246640727,
                1.50140941,
            ],
            ws,
        )
        pl = np.polyval(
            [
                -0.000200214257,
                0.000100950558,
                0.00134934322,
                -0.00367342844,
                0.00573950773,
                -0.0076224613,
                0.00943887047,
                1.00167406,
                2.83297682,
            ],
            wl,
        )
        x = np.where(small, ps, pl) * y
        erf = _scalar(math.erf)
        for _ in range(3):
            x = x - (erf(x) - y) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
    x = np.where(y == 1, np.inf, np.where(y == -1, -np.inf, x))
    return np.where(np.abs(y) > 1, np.nan, x)


def _erfcinv(y: np.ndarray) -> np.ndarray:
    """Inverse complementary error function; Newton steps on erfc keep precision near 0 and 2."""
    y = np.asarray(y, dtype=np.float64)
    x = np.clip(np.nan_to_num(_erfinv(1.0 - y)), -27.0, 27.0)
    erfc = _scalar(math.erfc)
    with np.errstate(all="ignore"):
        for _ in range(4):
            step = (erfc(x) - y) / (-2 / math.sqrt(math.pi) * np.exp(-x * x))
            x = np.where(np.isfinite(step), x - step, x)
    x = np.where(y == 0, np.inf, np.where(y == 2, -np.inf, x))
    return np.where((y < 0) | (y > 2), np.nan, x)


def _erfcx(x: np.ndarray) -> np.ndarray:
    """exp(x^2) erfc(x), with its asymptotic series where erfc underflows."""
    erfc = _scalar(math.erfc)
    with np.errstate(all="ignore"):
        direct = np.exp(x * x) * erfc(x)
        inv = 1.0 / (x * x)
        series = (1 - 0.5 * inv + 0.75 * inv * inv - 1.875 * inv**3) / (x * math.sqrt(math.pi))
    return np.where(x > 25, series, direct)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _logb(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        exponent = np.frexp(x)[1].astype(np.float64) - 1
    return np.where(x == 0, -np.inf, np.where(np.isfinite(x), exponent, np.abs(x)))


def _ilogb(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    x = args[0]
    exponent = np.frexp(x)[1].astype(np.int64) - 1
    info = np.iinfo(np.int32)
    return np.where(
        x == 0, info.min, np.where(np.isnan(x), info.min, np.where(np.isinf(x), info.max, exponent))
    ).astype(out)


def _predicate(fn: Callable[[np.ndarray], np.ndarray]) -> _Impl:
    return lambda args, out: fn(args[0]).astype(out)


def _ldexp(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.ldexp(args[0].astype(np.float64), args[1].astype(np.int64)).astype(out)


def _nextafter(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    return np.nextafter(args[0].astype(out), args[1].astype(out))


def _remainder(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    return _scalar2(math.remainder)(args[0].astype(np.float64), args[1].astype(np.float64)).astype(out)


def _scalar2(fn: Callable[[float, float], float]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def safe(a: float, b: float) -> float:
        try:
            return fn(a, b)
        except (ValueError, ZeroDivisionError):
            return math.nan

    return np.vectorize(safe, otypes=[np.float64])


def _bits(kind: str) -> _Impl:
    """Reinterpretations between integer and float bit patterns."""

    def impl(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
        x = args[0]
        if kind == "same":
            return np.ascontiguousarray(x).view(out)
        if kind == "hilo":
            hi, lo = (a.astype(np.int64) & 0xFFFFFFFF for a in np.broadcast_arrays(args[0], args[1]))
            return ((hi << 32) | lo).astype(np.uint64).view(np.float64).astype(out)
        word = np.ascontiguousarray(x.astype(np.float64)).view(np.uint64)
        half = (word >> np.uint64(32)) if kind == "hi" else (word & np.uint64(0xFFFFFFFF))
        return half.astype(np.uint32).view(np.int32).astype(out)

    return impl


def _integer(fn: Callable[..., int]) -> _Impl:
    """An integer function on Python ints (exact at every width), given the arguments' dtype
    and wrapped to the result type."""

    def impl(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
        arrays = np.broadcast_arrays(*args)
        info = np.iinfo(out)
        values = [[int(v) for v in a.ravel().tolist()] for a in arrays]
        results = []
        for row in zip(*values, strict=False):
            value = fn(*row, arrays[0].dtype) & ((1 << info.bits) - 1)
            results.append(value - (1 << info.bits) if info.min < 0 and value > info.max else value)
        return np.array(results, dtype=out).reshape(arrays[0].shape)

    return impl


def _unsigned(value: int, dtype: np.dtype) -> int:
    return value & ((1 << (dtype.itemsize * 8)) - 1)


def _clz(x: int, dtype: np.dtype) -> int:
    return dtype.itemsize * 8 - _unsigned(x, dtype).bit_length()


def _brev(x: int, dtype: np.dtype) -> int:
    return int(format(_unsigned(x, dtype), f"0{dtype.itemsize * 8}b")[::-1], 2)


def _ffs(x: int, dtype: np.dtype) -> int:
    u = _unsigned(x, dtype)
    return (u & -u).bit_length()


def _mul24(a: int, b: int, dtype: np.dtype) -> int:
    """The low 24 bits of each operand (sign-extended for signed types), multiplied."""

    def low24(v: int) -> int:
        v &= 0xFFFFFF
        return v - (1 << 24) if dtype.kind == "i" and v >= 1 << 23 else v

    return low24(a) * low24(b)


def _byte_perm(x: int, y: int, selector: int, _dtype: np.dtype) -> int:
    """Byte i of the result is byte ``selector`` nibble i of the 8 bytes y:x."""
    source = (x & 0xFFFFFFFF) | ((y & 0xFFFFFFFF) << 32)
    return sum(((source >> (8 * ((selector >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))


def _rcp64h(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    """1/x from the upper 32 bits of x, with the lower 32 bits of the result cleared (PTX
    ``rcp.approx.ftz.f64``, which looks at nothing else)."""
    high = np.uint64(0xFFFFFFFF00000000)
    x = (np.ascontiguousarray(args[0].astype(np.float64)).view(np.uint64) & high).view(np.float64)
    with np.errstate(all="ignore"):
        return (np.ascontiguousarray(1.0 / x).view(np.uint64) & high).view(np.float64).astype(out)


def _llround(args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    return _convert("to_int", "rz")([_round_half_away(args[0].astype(np.float64))], out)


def _table() -> dict[str, _Impl]:
    table: dict[str, _Impl] = {
        "abs": lambda args, out: np.abs(args[0]).astype(out),
        "floor": _float(np.floor),
        "ceil": _float(np.ceil),
        "trunc": _float(np.trunc),
        "rint": _float(np.rint),
        "nearbyint": _float(np.rint),
        "round": _float(_round_half_away),
        "exp": _float(np.exp),
        "exp2": _float(np.exp2),
        "exp10": _float(lambda x: np.power(10.0, x)),
        "expm1": _float(np.expm1),
        "log": _float(np.log),
        "log2": _float(np.log2),
        "log10": _float(np.log10),
        "log1p": _float(np.log1p),
        "sqrt": _float(np.sqrt),
        "rsqrt": _float(lambda x: 1 / np.sqrt(x)),
        "rsqrt_rn": _float(lambda x: 1 / np.sqrt(x)),
        "cbrt": _float(np.cbrt),
        "rcbrt": _float(lambda x: 1 / np.cbrt(x)),
        "sin": _float(np.sin),
        "cos": _float(np.cos),
        "tan": _float(np.tan),
        "asin": _float(np.arcsin),
        "acos": _float(np.arccos),
        "atan": _float(np.arctan),
        "sinh": _float(np.sinh),
        "cosh": _float(np.cosh),
        "tanh": _float(np.tanh),
        "asinh": _float(np.arcsinh),
        "acosh": _float(np.arccosh),
        "atanh": _float(np.arctanh),
        "sinpi": _float(lambda x: np.sin(np.pi * np.fmod(x, 2.0))),
        "cospi": _float(lambda x: np.cos(np.pi * np.fmod(x, 2.0))),
        "erf": _float(_scalar(math.erf)),
        "erfc": _float(_scalar(math.erfc)),
        "erfcx": _float(_erfcx),
        "erfinv": _float(_erfinv),
        "erfcinv": _float(_erfcinv),
        "normcdf": _float(lambda x: 0.5 * _scalar(math.erfc)(-x / _SQRT2)),
        "normcdfinv": _float(lambda p: -_SQRT2 * _erfcinv(2 * p)),
        "lgamma": _float(_scalar(math.lgamma)),
        "tgamma": _float(_scalar(math.gamma)),
        "cyl_bessel_i0": _float(np.i0),
        "logb": _float(_logb),
        "ilogb": _ilogb,
        "atan2": _float(np.arctan2),
        "pow": _float(np.power),
        "hypot": _float(np.hypot),
        "rhypot": _float(lambda x, y: 1 / np.hypot(x, y)),
        "fmod": _float(np.fmod),
        "remainder": _remainder,
        "copysign": _float(np.copysign),
        "fdim": _float(lambda x, y: np.maximum(x - y, 0.0)),
        "nextafter": _nextafter,
        "ldexp": _ldexp,
        "scalbn": _ldexp,
        "norm3d": _float(lambda a, b, c: np.sqrt(a * a + b * b + c * c)),
        "rnorm3d": _float(lambda a, b, c: 1 / np.sqrt(a * a + b * b + c * c)),
        "norm4d": _float(lambda a, b, c, d: np.sqrt(a * a + b * b + c * c + d * d)),
        "rnorm4d": _float(lambda a, b, c, d: 1 / np.sqrt(a * a + b * b + c * c + d * d)),
        "saturatef": _float(lambda x: np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))),
        "fast_dividef": _float(lambda a, b: a / b),
        "isnan": _predicate(np.isnan),
        "isinf": _predicate(np.isinf),
        "signbit": _predicate(np.signbit),
        "finitef": _predicate(np.isfinite),
        "isfinited": _predicate(np.isfinite),
        "llrint": _convert("to_int", "rn"),
        "llround": _llround,
        "clz": _integer(_clz),
        "popc": _integer(lambda x, dtype: bin(_unsigned(x, dtype)).count("1")),
        "brev": _integer(_brev),
        "ffs": _integer(_ffs),
        "mulhi": _integer(lambda a, b, dtype: (a * b) >> (dtype.itemsize * 8)),
        "mul24": _integer(_mul24),
        "sad": _integer(lambda a, b, c, *_: abs(a - b) + c),
        "byte_perm": _integer(_byte_perm),
        "hadd": _integer(lambda a, b, *_: (a + b) >> 1),
        "rhadd": _integer(lambda a, b, *_: (a + b + 1) >> 1),
        "int_as_float": _bits("same"),
        "float_as_int": _bits("same"),
        "uint_as_float": _bits("same"),
        "float_as_uint": _bits("same"),
        "longlong_as_double": _bits("same"),
        "double_as_longlong": _bits("same"),
        "hiloint2double": _bits("hilo"),
        "double2hiint": _bits("hi"),
        "double2loint": _bits("lo"),
        "fma": _arithmetic("fma", "rn"),
        "rcp64h": _rcp64h,
    }
    for name in ("sinf", "cosf", "log2f", "logf", "expf", "tanf", "exp10f", "log10f", "powf"):
        table["fast_" + name] = table[name[:-1]]
    for mode in ("rn", "rz", "rd", "ru"):
        for op in ("add", "sub", "mul", "div", "rcp", "sqrt", "fma"):
            table[f"{op}_{mode}"] = _arithmetic(op, mode)
        for source in ("float", "double"):
            for target in ("int", "uint", "ll", "ull"):
                table[f"{source}2{target}_{mode}"] = _convert("to_int", mode)
        for source in ("int", "uint", "ll", "ull"):
            table[f"{source}2float_{mode}"] = _convert("to_float", mode)
            table[f"{source}2double_{mode}"] = _convert("to_float", mode)
        table[f"double2float_{mode}"] = _convert("to_float", mode)
    return table


# Read-only, like the symbol map ``install`` gives the builder: what libdevice computes on CPU
# must not change under a kernel (a red-team probe made ``tanh`` a Swish here); the integrity
# watch holds this module's names at every interpreted launch (integrity.InterpreterWatch).
IMPLEMENTATIONS: Mapping[str, _Impl] = MappingProxyType(_table())


def _symbols(module: Any) -> dict[str, str]:
    """libdevice symbol (``__nv_tanhf``) -> function name (``tanh``), from the module's source."""
    import inspect

    symbols = {}
    for name, fn in vars(module).items():
        if callable(fn) and getattr(fn, "__module__", None) == module.__name__:
            for symbol in re.findall(r'"(__nv_\w+)"', inspect.getsource(fn)):
                symbols[symbol] = name
    return symbols


def evaluate(name: str, args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    """libdevice function ``name`` on NumPy arrays, with its result in ``out``."""
    if name in UNSUPPORTED or name not in IMPLEMENTATIONS:
        raise LibdeviceUnavailable(
            f"libdevice.{name} has no CPU equivalent in the sandbox; this kernel can only be judged on a GPU"
        )
    return np.asarray(IMPLEMENTATIONS[name]([np.asarray(a) for a in args], np.dtype(out))).reshape(
        np.broadcast_shapes(*[np.shape(a) for a in args])
    )


_ORIGINALS: dict[str, dict[str, Any]] = {}


def originals() -> dict[str, dict[str, Any]]:
    """The functions ``install()`` replaced, by module name and function name (empty before)."""
    return _ORIGINALS


def install() -> None:
    """Makes libdevice run under the interpreter in this process; call once, before candidate
    code runs (later calls change nothing)."""
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype, interpreter_builder, interpreter_semantic

    if _ORIGINALS:
        return
    cuda, stub = importlib.import_module(CUDA_MODULE), importlib.import_module(STUB_MODULE)
    symbols = MappingProxyType(_symbols(cuda))

    def create_extern_elementwise(
        lib_name: str, lib_path: str, symbol: str, args: list[Any], ret_type: Any, is_pure: bool
    ) -> Any:
        scalar = ret_type.scalar
        return TensorHandle(
            evaluate(symbols.get(symbol, symbol), [a.data for a in args], _get_np_dtype(scalar)), scalar
        )

    def interpreted(fn: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(fn)
        def call(*args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
            return fn(*args, _semantic=interpreter_semantic, **kwargs)

        return call

    functions = {
        name: fn for name, fn in vars(cuda).items() if callable(fn) and getattr(fn, "__module__", None) == CUDA_MODULE
    }
    _ORIGINALS[CUDA_MODULE] = dict(functions)
    _ORIGINALS[STUB_MODULE] = {name: getattr(stub, name) for name in functions if hasattr(stub, name)}
    for name, fn in functions.items():
        replacement = interpreted(fn)
        setattr(cuda, name, replacement)
        if name in _ORIGINALS[STUB_MODULE]:
            setattr(stub, name, replacement)
    interpreter_builder.create_extern_elementwise = create_extern_elementwise
