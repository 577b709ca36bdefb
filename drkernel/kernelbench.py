"""The KernelBench module format, read from source without running it: a task binds ``Model``,
``get_inputs`` and ``get_init_inputs``; a candidate binds ``ModelNew``. One rule for what a
module binds, shared by the policy (picking the candidate out of a completion) and the sandbox
(validating tasks, and the harness, which takes ``ModelNew`` from the imported module)."""

from __future__ import annotations

import ast


def module_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at top level (classes, functions, assignments, imports)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def defines_model_new(tree: ast.Module) -> bool:
    """True if a candidate module binds ``ModelNew`` at top level (class, assignment or import)."""
    return "ModelNew" in module_level_names(tree)
