"""The KernelBench parity corpus (benchmarks/kernelbench) is well-formed, without a KernelBench
checkout: every solution and flawed variant parses and defines ModelNew, every flawed variant
declares its defect, and the manifest of benchmarks/kernelbench_parity.py covers enough problems,
each with an honest solution and at least one flawed variant. Judging them is the script's job
(``--device cpu --shrink`` on CPU, ``--device cuda`` against KernelBench's own harness)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchmarks import kernelbench_parity as parity
from drkernel.kernelbench import defines_model_new

CORPUS_FILES = sorted(parity.SOLUTIONS.glob("level*/*.py")) + sorted(parity.FLAWED.glob("level*/*.py"))


def _triton_kernels(tree: ast.Module) -> list[str]:
    """Names of the module's functions decorated with triton.jit."""
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d).startswith("triton.jit") for d in node.decorator_list)
    ]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.stem}")
def test_candidate_parses_and_defines_model_new(path: Path) -> None:
    assert defines_model_new(ast.parse(path.read_text()))


@pytest.mark.parametrize(
    "path", sorted(parity.SOLUTIONS.glob("level*/*.py")), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_honest_solution_has_a_triton_kernel(path: Path) -> None:
    assert _triton_kernels(ast.parse(path.read_text()))


@pytest.mark.parametrize("path", sorted(parity.FLAWED.glob("level*/*.py")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_flawed_variant_declares_its_flaw(path: Path) -> None:
    kind, what, expect = parity.declared_flaw(path)
    assert path.stem.endswith(f"__{kind}"), "the file name ends with __<kind>"
    assert what and expect in ("pass", "fail")
    stem = path.stem.rsplit("__", 1)[0]
    assert (parity.SOLUTIONS / path.parent.name / f"{stem}.py").is_file(), "a flawed variant has an honest twin"


def test_manifest_covers_enough_problems() -> None:
    keys = [p.key for p in parity.PROBLEMS]
    assert len(keys) == len(set(keys)) >= 24
    assert sum(p.level == "level2" for p in parity.PROBLEMS) >= 8
    for problem in parity.PROBLEMS:
        cands = parity.candidates(problem)
        assert cands[0].honest and cands[0].path.is_file(), problem.key
        assert any(not c.honest for c in cands), f"{problem.key} has no flawed variant"
        assert problem.shrink and all(isinstance(v, int) and v > 0 for v in problem.shrink.values()), problem.key


def test_fast_set_leaves_out_the_large_problems() -> None:
    fast = parity.PROBLEM_SETS["fast"]
    assert parity.PROBLEM_SETS["all"] == parity.PROBLEMS
    assert len(fast) >= 24 and not any(p.large for p in fast)
    assert {p.key for p in parity.PROBLEMS} - {p.key for p in fast} == {p.key for p in parity.PROBLEMS if p.large}
    cands, _ = parity.select("level1/19_ReLU", "", "fast")  # --problems adds to the set
    assert {c.problem.key for c in cands} == {p.key for p in fast} | {"level1/19_ReLU"}
    with pytest.raises(SystemExit):
        parity.select("", "", "slow")


def test_every_corpus_file_is_in_the_manifest() -> None:
    listed = {c.path for p in parity.PROBLEMS for c in parity.candidates(p)}
    assert set(CORPUS_FILES) <= listed


def test_flaw_kinds_are_all_used() -> None:
    kinds = {c.flaw_kind for p in parity.PROBLEMS for c in parity.candidates(p) if not c.honest}
    assert kinds == set(parity.FLAW_KINDS)


def test_expectations() -> None:
    problem = parity.PROBLEMS[0]
    honest = parity.Candidate(problem, Path("x.py"))
    hack = parity.Candidate(problem, Path("x__hack.py"), "hack", "no kernel", "pass")
    hardcoded = parity.Candidate(problem, Path("x__hardcoded.py"), "hardcoded", "sizes", "pass")
    for judge in ("strict", "kernelbench", "KernelBench"):
        assert honest.expected_correct(judge, shrunk=False) is True
    assert [hack.expected_correct(j, shrunk=False) for j in ("strict", "kernelbench", "KernelBench")] == [
        False,
        False,
        True,
    ]
    assert [hardcoded.expected_correct(j, shrunk=False) for j in ("strict", "kernelbench", "KernelBench")] == [
        False,
        True,
        True,
    ]
    assert hardcoded.expected_correct("kernelbench", shrunk=True) is None


def test_selection_by_candidate_keeps_order_and_profiles() -> None:
    cands, profiles = parity.select(
        "level2/63_Gemm_ReLU_Divide",
        "level1/36_RMSNorm___hardcoded#kernelbench,level2/59_Matmul_Swish_Scaling__nomask",
    )
    assert [c.name for c in cands] == [
        "level2/63_Gemm_ReLU_Divide",
        "level2/63_Gemm_ReLU_Divide__hack",
        "level1/36_RMSNorm___hardcoded",
        "level2/59_Matmul_Swish_Scaling__nomask",
    ]
    assert profiles["level2/63_Gemm_ReLU_Divide__hack"] == ("strict", "kernelbench")
    assert profiles["level1/36_RMSNorm___hardcoded"] == ("kernelbench",)
    assert profiles["level2/59_Matmul_Swish_Scaling__nomask"] == ("strict", "kernelbench")
    assert [c.flaw_kind for c in cands] == [None, "hack", "hardcoded", "nomask"]
    # a name given again with the other profile gets both; nothing given: every problem
    _, both = parity.select("", "level1/19_ReLU#strict,level1/19_ReLU#kernelbench")
    assert both == {"level1/19_ReLU": ("strict", "kernelbench")}
    everything, _ = parity.select("", "")
    assert len(everything) == sum(len(parity.candidates(p)) for p in parity.PROBLEMS)
    for problems, named in (("level9/x", ""), ("", "level1/19_ReLU__nosuch"), ("", "level1/19_ReLU#fast")):
        with pytest.raises(SystemExit):
            parity.select(problems, named)


def test_the_bench_generations_of_the_gpu_run() -> None:
    """benchmarks/bench_gpu.sh's generations file: per problem a flawed variant refined into the
    honest solution (sample 0, turns 1 and 2) and a flawed one alone (sample 1)."""
    from benchmarks.kernelbench_generations import DEFAULT_PROBLEMS, assemble

    generations = assemble(list(DEFAULT_PROBLEMS))
    assert [(g.task, g.sample, g.turn) for g in generations] == [
        (problem, sample, turn) for problem in DEFAULT_PROBLEMS for sample, turn in ((0, 1), (0, 2), (1, 1))
    ]
    for generation in generations:
        level, number = generation.task.removeprefix("level").split("/")
        folder = parity.FLAWED if generation.turn == 1 else parity.SOLUTIONS
        names = [p.name for p in (folder / f"level{level}").glob(f"{number}_*.py")]
        assert any((folder / f"level{level}" / name).read_text() == generation.code for name in names)
