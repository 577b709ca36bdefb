"""Static analysis of task and candidate sources (AST only; nothing is executed here).

A task is a KernelBench module: ``class Model``, ``get_inputs()``, ``get_init_inputs()`` and
module-level size constants. This module validates it, finds the size constants, rewrites
them for the resized and tiny variants, and derives the *inputs module*: the task without its
model classes, which is all the candidate's process ever sees of the task.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field

from drkernel.errors import InvalidArgument
from drkernel.kernelbench import module_level_names

REQUIRED_TASK_NAMES = ("Model", "get_inputs", "get_init_inputs")
_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def syntax_error(source: str, filename: str = "candidate.py") -> str | None:
    """Returns a readable syntax error ("line 3: invalid syntax ...") or None if it parses."""
    try:
        ast.parse(source, filename=filename)
    except SyntaxError as error:
        line = (error.text or "").strip()
        where = f"line {error.lineno}" + (f", column {error.offset}" if error.offset else "")
        return f"{where}: {error.msg}" + (f": {line}" if line else "")
    except ValueError as error:  # e.g. null bytes
        return str(error)
    return None


def _literal_int(node: ast.expr) -> int | None:
    """Evaluates integer arithmetic on literals (``2048 * 2``), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal_int(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _literal_int(node.left), _literal_int(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Pow) and right > 64):
            return None
        try:
            return _ARITHMETIC[type(node.op)](left, right)
        except ZeroDivisionError:
            return None
    return None


@dataclass(frozen=True)
class SizeConstant:
    """A module-level ``NAME = <integer expression>`` and where its value is written."""

    name: str
    value: int
    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int


@dataclass(frozen=True)
class TaskSource:
    """A validated KernelBench task."""

    source: str
    constants: tuple[SizeConstant, ...]
    inputs_source: str = field(repr=False)

    def sizes(self, minimum: int) -> dict[str, int]:
        """The integer constants at least ``minimum``: the ones treated as tensor sizes."""
        return {c.name: c.value for c in self.constants if c.value >= minimum}


def _integer_constants(tree: ast.Module) -> tuple[SizeConstant, ...]:
    found: dict[str, SizeConstant] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        value = _literal_int(node.value)
        if isinstance(target, ast.Name) and value is not None:
            assert node.value.end_lineno is not None and node.value.end_col_offset is not None
            found[target.id] = SizeConstant(
                target.id,
                value,
                node.value.lineno,
                node.value.col_offset,
                node.value.end_lineno,
                node.value.end_col_offset,
            )
    return tuple(found.values())


def _free_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _inputs_module(tree: ast.Module, source: str) -> str:
    """Keeps imports, plain assignments and the input functions (with the module-level
    functions they call); drops every class, so the model never reaches the candidate."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    keep_functions: set[str] = set()
    pending = ["get_inputs", "get_init_inputs"]
    while pending:
        name = pending.pop()
        if name in keep_functions or name not in functions:
            continue
        keep_functions.add(name)
        pending.extend(_free_names(functions[name]) & functions.keys())
    lines = source.splitlines(keepends=True)
    kept: list[str] = []
    for node in tree.body:
        keep = isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)) or (
            isinstance(node, ast.FunctionDef) and node.name in keep_functions
        )
        if keep:
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            assert node.end_lineno is not None
            kept.append("".join(lines[start - 1 : node.end_lineno]))
    return "\n".join(kept) + "\n"


def parse_task(source: str) -> TaskSource:
    """Validates a task source; raises InvalidArgument saying what is missing."""
    try:
        tree = ast.parse(source, filename="task.py")
    except SyntaxError as error:
        raise InvalidArgument(f"reference_source is not valid Python: {syntax_error(source, 'task.py')}") from error
    except ValueError as error:
        raise InvalidArgument(f"reference_source is not valid Python: {error}") from error
    missing = [name for name in REQUIRED_TASK_NAMES if name not in module_level_names(tree)]
    if missing:
        raise InvalidArgument("reference_source is not a KernelBench task: it does not define " + ", ".join(missing))
    return TaskSource(source, _integer_constants(tree), _inputs_module(tree, source))


def with_constants(source: str, values: Mapping[str, int]) -> str:
    """Rewrites the values of module-level integer constants, keeping every line in place.

    Later assignments that compute from a constant (``N = M * 2``) see the new value,
    because the whole module is executed again.
    """
    if not values:
        return source
    tree = ast.parse(source)
    targets = {c.name: c for c in _integer_constants(tree) if c.name in values}
    unknown = set(values) - targets.keys()
    if unknown:
        raise KeyError(f"not integer constants of this module: {sorted(unknown)}")
    lines = source.splitlines(keepends=True)
    for constant in sorted(targets.values(), key=lambda c: (c.lineno, c.col_offset), reverse=True):
        first, last = lines[constant.lineno - 1], lines[constant.end_lineno - 1]
        replaced = first[: constant.col_offset] + str(values[constant.name]) + last[constant.end_col_offset :]
        lines[constant.lineno - 1 : constant.end_lineno] = [replaced]
    return "".join(lines)


def tiny_plans(sizes: Mapping[str, int], cap: int) -> list[dict[str, int]]:
    """Shrunken constant sets to try for the tiny run, smallest first."""
    plans: list[dict[str, int]] = []
    for limit in (cap, cap * 2, cap * 4):
        plan = {name: min(value, limit) for name, value in sizes.items() if value > limit}
        if plan and plan not in plans:
            plans.append(plan)
    return plans


def resized_plans(sizes: Mapping[str, int]) -> list[dict[str, int]]:
    """Other-size constant sets to try for the resized variant, most revealing first: odd,
    non-power-of-two sizes catch missing masks; halving keeps divisibility for tasks that need it."""
    odd = {name: value * 3 // 4 + 1 for name, value in sizes.items()}
    half = {name: max(1, value // 2) for name, value in sizes.items()}
    plans = [odd, half]
    if sizes:
        first = next(iter(sizes))
        plans.append({first: sizes[first] * 3 // 4 + 1})
    return [plan for plan in plans if plan and any(plan[n] != sizes[n] for n in plan)]
