"""Kernel prompting: the conversation for a task, and code extraction from messy answers
(tests/policy/data/completions: each .txt answer with the module it must give, .expected.py,
or the reasons it must fail with, .error)."""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Any

import pytest

from services.policy.prompting import ExtractionError, build_messages, extract_code, render_prompt
from services.policy.types import ChatMessage

DATA = Path(__file__).parent / "data"
ANSWERS = sorted((DATA / "completions").glob("*.txt"))
REFERENCE = (DATA / "reference_relu.py").read_text()


def test_there_are_answers_of_both_kinds() -> None:
    kinds = {p.with_suffix(".expected.py").exists() for p in ANSWERS}
    assert kinds == {True, False} and len(ANSWERS) >= 10


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda p: p.stem)
def test_extraction_from_real_answers(answer: Path) -> None:
    completion = answer.read_bytes().decode()
    expected = answer.with_suffix(".expected.py")
    if expected.exists():
        code = extract_code(completion)
        assert code == expected.read_text()
        assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ast.parse(code).body)
        return
    with pytest.raises(ExtractionError) as caught:
        extract_code(completion)
    for reason in answer.with_suffix(".error").read_text().splitlines():
        assert reason in str(caught.value)


def test_the_first_turn_has_the_system_prompt_and_the_reference() -> None:
    messages = build_messages(REFERENCE)
    assert [m.role for m in messages] == ["system", "user"]
    assert "ModelNew" in messages[0].content and "Triton" in messages[0].content
    assert REFERENCE.strip() in messages[1].content


def test_earlier_attempts_come_back_with_their_feedback_in_order() -> None:
    attempts = [
        ("class ModelNew: pass  # v1", "Compile error: name 'tl' is not defined"),
        ("class ModelNew: pass  # v2", "Correct on 5 input variant(s). Speedup 0.80x over PyTorch."),
    ]
    messages = build_messages(REFERENCE, attempts)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "# v1" in messages[2].content and "name 'tl' is not defined" in messages[3].content
    assert "# v2" in messages[4].content and "Speedup 0.80x" in messages[5].content
    assert messages[2].content.startswith("```python\n")


def test_the_prompt_is_rendered_with_the_model_chat_template(tokenizer: Any) -> None:
    messages = build_messages(REFERENCE, [("class ModelNew: pass", "Incorrect on inputs 'seed=43'")])
    text = render_prompt(tokenizer, messages)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
    assert text.count("<|im_start|>") == 5
    assert "def get_inputs():" in text and "Incorrect on inputs 'seed=43'" in text


def test_a_template_without_a_system_turn_gets_the_instructions_in_the_first_user_turn(
    tokenizer: Any,
) -> None:
    strict = copy.deepcopy(tokenizer)
    strict.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}"
        "[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}[assistant] "
    )
    text = render_prompt(strict, [ChatMessage("system", "RULES"), ChatMessage("user", "TASK")])
    assert text == "[user] RULES\n\nTASK\n[assistant] "
