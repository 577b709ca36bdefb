"""Task sets: the built-in suite, a KernelBench checkout and a folder of task files, narrowed
by level and problem, with clear errors for what does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from drkernel.errors import InvalidArgument
from services.sandbox.tasks import builtin_task
from services.trainer.bench.tasks import kernelbench_id, load_task_set

RELU, GEMM = builtin_task("l1_relu").source(), builtin_task("l2_gemm_bias_relu").source()


def test_the_builtin_suite_by_level_and_problem() -> None:
    everything = load_task_set("builtin")
    assert len(everything.tasks) >= 30 and {t.level for t in everything.tasks} == {1, 2}
    level2 = load_task_set("builtin", levels=[2])
    assert level2.ids and all(task_id.startswith("l2_") for task_id in level2.ids)
    chosen = load_task_set("builtin", problems=["l2_gemm_bias_relu", "l1_relu"])
    assert chosen.ids == ["l1_relu", "l2_gemm_bias_relu"]  # in the set's order
    with pytest.raises(InvalidArgument, match="no task 'l9_nothing'"):
        load_task_set("builtin", problems=["l9_nothing"])
    with pytest.raises(InvalidArgument, match="no tasks left"):
        load_task_set("builtin", levels=[4])


def test_a_kernelbench_checkout(tmp_path: Path) -> None:
    for level, name, source in ((1, "19_ReLU.py", RELU), (2, "12_Gemm_ReLU.py", GEMM), (2, "19_Other.py", GEMM)):
        folder = tmp_path / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(source)
    checkout = load_task_set(str(tmp_path))
    assert checkout.kind == "kernelbench" and checkout.ids == ["level1/19", "level2/12", "level2/19"]
    assert checkout.tasks[1].name == "level2/12_Gemm_ReLU" and checkout.tasks[1].level == 2
    assert load_task_set(str(tmp_path), levels=[2], problems=["12"]).ids == ["level2/12"]
    assert load_task_set(str(tmp_path), problems=["level2/12_Gemm_ReLU", "level1/19"]).ids == ["level1/19", "level2/12"]
    with pytest.raises(InvalidArgument, match="several levels"):
        load_task_set(str(tmp_path), problems=["19"])
    assert checkout.resolve("level2/12_Gemm_ReLU") is checkout.tasks[1]
    assert checkout.resolve(str(tmp_path / "KernelBench/level2/19_Other.py")) is checkout.tasks[2]
    assert checkout.resolve("level3/1") is None
    assert checkout.resolve("12_Gemm_ReLU.py") is checkout.tasks[1]  # a file name only one task has
    assert checkout.resolve("KernelBench/level1/19_ReLU.py") is checkout.tasks[0]  # relative to the checkout
    assert kernelbench_id("level02/007_X") == "level2/7" and kernelbench_id("l1_relu") is None


def test_a_folder_of_task_files(tmp_path: Path) -> None:
    (tmp_path / "b_gemm.py").write_text(GEMM)
    (tmp_path / "a_relu.py").write_text(RELU)
    (tmp_path / "__init__.py").write_text("")
    folder = load_task_set(str(tmp_path))
    assert folder.kind == "folder" and folder.ids == ["a_relu", "b_gemm"]
    (tmp_path / "notes.py").write_text("x = 1\n")
    with pytest.raises(InvalidArgument, match=r"notes.py: .*does not define Model, get_inputs, get_init_inputs"):
        load_task_set(str(tmp_path))
    with pytest.raises(InvalidArgument, match="neither 'builtin' nor a folder"):
        load_task_set(str(tmp_path / "absent"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgument, match="no task files"):
        load_task_set(str(tmp_path / "empty"))
