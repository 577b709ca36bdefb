"""Which parameters a compiled Triton kernel can write through, read from its Triton IR.

A CUDA graph's replay runs its captured launches where the work probe cannot watch them (the
probe compares an eager launch's arguments before and after it). What a captured launch can
write is read from the kernel's TTIR instead: the pointer operand of every store, atomic and
descriptor write is followed back, through the operations that computed it, to the kernel's
parameters. The walk over-approximates: every operand of an operation on the way counts, and
a loop's or branch's values count whatever any region of the kernel yields. A parameter it
leaves out is therefore one the kernel cannot write through. When the IR holds what the walk
cannot follow (a call, inline assembly, a pointer made from an integer, a value defined
nowhere), the answer is None: unknown, every argument may be written.
"""

from __future__ import annotations

import re

# Operations that write memory through their first operand (a pointer or a descriptor).
_WRITES = frozenset(
    {
        "tt.store",
        "tt.atomic_rmw",
        "tt.atomic_cas",
        "tt.descriptor_store",
        "tt.descriptor_scatter",
        "tt.descriptor_reduce",
    }
)
# Operations whose effect on memory the walk cannot follow.
_OPAQUE = ("tt.call", "inline_asm", "int_to_ptr", "llvm.")
# Words in an operation's name that mean it may write memory.
_WRITE_WORDS = ("store", "atomic", "scatter")
# Region terminators: what a loop, branch, reduction or scan hands back.
_YIELDS = ("scf.yield", "scf.condition", "tt.reduce.return", "tt.scan.return")

_VALUE = re.compile(r"%[\w$.-]+")
_OPERATION = re.compile(r"^(?:%[^=]*=\s*)?\"?([a-z_]+\.[\w.]+)")
_FUNCTION = re.compile(r"^\s*tt\.func\s+(\w+)\s+@")
_PARAMETER = re.compile(r"(%[\w$.-]+):[^%]*?loc\(\"([^\"]*)\"")
# A value a region operation or block label defines: ``%i = %c0`` (a loop's induction variable
# or carried value), ``%a: f32`` (a block argument); an operand's type follows " : " instead.
_ARGUMENT = re.compile(r"(%[\w$.-]+)(?: = |: )")
_YIELDED = "%<yielded>"  # stands for every value any region yields


def written_parameters(ttir: str) -> frozenset[str] | None:
    """The names of the kernel's parameters its stores can reach, or None when unknown."""
    parameters: dict[str, str] = {}  # SSA name -> the Python parameter's name
    sources: dict[str, set[str]] = {_YIELDED: set()}
    pointers: list[str] = []
    functions = 0
    for line in ttir.splitlines():
        text = line.strip()
        if not text or text.startswith(("#", "module", "}")):
            continue
        if _FUNCTION.match(text):
            functions += 1
            signature = text.split(") attributes", 1)[0]
            parameters.update(dict(_PARAMETER.findall(signature)))
            continue
        match = _OPERATION.match(text)
        operation = match.group(1) if match else ""
        if any(word in text for word in _OPAQUE):
            return None
        if operation in _WRITES:
            operands = _VALUE.findall(_operands(text))
            if not operands:
                return None
            pointers.append(operands[0])
        elif any(word in operation for word in _WRITE_WORDS):
            return None
        if operation in _YIELDS:
            sources[_YIELDED].update(_VALUE.findall(text))
            continue
        _note_definitions(text, sources)
    if functions != 1:
        return None
    reached = _reach(pointers, sources, set(parameters))
    return None if reached is None else frozenset(parameters[name] for name in reached)


def _operands(text: str) -> str:
    """The part of an operation's line after its results."""
    return text.split("=", 1)[1] if text.startswith("%") and "=" in text else text


def _note_definitions(text: str, sources: dict[str, set[str]]) -> None:
    """Records what each value a line defines is computed from: its results from every value
    on the line; a region's results and arguments (a loop's induction variable and carried
    values, a block's arguments) also from whatever any region yields."""
    results: list[str] = []
    rest = text
    if text.startswith("%") and " = " in text:
        left, rest = text.split(" = ", 1)
        results = [name.split(":")[0].strip() for name in left.split(",")]
    used = _VALUE.findall(rest)
    inner = _ARGUMENT.findall(rest)  # a loop's variables, a block label's arguments
    opens_region = text.endswith("{") or text.startswith("^") or bool(inner)
    for name in [*results, *inner]:
        into = sources.setdefault(name, set())
        into.update(value for value in used if value != name)
        if opens_region:
            into.add(_YIELDED)


def _reach(pointers: list[str], sources: dict[str, set[str]], parameters: set[str]) -> set[str] | None:
    """The parameters the pointers are computed from; None when a value has no definition."""
    reached: set[str] = set()
    seen: set[str] = set()
    pending = list(pointers)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in parameters:
            reached.add(name)
            continue
        if name not in sources:
            return None
        pending.extend(sources[name])
    return reached
