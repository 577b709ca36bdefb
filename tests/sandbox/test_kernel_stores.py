"""Which parameters a compiled kernel can write through (services/sandbox/candidate/kernel_stores.py),
read from real Triton IR: each kernel here is compiled for sm_90 without a GPU, as the GPU judge
compiles it before capturing it into a CUDA graph."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from services.sandbox.candidate.kernel_stores import written_parameters
from services.sandbox.candidate.work import _writable


@triton.jit
def relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def two_outputs(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, v)
    tl.store(z_ptr + offs, v * 2)


@triton.jit
def carried_pointer(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = y_ptr + offs
    q = x_ptr + offs
    for _ in range(0, n, BLOCK):
        tl.store(p, tl.load(q) * 2)
        p += BLOCK
        q += BLOCK


@triton.jit
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))


@triton.jit
def scatter(x_ptr, index_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + tl.load(index_ptr + offs), tl.load(x_ptr + offs))


@triton.jit
def chosen_pointer(a_ptr, b_ptr, x_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(tl.where(flag > 0, a_ptr, b_ptr) + offs, tl.load(x_ptr + offs))


@triton.jit
def branches(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    if n > 4:
        tl.store(y_ptr + offs, v)
    else:
        tl.store(z_ptr + offs, v)


@triton.jit
def descriptors(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    x = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
    y = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK, BLOCK])
    y.store([0, 0], x.load([0, 0]))


@triton.jit
def from_integer(x_ptr, address, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(address.to(tl.pointer_type(tl.float32)) + offs, tl.load(x_ptr + offs))


@triton.jit
def assembly(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.inline_asm_elementwise(
        "mov.b32 $0, $1;", "=r,r", [tl.load(x_ptr + offs)], dtype=tl.float32, is_pure=True, pack=1
    )
    tl.store(y_ptr + offs, v)


@triton.jit(noinline=True)
def stores_elsewhere(y_ptr, value):
    tl.store(y_ptr, value)


@triton.jit
def calls(x_ptr, y_ptr):
    stores_elsewhere(y_ptr, tl.load(x_ptr))


_F32 = "*fp32"


def _compiled(fn: triton.JITFunction, signature: dict[str, str]) -> triton.compiler.CompiledKernel:
    constexprs = {"BLOCK": 64} if "BLOCK" in signature else {}
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32))


def _ttir(fn: triton.JITFunction, signature: dict[str, str]) -> str:
    return _compiled(fn, signature).asm["ttir"]


@pytest.mark.parametrize(
    ("fn", "signature", "written"),
    [
        (relu, {"x_ptr": _F32, "y_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {"y_ptr"}),
        (two_outputs, {"x_ptr": _F32, "y_ptr": _F32, "z_ptr": _F32, "BLOCK": "constexpr"}, {"y_ptr", "z_ptr"}),
        (accumulate, {"x_ptr": _F32, "out_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {"out_ptr"}),
        (branches, {"x_ptr": _F32, "y_ptr": _F32, "z_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {"y_ptr", "z_ptr"}),
        (descriptors, {"x_ptr": _F32, "y_ptr": _F32, "M": "i32", "N": "i32", "BLOCK": "constexpr"}, {"y_ptr"}),
    ],
)
def test_a_pointer_only_read_is_not_written(
    fn: triton.JITFunction, signature: dict[str, str], written: set[str]
) -> None:
    found = written_parameters(_ttir(fn, signature))
    assert found is not None
    assert {name for name in found if signature[name] == _F32} == written


@pytest.mark.parametrize(
    ("fn", "signature", "must"),
    [
        (carried_pointer, {"x_ptr": _F32, "y_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {"y_ptr"}),
        (scatter, {"x_ptr": _F32, "index_ptr": "*i32", "y_ptr": _F32, "BLOCK": "constexpr"}, {"y_ptr", "index_ptr"}),
        (
            chosen_pointer,
            {"a_ptr": _F32, "b_ptr": _F32, "x_ptr": _F32, "flag": "i32", "BLOCK": "constexpr"},
            {"a_ptr", "b_ptr"},
        ),
    ],
)
def test_every_parameter_a_written_address_comes_from_is_named(
    fn: triton.JITFunction, signature: dict[str, str], must: set[str]
) -> None:
    """Pointers carried through a loop, computed from loaded values or chosen at run time:
    the answer may name more than is written, never less."""
    found = written_parameters(_ttir(fn, signature))
    assert found is not None and must <= found


@pytest.mark.parametrize(
    ("fn", "signature"),
    [
        (from_integer, {"x_ptr": _F32, "address": "i64", "BLOCK": "constexpr"}),
        (assembly, {"x_ptr": _F32, "y_ptr": _F32, "BLOCK": "constexpr"}),
        (calls, {"x_ptr": _F32, "y_ptr": _F32}),
    ],
)
def test_what_the_walk_cannot_follow_is_unknown(fn: triton.JITFunction, signature: dict[str, str]) -> None:
    assert written_parameters(_ttir(fn, signature)) is None


def test_ir_with_an_undefined_value_or_no_function_is_unknown() -> None:
    assert written_parameters("module {\n}") is None
    text = _ttir(relu, {"x_ptr": _F32, "y_ptr": _F32, "n": "i32", "BLOCK": "constexpr"})
    store = next(line for line in text.splitlines() if "tt.store" in line)
    assert written_parameters(text.replace(store, store.replace("tt.store %", "tt.store %undefined_"))) is None


def test_a_launch_writes_the_tensors_behind_its_written_parameters() -> None:
    compiled = _compiled(relu, {"x_ptr": _F32, "y_ptr": _F32, "n": "i32", "BLOCK": "constexpr"})
    x, y = torch.ones(8), torch.zeros(8)
    assert _writable(relu, compiled, (x, y, 8), {"BLOCK": 64}) == [y]
    assert _writable(relu, compiled, (x,), {"y_ptr": y, "n": 8, "BLOCK": 64}) == [y]
    assert _writable(relu, None, (x, y, 8), {}) is None  # no compiled code (the interpreter)
    assert _writable(relu, compiled, (x,), {}) is None  # the written parameter not given
