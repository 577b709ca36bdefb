"""The sandbox's folders say which process runs their code: the server never imports torch nor
the code of the processes it starts, the candidate's process never imports the server's or the
judge's code, and the wire and shared code belong to no one process."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from services.sandbox.candidate.integrity import WATCHED, _resolve

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ROOT / "services" / "sandbox"
PROCESSES = ("server", "judge", "candidate")


def _imported(path: Path) -> set[str]:
    """Every module a file imports, at any depth of its code (lazy imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _imports_of(folder: str) -> dict[str, set[str]]:
    return {str(path.relative_to(ROOT)): _imported(path) for path in sorted((SANDBOX / folder).glob("*.py"))}


def _reaching(imports: dict[str, set[str]], folders: tuple[str, ...]) -> list[str]:
    packages = tuple(f"services.sandbox.{folder}" for folder in folders)
    return sorted(
        f"{path} imports {name}"
        for path, names in imports.items()
        for name in names
        if name in packages or name.startswith(tuple(p + "." for p in packages))
    )


def test_the_server_imports_no_torch():
    modules = sorted(f"services.sandbox.server.{path.stem}" for path in (SANDBOX / "server").glob("*.py"))
    script = f"import sys\nfor name in {modules!r}:\n    __import__(name)\nprint('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("server", ("judge", "candidate")),
        ("candidate", ("server", "judge")),
        ("judge", ("server", "candidate")),
        ("wire", PROCESSES),
        ("shared", PROCESSES),
    ],
)
def test_code_of_one_process_never_imports_another_process_code(folder, forbidden):
    assert _reaching(_imports_of(folder), forbidden) == []


def test_every_import_of_sandbox_code_finds_it():
    """Lazy imports inside functions included, wherever the project imports the sandbox."""
    sources = [
        path
        for folder in ("services", "drkernel", "benchmarks", "tests")
        for path in (ROOT / folder).rglob("*.py")
        if not {"hacks", "hacks_gpu", "legit", "escapes", "faults", "interop", "data", "tasks"} & set(path.parts)
    ]
    missing = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("services.sandbox"):
                module = importlib.import_module(node.module)
                missing += [
                    f"{path.relative_to(ROOT)}: {node.module}.{alias.name}"
                    for alias in node.names
                    if not hasattr(module, alias.name)
                    and importlib.util.find_spec(f"{node.module}.{alias.name}") is None
                ]
            elif isinstance(node, ast.Import):
                missing += [
                    f"{path.relative_to(ROOT)}: {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("services.sandbox") and importlib.util.find_spec(alias.name) is None
                ]
    assert missing == []


def test_every_object_the_integrity_watch_names_exists():
    missing = []
    for path in WATCHED:
        try:
            _resolve(path)
        except (LookupError, AttributeError):
            missing.append(path)
    assert missing == []
