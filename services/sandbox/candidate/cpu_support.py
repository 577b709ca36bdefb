"""What Triton's CPU interpreter lacks for kernels that run on a GPU, installed in the
candidate's process on CPU before any candidate code runs.

- ``@triton.autotune`` with several configs times each one with the GPU driver's benchmarker,
  which does not exist on CPU ("0 active drivers"), and interpreter timings would mean
  nothing anyway. The autotuner keeps only the first config left after the candidate's own
  pruning (``early_config_prune``, ``perf_model``): a deterministic choice, run through the
  autotuner's single-config path, hooks included. The launch recorder sees that config's
  meta-parameters and options, so the GPU compile check compiles exactly the config that ran.
  Triton before 3.7 benchmarks even a single pruned config: its benchmark gives every config
  the same time there, without running or timing anything.
- A kernel defined inside a function loses its closure: the interpreter re-executes the
  kernel's rewritten source at module level, so a helper @triton.jit function or a constant
  of the enclosing function is a NameError, while the GPU compiler sees it. The rewritten
  function gets the original's closure cells back.
- Triton before 3.7 turns a scalar into an index with ``int()`` of its one-element array,
  which NumPy 2.4 and later refuse ("only 0-dimensional arrays can be converted to Python
  scalars"): every loop bounded by a kernel argument failed. The index is taken from the
  element itself, as later Tritons do.
- libdevice has NumPy equivalents (libdevice_numpy.py).
- bfloat16 arithmetic, reductions, scans, dots and casts run on the values in float32 with
  one rounding to nearest even, as on a GPU, not on their uint16 bits (bf16_interpreter.py).
"""

from __future__ import annotations

import ast
import types
from typing import Any

from services.sandbox.candidate import bf16_interpreter, libdevice_numpy


def install() -> None:
    """Installs every CPU equivalent; later calls change nothing."""
    libdevice_numpy.install()
    bf16_interpreter.install()
    _keep_first_autotune_config()
    _keep_closures()
    _index_from_the_element()


def _keep_first_autotune_config() -> None:
    from triton.runtime.autotuner import Autotuner

    prune = Autotuner.prune_configs
    if getattr(prune, "sandbox_patch", False):
        return

    def first_config(tuner: Any, kwargs: dict[str, Any]) -> list[Any]:
        return prune(tuner, kwargs)[:1]

    def untimed(tuner: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        return [0.0, 0.0, 0.0]  # the median and quantiles _bench would give

    first_config.sandbox_patch = True  # type: ignore[attr-defined]
    Autotuner.prune_configs = first_config  # type: ignore[method-assign]
    Autotuner._bench = untimed  # type: ignore[method-assign]


def _keep_closures() -> None:
    from triton.runtime.interpreter import FunctionRewriter

    compile_and_exec = FunctionRewriter._compile_and_exec
    if getattr(compile_and_exec, "sandbox_patch", False):
        return

    def with_closure(rewriter: Any, transformed: ast.Module) -> Any:
        fn = rewriter.fn
        if not fn.__closure__:
            return compile_and_exec(rewriter, transformed)
        # Nested in a factory that binds the free names, the rewritten code compiles with
        # them as free variables again; it then runs over the original's cells.
        factory = ast.FunctionDef(
            name=fn.__name__,
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[
                *(
                    ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(value=None))
                    for name in fn.__code__.co_freevars
                ),
                *transformed.body,
                ast.Return(value=ast.Name(id=fn.__name__, ctx=ast.Load())),
            ],
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
        inner = compile_and_exec(rewriter, module)()
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__, strict=False))
        rewritten = types.FunctionType(
            inner.__code__,
            inner.__globals__,
            fn.__name__,
            fn.__defaults__,
            tuple(cells[name] for name in inner.__code__.co_freevars),
        )
        rewritten.__kwdefaults__ = fn.__kwdefaults__
        rewritten.__annotations__ = inner.__annotations__  # tl.constexpr marks
        return rewritten

    with_closure.sandbox_patch = True  # type: ignore[attr-defined]
    FunctionRewriter._compile_and_exec = with_closure  # type: ignore[method-assign]


def _index_from_the_element() -> None:
    from triton.runtime import interpreter

    patch_tensor = interpreter._patch_lang_tensor
    if getattr(patch_tensor, "sandbox_patch", False):
        return

    def with_element_index(tensor: Any, scope: Any) -> None:
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    with_element_index.sandbox_patch = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = with_element_index
