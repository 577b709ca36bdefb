"""Task families: KernelBench-format tasks generated from templates, each with a Triton solution.

The built-in suite has a few dozen tasks, too few to teach a model the shape of an answer by
supervised fine-tuning or to hold whole kinds of task out. Here every family is one template
(an elementwise op, a broadcast op, a reduction, a normalisation) instantiated with a few
parameters (slopes, bounds, eps, reduced dimension) and sizes, so the data grows without
hand-written files. Each task is a reference module in the built-in format (``class Model``,
module-level size constants, ``get_inputs``, ``get_init_inputs``) plus a ``ModelNew`` whose work
is done by Triton kernels written for any shape (the sandbox shrinks and resizes the sizes
and feeds float16 inputs); ``python -m services.trainer.families --check`` has the sandbox
judge every one of them.

Names are ``fam_<op>[_<parameters>]_<sizes>``, e.g. ``fam_leaky_relu_0p05_16x1024``: the
prefix keeps them apart from the built-in ``l1_``/``l2_`` names and from KernelBench's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache

from drkernel.config import load_settings
from drkernel.logs import configure_logging
from drkernel.sections import LogSettings, SecuritySettings
from drkernel.v1 import common_pb2
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import judge_with_progress, local_sandbox

PREFIX = "fam_"
_DEVICES = {"auto": common_pb2.DEVICE_UNSPECIFIED, "cpu": common_pb2.DEVICE_CPU, "cuda": common_pb2.DEVICE_CUDA}


@dataclass(frozen=True)
class FamilyTask:
    """One generated task: the reference module the policy sees and a correct Triton solution."""

    name: str
    family: str
    reference: str
    solution: str


# ----- source assembly ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Arg:
    """A constructor argument of Model and ModelNew and the module-level constant that
    ``get_init_inputs`` passes for it."""

    name: str
    annotation: str
    constant: str
    description: str


@dataclass(frozen=True)
class _Module:
    """What a reference and its solution share: the constructor, the forward signature and the
    module tail (size constants, ``get_inputs``, ``get_init_inputs``)."""

    args: tuple[_Arg, ...]
    init_body: tuple[str, ...]  # statements after super().__init__(), the same in both modules
    inputs: tuple[tuple[str, str, str], ...]  # (name, constructor expression, forward doc)
    constants: tuple[tuple[str, str], ...]  # module-level (name, value): sizes, then arguments

    @property
    def signature(self) -> str:
        return "".join(f", {a.name}: {a.annotation}" for a in self.args)

    @property
    def forward_signature(self) -> str:
        return ", ".join(f"{name}: torch.Tensor" for name, _, _ in self.inputs)


def _call(head: str, args: Sequence[str], indent: int = 8, tail: str = "") -> list[str]:
    """``head(args)tail`` on one line, or the arguments wrapped on lines of their own when it
    would pass 100 columns (the generated code should read like code people write)."""
    line = f"{head}({', '.join(args)}){tail}"
    if indent + len(line) <= 100:
        return [line]
    lines, current = [f"{head}("], ""
    for arg in args:
        if current and indent + 4 + len(current) + len(arg) + 2 > 100:
            lines.append(f"    {current.rstrip()}")
            current = ""
        current += f"{arg}, "
    return [*lines, f"    {current.rstrip()}", f"){tail}"]


def _indent(lines: Sequence[str], spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else "" for line in lines)


def _init_lines(module: _Module) -> list[str]:
    return ["super().__init__()", *module.init_body]


def _reference(module: _Module, summary: Sequence[str], returns: str, expression: str) -> str:
    """A reference module in the built-in suite's layout and docstring style."""
    init_doc: list[str] = []
    if module.args:
        init_doc = ['"""', "Args:", *(f"    {a.name} ({a.annotation}): {a.description}" for a in module.args), '"""']
    forward_doc = [
        '"""',
        "Args:",
        *(f"    {name} (torch.Tensor): {doc}" for name, _, doc in module.inputs),
        "",
        "Returns:",
        f"    torch.Tensor: {returns}",
        '"""',
    ]
    constants = [f"{name} = {value}" for name, value in module.constants]
    inputs = [f"{name} = {constructor}" for name, constructor, _ in module.inputs]
    names = ", ".join(name for name, _, _ in module.inputs)
    init_inputs = ", ".join(a.constant for a in module.args)
    return "\n".join(
        [
            "import torch",
            "import torch.nn as nn",
            "",
            "",
            "class Model(nn.Module):",
            '    """',
            _indent(summary, 4),
            '    """',
            "",
            f"    def __init__(self{module.signature}):",
            _indent([*init_doc, *_init_lines(module)], 8),
            "",
            f"    def forward(self, {module.forward_signature}) -> torch.Tensor:",
            _indent([*forward_doc, f"return {expression}"], 8),
            "",
            "",
            *constants,
            "",
            "",
            "def get_inputs():",
            _indent([*inputs, f"return [{names}]"], 4),
            "",
            "",
            "def get_init_inputs():",
            f"    return [{init_inputs}]",
            "",
        ]
    )


_SOLUTION_HEAD = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) in plain Python: cheaper per launch than triton.cdiv."""
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (n - 1).bit_length()
'''


def _solution(module: _Module, doc: str, kernel: str, forward: Sequence[str]) -> str:
    """A ModelNew module: the kernel, then the same constructor as the reference and a forward
    that launches the kernel."""
    return "\n".join(
        [
            f'"""{doc}"""',
            "",
            _SOLUTION_HEAD,
            "",
            kernel.strip("\n"),
            "",
            "",
            "class ModelNew(nn.Module):",
            f"    def __init__(self{module.signature}):",
            _indent(_init_lines(module), 8),
            "",
            f"    def forward(self, {module.forward_signature}) -> torch.Tensor:",
            _indent(forward, 8),
            "",
        ]
    )


_SIZE_NAMES = {1: ("dim",), 2: ("batch_size", "dim"), 3: ("batch_size", "seq_len", "dim")}


def _sized(shape: tuple[int, ...]) -> tuple[tuple[tuple[str, str], ...], str]:
    """The size constants of a shape and the ``torch.randn`` call over them."""
    names = _SIZE_NAMES[len(shape)]
    return tuple((name, str(size)) for name, size in zip(names, shape, strict=True)), f"torch.randn({', '.join(names)})"


def _shape_name(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def _number(value: float) -> str:
    """A float as a name fragment: 0.05 -> 0p05, -0.5 -> m0p5, 6.0 -> 6."""
    return f"{value:g}".replace("-", "m").replace(".", "p")


def _float_args(
    names: Sequence[tuple[str, str]], values: Sequence[float]
) -> tuple[tuple[_Arg, ...], tuple[tuple[str, str], ...]]:
    """Float constructor arguments, each passed from a module-level constant of its own name."""
    args = tuple(_Arg(name, "float", name, doc) for name, doc in names)
    return args, tuple((name, repr(float(v))) for (name, _), v in zip(names, values, strict=True))


# ----- elementwise unary ----------------------------------------------------------------------

_TANH_OF_U = (
    "e = tl.exp(-2.0 * tl.abs(u))",
    "t = (1.0 - e) / (1.0 + e)",
    "t = tl.where(u < 0.0, -t, t)",
)
_SOFTPLUS_OF_X = ("sp = tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))",)


@dataclass(frozen=True)
class _Unary:
    """y = f(x) elementwise: the reference's PyTorch expression and the kernel's float32
    statements that set ``y`` from ``x`` (and the float constructor arguments, by name)."""

    family: str
    summary: str
    torch_expr: str
    triton: tuple[str, ...]
    params: tuple[tuple[str, str], ...] = ()
    values: tuple[tuple[float, ...], ...] = ((),)


_UNARY = (
    _Unary("relu", "ReLU: out = max(x, 0).", "torch.relu(x)", ("y = tl.where(x < 0.0, 0.0, x)",)),
    _Unary(
        "leaky_relu",
        "LeakyReLU: out = x if x >= 0 else negative_slope * x.",
        "torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)",
        ("y = tl.where(x >= 0.0, x, x * negative_slope)",),
        (("negative_slope", "Slope of the negative part."),),
        ((0.01,), (0.05,), (0.1,), (0.2,)),
    ),
    _Unary(
        "sigmoid",
        "Sigmoid: out = 1 / (1 + exp(-x)).",
        "torch.sigmoid(x)",
        ("e = tl.exp(-tl.abs(x))", "y = tl.where(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))"),
    ),
    _Unary("tanh", "Hyperbolic tangent: out = tanh(x).", "torch.tanh(x)", ("u = x", *_TANH_OF_U, "y = t")),
    _Unary(
        "silu",
        "SiLU (swish): out = x * sigmoid(x).",
        "torch.nn.functional.silu(x)",
        ("e = tl.exp(-tl.abs(x))", "s = tl.where(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))", "y = x * s"),
    ),
    _Unary(
        "gelu_tanh",
        "GELU, tanh approximation: out = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).",
        'torch.nn.functional.gelu(x, approximate="tanh")',
        ("u = 0.7978845608028654 * (x + 0.044715 * x * x * x)", *_TANH_OF_U, "y = 0.5 * x * (1.0 + t)"),
    ),
    _Unary(
        "gelu_erf",
        "GELU, exact: out = 0.5 * x * (1 + erf(x / sqrt(2))).",
        "torch.nn.functional.gelu(x)",
        ("y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))",),
    ),
    _Unary("abs", "Absolute value: out = |x|.", "torch.abs(x)", ("y = tl.abs(x)",)),
    _Unary("square", "Square: out = x * x.", "x * x", ("y = x * x",)),
    _Unary(
        "clamp",
        "Clamp: out = min(max(x, min_val), max_val).",
        "torch.clamp(x, min=self.min_val, max=self.max_val)",
        ("y = tl.minimum(tl.maximum(x, min_val), max_val)",),
        (("min_val", "Lower bound."), ("max_val", "Upper bound.")),
        ((-1.0, 1.0), (-0.5, 0.5), (0.0, 6.0), (-2.0, 0.5)),
    ),
    _Unary("exp", "Exponential: out = exp(x).", "torch.exp(x)", ("y = tl.exp(x)",)),
    _Unary(
        "softplus",
        "Softplus: out = log(1 + exp(x)).",
        "torch.nn.functional.softplus(x)",
        (*_SOFTPLUS_OF_X, "y = sp"),
    ),
    _Unary(
        "logsigmoid",
        "Log-sigmoid: out = log(1 / (1 + exp(-x))).",
        "torch.nn.functional.logsigmoid(x)",
        ("y = tl.minimum(x, 0.0) - tl.log(1.0 + tl.exp(-tl.abs(x)))",),
    ),
    _Unary(
        "elu",
        "ELU: out = x if x > 0 else alpha * (exp(x) - 1).",
        "torch.nn.functional.elu(x, alpha=self.alpha)",
        ("y = tl.where(x > 0.0, x, alpha * (tl.exp(tl.minimum(x, 0.0)) - 1.0))",),
        (("alpha", "Scale of the negative part."),),
        ((1.0,), (0.5,)),
    ),
    _Unary(
        "selu",
        "SELU: out = scale * (x if x > 0 else alpha * (exp(x) - 1)) with the fixed SELU constants.",
        "torch.nn.functional.selu(x)",
        (
            "n = 1.6732632423543772 * (tl.exp(tl.minimum(x, 0.0)) - 1.0)",
            "y = 1.0507009873554805 * tl.where(x > 0.0, x, n)",
        ),
    ),
    _Unary(
        "hardsigmoid",
        "Hard sigmoid: out = clamp(x / 6 + 1/2, 0, 1).",
        "torch.nn.functional.hardsigmoid(x)",
        ("y = tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0",),
    ),
    _Unary(
        "hardswish",
        "Hard swish: out = x * clamp(x + 3, 0, 6) / 6.",
        "torch.nn.functional.hardswish(x)",
        ("y = x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0",),
    ),
    _Unary(
        "softsign",
        "Softsign: out = x / (1 + |x|).",
        "torch.nn.functional.softsign(x)",
        ("y = x / (1.0 + tl.abs(x))",),
    ),
    _Unary(
        "mish",
        "Mish: out = x * tanh(softplus(x)).",
        "torch.nn.functional.mish(x)",
        (*_SOFTPLUS_OF_X, "u = sp", *_TANH_OF_U, "y = x * t"),
    ),
    _Unary(
        "hardshrink",
        "Hard shrink: out = x if |x| > lambd else 0.",
        "torch.nn.functional.hardshrink(x, lambd=self.lambd)",
        ("y = tl.where(tl.abs(x) > lambd, x, 0.0)",),
        (("lambd", "Threshold below which values become 0."),),
        ((0.5,), (1.0,)),
    ),
)
_ELEMENTWISE_SHAPES = ((16, 1024), (64, 512), (8, 32, 256))


def _elementwise_forward(kernel: str, scalars: Sequence[str]) -> list[str]:
    """ModelNew.forward of a one-output elementwise kernel over the flattened input x."""
    return [
        "x = x.contiguous()",
        "out = torch.empty_like(x)",
        "n = x.numel()",
        "block = min(1024, next_pow2(n))",
        *_call(f"{kernel}[(cdiv(n, block),)]", ["x", "out", "n", *scalars, "BLOCK_SIZE=block", "num_warps=4"]),
        "return out",
    ]


def _unary_tasks() -> Iterator[FamilyTask]:
    for op in _UNARY:
        for values in op.values:
            args, values_constants = _float_args(op.params, values)
            suffix = "".join(f"_{_number(v)}" for v in values)
            for shape in _ELEMENTWISE_SHAPES:
                constants, randn = _sized(shape)
                module = _Module(
                    args,
                    tuple(f"self.{a.name} = {a.name}" for a in args),
                    (("x", randn, "Input tensor of any shape."),),
                    (*constants, *values_constants),
                )
                params = "".join(f", {a.name}" for a in args)
                kernel = f"""
@triton.jit
def {op.family}_kernel(x_ptr, out_ptr, n_elements{params}, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
{_indent(op.triton, 4)}
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)
"""
                forward = _elementwise_forward(f"{op.family}_kernel", [f"float(self.{a.name})" for a in args])
                yield FamilyTask(
                    f"{PREFIX}{op.family}{suffix}_{_shape_name(shape)}",
                    op.family,
                    _reference(module, [op.summary], "The result, same shape as x.", op.torch_expr),
                    _solution(
                        module,
                        f"Triton {op.family}: one masked elementwise pass over the flattened input.",
                        kernel,
                        forward,
                    ),
                )


# ----- broadcast binary -----------------------------------------------------------------------

# op -> (PyTorch expression of {a} and {b}, kernel expression of x and y, formula of {a} and {b})
_BINARY = {
    "add": ("{a} + {b}", "x + y", "{a} + {b}"),
    "sub": ("{a} - {b}", "x - y", "{a} - {b}"),
    "mul": ("{a} * {b}", "x * y", "{a} * {b}"),
    "maximum": ("torch.maximum({a}, {b})", "tl.maximum(x, y)", "max({a}, {b})"),
    "minimum": ("torch.minimum({a}, {b})", "tl.minimum(x, y)", "min({a}, {b})"),
}
_BINARY_SHAPES = ((32, 1024), (128, 256))
_SCALE_SHIFTS = ((2.0, 0.5), (0.5, -1.0), (-1.5, 0.25), (3.0, -2.0))


def _binary_kernel(name: str, expression: str, y_index: str) -> str:
    return f"""
@triton.jit
def {name}(x_ptr, y_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + {y_index}, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, ({expression}).to(out_ptr.dtype.element_ty), mask=mask)
"""


def _binary_tasks() -> Iterator[FamilyTask]:
    for op, (torch_expr, triton_expr, formula) in _BINARY.items():
        for shape in _BINARY_SHAPES:
            constants, randn = _sized(shape)
            x = ("x", randn, "Matrix of shape (batch_size, dim).")
            # A learned bias row (one value per column), broadcast over the batch.
            row = _Module(
                (_Arg("dim", "int", "dim", "Size of the last dimension (the bias length)."),),
                ("self.bias = nn.Parameter(torch.randn(dim))",),
                (x,),
                constants,
            )
            kernel = _binary_kernel(f"{op}_row_kernel", triton_expr, "offsets % n_cols")
            forward = [
                "x = x.contiguous()",
                "bias = self.bias.contiguous()",
                "out = torch.empty_like(x)",
                "n = x.numel()",
                "block = min(1024, next_pow2(n))",
                *_call(
                    f"{op}_row_kernel[(cdiv(n, block),)]",
                    ["x", "bias", "out", "n", "bias.numel()", "BLOCK_SIZE=block", "num_warps=4"],
                ),
                "return out",
            ]
            yield FamilyTask(
                f"{PREFIX}{op}_row_{_shape_name(shape)}",
                f"{op}_row",
                _reference(
                    row,
                    [
                        f"Combines every row of x with a learned bias row: out[i, j] = "
                        f"{formula.format(a='x[i, j]', b='bias[j]')}."
                    ],
                    "The result, shape (batch_size, dim).",
                    torch_expr.format(a="x", b="self.bias"),
                ),
                _solution(row, f"Triton {op} with a bias row: each element reads its column's bias.", kernel, forward),
            )
            # A per-row column input, broadcast over the columns.
            col = _Module(
                (), (), (x, ("y", "torch.randn(batch_size, 1)", "Column of shape (batch_size, 1).")), constants
            )
            kernel = _binary_kernel(f"{op}_col_kernel", triton_expr, "offsets // n_cols")
            forward = [
                "x = x.contiguous()",
                "y = y.contiguous()",
                "out = torch.empty_like(x)",
                "n = x.numel()",
                "block = min(1024, next_pow2(n))",
                *_call(
                    f"{op}_col_kernel[(cdiv(n, block),)]",
                    ["x", "y", "out", "n", "x.shape[-1]", "BLOCK_SIZE=block", "num_warps=4"],
                ),
                "return out",
            ]
            yield FamilyTask(
                f"{PREFIX}{op}_col_{_shape_name(shape)}",
                f"{op}_col",
                _reference(
                    col,
                    [
                        f"Combines every row of x with that row's entry of y: out[i, j] = "
                        f"{formula.format(a='x[i, j]', b='y[i, 0]')}."
                    ],
                    "The result, shape (batch_size, dim).",
                    torch_expr.format(a="x", b="y"),
                ),
                _solution(col, f"Triton {op} with a column: each element reads its row's value.", kernel, forward),
            )
    names = (("scale", "Factor every element is multiplied by."), ("shift", "Value added after scaling."))
    for values in _SCALE_SHIFTS:
        args, values_constants = _float_args(names, values)
        for shape in _ELEMENTWISE_SHAPES[::2]:
            constants, randn = _sized(shape)
            module = _Module(
                args,
                ("self.scale = scale", "self.shift = shift"),
                (("x", randn, "Input tensor of any shape."),),
                (*constants, *values_constants),
            )
            kernel = """
@triton.jit
def scale_shift_kernel(x_ptr, out_ptr, n_elements, scale, shift, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x * scale + shift).to(out_ptr.dtype.element_ty), mask=mask)
"""
            forward = _elementwise_forward("scale_shift_kernel", ["float(self.scale)", "float(self.shift)"])
            yield FamilyTask(
                f"{PREFIX}scale_shift_{_number(values[0])}_{_number(values[1])}_{_shape_name(shape)}",
                "scale_shift",
                _reference(
                    module,
                    ["Scales and shifts every element by constants: out = x * scale + shift."],
                    "The result, same shape as x.",
                    "x * self.scale + self.shift",
                ),
                _solution(module, "Triton scale and shift: one fused multiply-add pass.", kernel, forward),
            )


# ----- reductions along a dimension -----------------------------------------------------------


@dataclass(frozen=True)
class _Reduction:
    """Reduce one dimension away: the accumulator's start, how a tile joins it, how the
    accumulator collapses to one value per output, and the final touch."""

    family: str
    summary: str
    torch_expr: str
    start: str
    combine: str  # new acc from acc and the tile x
    collapse: str  # tl.sum / tl.max / tl.min over the reduced axis
    finish: str  # of `total` (and reduce_size)


_REDUCTIONS = (
    _Reduction(
        "sum",
        "Sums over one dimension, dropping it: out = x.sum(dim).",
        "torch.sum(x, dim=self.dim)",
        "0.0",
        "acc + x",
        "tl.sum",
        "total",
    ),
    _Reduction(
        "mean",
        "Averages over one dimension, dropping it: out = x.mean(dim).",
        "torch.mean(x, dim=self.dim)",
        "0.0",
        "acc + x",
        "tl.sum",
        "total / reduce_size",
    ),
    _Reduction(
        "max",
        "Maximum over one dimension, dropping it: out = x.max(dim).values.",
        "torch.max(x, dim=self.dim).values",
        'float("-inf")',
        "tl.maximum(acc, x)",
        "tl.max",
        "total",
    ),
    _Reduction(
        "min",
        "Minimum over one dimension, dropping it: out = x.min(dim).values.",
        "torch.min(x, dim=self.dim).values",
        'float("inf")',
        "tl.minimum(acc, x)",
        "tl.min",
        "total",
    ),
    _Reduction(
        "l2norm",
        "Euclidean norm over one dimension, dropping it: out = sqrt((x ** 2).sum(dim)).",
        "torch.linalg.vector_norm(x, dim=self.dim)",
        "0.0",
        "acc + x * x",
        "tl.sum",
        "tl.sqrt(total)",
    ),
)
_REDUCTION_CASES = (((64, 512), 1), ((256, 128), 1), ((128, 96), 0), ((16, 64, 96), 1), ((16, 64, 96), 2))


def _reduction_tasks() -> Iterator[FamilyTask]:
    for op in _REDUCTIONS:
        for shape, dim in _REDUCTION_CASES:
            constants, randn = _sized(shape)
            module = _Module(
                (_Arg("dim", "int", "reduce_dim", "Dimension to reduce over."),),
                ("self.dim = dim",),
                (("x", randn, f"Input of shape ({', '.join(name for name, _ in constants)})."),),
                (*constants, ("reduce_dim", str(dim))),
            )
            # The input is viewed as (outer, reduce_size, inner); each program owns BLOCK_P
            # outputs and walks the reduced axis in BLOCK_R steps.
            kernel = f"""
@triton.jit
{
                _indent(
                    _call(
                        f"def {op.family}_dim_kernel",
                        [
                            "x_ptr",
                            "out_ptr",
                            "n_out",
                            "reduce_size",
                            "inner",
                            "BLOCK_R: tl.constexpr",
                            "BLOCK_P: tl.constexpr",
                        ],
                        0,
                        ":",
                    ),
                    0,
                )
            }
    outputs = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    out_mask = outputs < n_out
    o = outputs.to(tl.int64)
    start = (o // inner) * reduce_size * inner + o % inner
    acc = tl.full([BLOCK_R, BLOCK_P], {op.start}, tl.float32)
    for r0 in range(0, reduce_size, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        mask = (r[:, None] < reduce_size) & out_mask[None, :]
        x = tl.load(x_ptr + start[None, :] + r[:, None].to(tl.int64) * inner, mask=mask, other={op.start})
        x = x.to(tl.float32)
        acc = {op.combine}
    total = {op.collapse}(acc, axis=0){"" if op.finish == "total" else f"{chr(10)}    total = {op.finish}"}
    tl.store(out_ptr + outputs, total.to(out_ptr.dtype.element_ty), mask=out_mask)
"""
            forward = [
                "x = x.contiguous()",
                "dim = self.dim % x.dim()",
                "outer = 1",
                "for size in x.shape[:dim]:",
                "    outer *= size",
                "inner = 1",
                "for size in x.shape[dim + 1 :]:",
                "    inner *= size",
                "reduce_size = x.shape[dim]",
                "out = torch.empty(x.shape[:dim] + x.shape[dim + 1 :], dtype=x.dtype, device=x.device)",
                "n_out = outer * inner",
                "# Tiles of at most 2048 elements, long along the contiguous axis (coalesced loads).",
                "if inner == 1:",
                "    block_r = min(next_pow2(reduce_size), 1024)",
                "    block_p = min(next_pow2(n_out), max(1, 2048 // block_r))",
                "else:",
                "    block_p = min(next_pow2(n_out), 128)",
                "    block_r = min(next_pow2(reduce_size), max(1, 2048 // block_p))",
                *_call(
                    f"{op.family}_dim_kernel[(cdiv(n_out, block_p),)]",
                    ["x", "out", "n_out", "reduce_size", "inner", "BLOCK_R=block_r", "BLOCK_P=block_p", "num_warps=4"],
                ),
                "return out",
            ]
            yield FamilyTask(
                f"{PREFIX}{op.family}_dim{dim}_{_shape_name(shape)}",
                op.family,
                _reference(module, [op.summary], "The reduction, with dimension `dim` removed.", op.torch_expr),
                _solution(
                    module, f"Triton {op.family} over one dimension of an (outer, reduce, inner) view.", kernel, forward
                ),
            )


# ----- normalisations over the last dimension -------------------------------------------------

_ROW_FORWARD_HEAD = (
    "x = x.contiguous()",
    "out = torch.empty_like(x)",
    "n_cols = x.shape[-1]",
    "n_rows = x.numel() // n_cols",
    "block_n = min(next_pow2(n_cols), 1024)",
    "block_m = min(next_pow2(n_rows), max(1, 2048 // block_n))",
)
# Each program owns BLOCK_M rows and walks them in BLOCK_N column chunks, once per statistic.
_ROW_KERNEL_HEAD = """
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_start = rows.to(tl.int64)[:, None] * n_cols
"""


def _row_loop(body: Sequence[str], other: str = "0.0") -> str:
    """A loop over the column chunks that loads the tile ``x`` (float32) and runs ``body``."""
    return "\n".join(
        [
            "    for c0 in range(0, n_cols, BLOCK_N):",
            "        cols = c0 + tl.arange(0, BLOCK_N)",
            "        col_mask = cols < n_cols",
            "        mask = row_mask[:, None] & col_mask[None, :]",
            f"        x = tl.load(x_ptr + row_start + cols[None, :], mask=mask, other={other}).to(tl.float32)",
            _indent(body, 8),
        ]
    )


_ROW_PARAMS = ("n_rows", "n_cols", "BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr")
_STORE = "tl.store(out_ptr + row_start + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)"


def _softmax_kernel(name: str, log: bool) -> str:
    output = (
        "y = x - row_max[:, None] - tl.log(row_sum)[:, None]"
        if log
        else "y = tl.exp(x - row_max[:, None]) / row_sum[:, None]"
    )
    return "\n".join(
        [
            "@triton.jit",
            *_call(f"def {name}", ["x_ptr", "out_ptr", *_ROW_PARAMS], 0, ":"),
            _ROW_KERNEL_HEAD.strip("\n"),
            '    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)',
            _row_loop(["row_max = tl.maximum(row_max, tl.max(x, axis=1))"], other='float("-inf")'),
            "    # Rows past the end keep a finite maximum, so that exp(x - max) stays defined.",
            "    row_max = tl.where(row_mask, row_max, 0.0)",
            "    row_sum = tl.zeros([BLOCK_M], tl.float32)",
            _row_loop(["row_sum += tl.sum(tl.exp(x - row_max[:, None]), axis=1)"], other='float("-inf")'),
            "    row_sum = tl.where(row_mask, row_sum, 1.0)",
            _row_loop([output, _STORE]),
        ]
    )


def _rmsnorm_kernel(name: str, affine: bool) -> str:
    weight = ["weight_ptr"] if affine else []
    scale = (
        [
            "w = tl.load(weight_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)",
            "y = x * inv_rms[:, None] * w[None, :]",
        ]
        if affine
        else ["y = x * inv_rms[:, None]"]
    )
    return "\n".join(
        [
            "@triton.jit",
            *_call(f"def {name}", ["x_ptr", *weight, "out_ptr", *_ROW_PARAMS[:2], "eps", *_ROW_PARAMS[2:]], 0, ":"),
            _ROW_KERNEL_HEAD.strip("\n"),
            "    squares = tl.zeros([BLOCK_M], tl.float32)",
            _row_loop(["squares += tl.sum(x * x, axis=1)"]),
            "    inv_rms = tl.math.rsqrt(squares / n_cols + eps)",
            _row_loop([*scale, _STORE]),
        ]
    )


def _layernorm_kernel(name: str, affine: bool) -> str:
    params = ["weight_ptr", "bias_ptr"] if affine else []
    scale = (
        [
            "w = tl.load(weight_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)",
            "b = tl.load(bias_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)",
            "y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]",
        ]
        if affine
        else ["y = (x - mean[:, None]) * rstd[:, None]"]
    )
    return "\n".join(
        [
            "@triton.jit",
            *_call(f"def {name}", ["x_ptr", *params, "out_ptr", *_ROW_PARAMS[:2], "eps", *_ROW_PARAMS[2:]], 0, ":"),
            _ROW_KERNEL_HEAD.strip("\n"),
            "    total = tl.zeros([BLOCK_M], tl.float32)",
            _row_loop(["total += tl.sum(x, axis=1)"]),
            "    mean = total / n_cols",
            "    # The variance from centred values: no cancellation when the mean is large.",
            "    squares = tl.zeros([BLOCK_M], tl.float32)",
            _row_loop(["d = tl.where(mask, x - mean[:, None], 0.0)", "squares += tl.sum(d * d, axis=1)"]),
            "    rstd = tl.math.rsqrt(squares / n_cols + eps)",
            _row_loop([*scale, _STORE]),
        ]
    )


_NORM_SHAPES = ((32, 1024), (64, 256), (4, 32, 512))
_EPS = {(32, 1024): 1e-5, (64, 256): 1e-6, (4, 32, 512): 1e-5}


def _norm_tasks() -> Iterator[FamilyTask]:
    blocks = ["BLOCK_M=block_m", "BLOCK_N=block_n", "num_warps=4"]

    def launch(kernel: str, args: Sequence[str]) -> list[str]:
        return [*_ROW_FORWARD_HEAD, *_call(f"{kernel}[(cdiv(n_rows, block_m),)]", [*args, *blocks]), "return out"]

    for shape in _NORM_SHAPES:
        constants, randn = _sized(shape)
        x = (("x", randn, "Input whose last dimension is normalised."),)
        size = _shape_name(shape)
        for log in (False, True):
            family = "log_softmax" if log else "softmax"
            module = _Module((), (), x, constants)
            yield FamilyTask(
                f"{PREFIX}{family}_{size}",
                family,
                _reference(
                    module,
                    [f"{'Log-softmax' if log else 'Softmax'} over the last dimension."],
                    "The result, same shape as x.",
                    f"torch.{family}(x, dim=-1)",
                ),
                _solution(
                    module,
                    f"Triton {family} over rows: a max pass, a sum pass, an output pass.",
                    _softmax_kernel(f"{family}_kernel", log),
                    launch(f"{family}_kernel", ["x", "out", "n_rows", "n_cols"]),
                ),
            )
        eps = _Arg("eps", "float", "eps", "Added to the mean square (variance) for stability.")
        dim = _Arg("dim", "int", "dim", "Size of the normalised last dimension.")
        constants = (*constants, ("eps", repr(_EPS[shape])))
        for affine in (False, True):
            suffix = "_affine" if affine else ""
            # RMSNorm: x / sqrt(mean(x^2) + eps), optionally times a learned weight.
            args = (dim, eps) if affine else (eps,)
            init = (
                "self.eps = eps",
                *(("self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))",) if affine else ()),
            )
            module = _Module(args, init, x, constants)
            weight = ["self.weight"] if affine else []
            yield FamilyTask(
                f"{PREFIX}rmsnorm{suffix}_{size}",
                f"rmsnorm{suffix}",
                _reference(
                    module,
                    [
                        "RMS normalisation over the last dimension: out = x / sqrt(mean(x ** 2) + eps)"
                        + (" * weight." if affine else ".")
                    ],
                    "The normalised tensor, same shape as x.",
                    "x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)"
                    + (" * self.weight" if affine else ""),
                ),
                _solution(
                    module,
                    "Triton RMSNorm over rows: a sum-of-squares pass, then the scaled output.",
                    _rmsnorm_kernel("rmsnorm_kernel", affine),
                    launch("rmsnorm_kernel", ["x", *weight, "out", "n_rows", "n_cols", "float(self.eps)"]),
                ),
            )
            init = (
                "self.eps = eps",
                *(
                    (
                        "self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))",
                        "self.bias = nn.Parameter(0.1 * torch.randn(dim))",
                    )
                    if affine
                    else ()
                ),
            )
            module = _Module(args, init, x, constants)
            expression = (
                "torch.nn.functional.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)"
                if affine
                else "torch.nn.functional.layer_norm(x, (x.shape[-1],), eps=self.eps)"
            )
            params = ["self.weight", "self.bias"] if affine else []
            yield FamilyTask(
                f"{PREFIX}layernorm{suffix}_{size}",
                f"layernorm{suffix}",
                _reference(
                    module,
                    [
                        "Layer normalisation over the last dimension (biased variance):",
                        "out = (x - mean) / sqrt(var + eps)" + (" * weight + bias." if affine else "."),
                    ],
                    "The normalised tensor, same shape as x.",
                    expression,
                ),
                _solution(
                    module,
                    "Triton LayerNorm over rows: a mean pass, a centred-variance pass, the output pass.",
                    _layernorm_kernel("layernorm_kernel", affine),
                    launch("layernorm_kernel", ["x", *params, "out", "n_rows", "n_cols", "float(self.eps)"]),
                ),
            )


@cache
def _all_tasks() -> tuple[FamilyTask, ...]:
    tasks = (*_unary_tasks(), *_binary_tasks(), *_reduction_tasks(), *_norm_tasks())
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise AssertionError("duplicate family task names")
    return tasks


def family_tasks() -> list[FamilyTask]:
    """Every generated task, in a fixed order (families in template order, then parameters,
    then sizes)."""
    return list(_all_tasks())


def family_sample() -> list[FamilyTask]:
    """One task per family, the one with the smallest inputs (cheapest to judge on the CPU
    interpreter), in template order: what the CPU tests judge."""
    by_family: dict[str, FamilyTask] = {}
    for task in _all_tasks():
        best = by_family.get(task.family)
        if best is None or _elements(task) < _elements(best):
            by_family[task.family] = task
    return list(by_family.values())


def _elements(task: FamilyTask) -> int:
    """The number of elements of the task's first input, from its name's size suffix."""
    count = 1
    for size in task.name.rsplit("_", 1)[1].split("x"):
        count *= int(size)
    return count


# ----- the check script -----------------------------------------------------------------------


async def judge_tasks(
    tasks: Sequence[FamilyTask],
    address: str,
    device: str = "auto",
    timing: bool = False,
    concurrency: int = 8,
    *,
    security: SecuritySettings,
) -> dict[str, pb.EvaluateResponse]:
    """Judges every task's solution through the sandbox at ``address`` (correctness only
    unless ``timing``); the responses by task name, with a progress bar on stderr."""
    options = pb.EvaluateOptions(device=_DEVICES[device], skip_timing=not timing, skip_profile=not timing)
    requests = [
        pb.EvaluateRequest(
            request_id=t.name,
            task_name=t.name,
            reference_source=t.reference,
            candidate_source=t.solution,
            options=options,
        )
        for t in tasks
    ]
    return await judge_with_progress(address, requests, concurrency, unit="task", security=security)


def check_table(tasks: Sequence[FamilyTask], responses: dict[str, pb.EvaluateResponse]) -> tuple[str, int]:
    """The result table and the number of tasks not judged correct."""
    header = f"{'task':<40} {'family':<18} {'verdict':<14} {'variants':>8} {'speedup':>8} {'seconds':>7}  note"
    lines, wrong = [header, "-" * len(header)], 0
    for task in tasks:
        response = responses[task.name]
        verdict = pb.Verdict.Name(response.verdict).removeprefix("VERDICT_")
        correct = response.verdict == pb.VERDICT_CORRECT
        wrong += not correct
        passed = sum(c.passed for c in response.checks)
        speedup = f"{response.speedup:.2f}" if response.speedup else "-"
        note = "" if correct else ((response.error or response.feedback).strip().splitlines() or [""])[0][:120]
        lines.append(
            f"{task.name:<40} {task.family:<18} {verdict:<14} {passed:>8} {speedup:>8} "
            f"{response.evaluation_seconds:>7.1f}  {note}"
        )
    lines.append(f"{len(tasks) - wrong}/{len(tasks)} correct")
    return "\n".join(lines), wrong


async def _check(tasks: Sequence[FamilyTask], device: str, timing: bool, workers: int | None) -> int:
    overrides: dict[str, object] = {"device": device}
    if workers is not None:
        overrides["cpu_workers"] = workers
    settings = load_settings()
    async with local_sandbox(settings.sandbox, settings.security, **overrides) as address:
        responses = await judge_tasks(tasks, address, device, timing, security=settings.security)
    text, wrong = check_table(tasks, responses)
    print(text)
    return 1 if wrong else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m services.trainer.families [--check] [--device cuda] [--family F ...]``: lists
    the tasks, or judges their solutions through a local sandbox (exit 1 if any is wrong)."""
    parser = argparse.ArgumentParser(prog="python -m services.trainer.families", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="judge every solution through a local sandbox")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--family", action="append", default=[], help="only these families (repeatable)")
    parser.add_argument("--timing", action="store_true", help="also time and profile (GPU speedups)")
    parser.add_argument("--workers", type=int, help="CPU workers of the local sandbox")
    args = parser.parse_args(argv)
    tasks = [t for t in family_tasks() if not args.family or t.family in args.family]
    if not tasks:
        parser.error(f"no tasks in families {', '.join(args.family)}")
    if not args.check:
        for task in tasks:
            print(f"{task.name:<40} {task.family}")
        print(f"{len(tasks)} tasks in {len({t.family for t in tasks})} families")
        return 0
    configure_logging(LogSettings(level="warning", format="console"))  # the table alone on stdout
    started = time.perf_counter()
    code = asyncio.run(_check(tasks, args.device, args.timing, args.workers))
    print(f"judged in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
