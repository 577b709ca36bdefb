"""Kernel prompting: the conversation that asks the policy for a Triton kernel, and the
extraction of the candidate module from what it answers.

A task is a KernelBench reference module (``class Model``); the answer must be a module with
``class ModelNew``. Multi-turn refinement feeds every earlier attempt back with the sandbox's
feedback (``EvaluateResponse.feedback``) as alternating assistant and user turns, so the model
sees its own code and what the judge said about it.

Extraction is tolerant of how models actually answer: reasoning in ``<think>`` blocks, drafts
followed by a corrected version, kernels and ``ModelNew`` in separate code blocks, code without
fences, and answers cut off mid-block. It takes the last complete (parsing) module that defines
``ModelNew`` and otherwise fails with a reason the model can be told.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from drkernel.kernelbench import defines_model_new
from services.policy.chat import chat_text
from services.policy.types import ChatMessage

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

SYSTEM_PROMPT = """\
You are an expert in GPU programming who writes fast, correct Triton kernels.
You are given a PyTorch module `Model`. Write a Python module that defines `class ModelNew`, \
a drop-in replacement for `Model`: the same constructor arguments, the same forward \
signature, the same outputs (shapes, dtypes and values within floating-point tolerance).
Rules:
- Do the computation in your own Triton kernels (`@triton.jit`) launched from \
`ModelNew.forward`; keep the real work out of PyTorch operators.
- Do the same work in every mode (training or evaluation, with or without autograd) and on \
every input; never cache results between calls.
- Include every import, the kernels and `ModelNew` in one module; `Model`, `get_inputs` and \
`get_init_inputs` are provided by the evaluator and need not be repeated.
- Answer with a short explanation, then the complete module in a single ```python code block."""

TASK_TEMPLATE = """\
Write `ModelNew` for this reference module:

```python
{reference}
```"""

FEEDBACK_TEMPLATE = """\
The evaluator ran your code. Its feedback:

{feedback}

Write an improved, complete module with `ModelNew` in a single ```python code block."""


def build_messages(
    reference_source: str,
    attempts: Sequence[tuple[str, str]] = (),
    system_prompt: str = SYSTEM_PROMPT,
) -> tuple[ChatMessage, ...]:
    """The conversation for the next turn of a kernel task.

    ``attempts`` are the earlier turns as (code, feedback) pairs, oldest first: the code the
    model proposed and the sandbox's feedback text on it.
    """
    messages = [
        ChatMessage("system", system_prompt),
        ChatMessage("user", TASK_TEMPLATE.format(reference=reference_source.strip())),
    ]
    for code, feedback in attempts:
        messages.append(ChatMessage("assistant", f"```python\n{code.strip()}\n```"))
        messages.append(ChatMessage("user", FEEDBACK_TEMPLATE.format(feedback=feedback.strip())))
    return tuple(messages)


def render_prompt(tokenizer: PreTrainedTokenizerBase, messages: Sequence[ChatMessage]) -> str:
    """The conversation as the model reads it, through its chat template."""
    return chat_text(tokenizer, messages)


class ExtractionError(ValueError):
    """No usable ModelNew module in a completion; the message says why, for the next turn."""


_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.DOTALL | re.MULTILINE)
_OPEN_FENCE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})", re.MULTILINE)
_CODE_LANGUAGES = {"", "python", "python3", "py", "triton"}
_CODE_START = re.compile(r"^(import |from \S+ import |@|class |def |[A-Za-z_]\w* *=)")


def _parses(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _imports(tree: ast.Module) -> bool:
    return any(isinstance(node, (ast.Import, ast.ImportFrom)) for node in tree.body)


def _from_blocks(blocks: list[str]) -> str | None:
    """The last block that parses and defines ModelNew; a block without imports is joined to
    the blocks before it (models often put kernels and ModelNew in separate blocks)."""
    for last in range(len(blocks) - 1, -1, -1):
        tree = _parses(blocks[last])
        if tree is None or not defines_model_new(tree):
            continue
        if _imports(tree):
            return blocks[last]
        joined = "\n\n".join(b for b in blocks[:last] if _parses(b)) + "\n\n" + blocks[last]
        return joined.strip() + "\n" if _parses(joined) else blocks[last]
    return None


def _from_bare_text(text: str) -> str | None:
    """Unfenced code: from the first line that looks like code, the longest run of lines that
    parses and defines ModelNew."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _CODE_START.match(line)), None)
    if start is None:
        return None
    for end in range(len(lines), start, -1):
        source = "\n".join(lines[start:end]).strip() + "\n"
        tree = _parses(source)
        if tree is not None and defines_model_new(tree):
            return source
    return None


def extract_code(completion: str) -> str:
    """The ModelNew module of a completion, or ExtractionError saying why there is none."""
    text = _THINK.sub("", completion.replace("\r\n", "\n"))
    if not text.strip():
        raise ExtractionError("the answer is empty (or only reasoning): give the module in a ```python block")
    blocks = [m.group(3).strip() + "\n" for m in _FENCE.finditer(text) if m.group(2).lower() in _CODE_LANGUAGES]
    fenced = _OPEN_FENCE.search(text) is not None
    code = _from_blocks(blocks) if fenced else _from_bare_text(text)
    if code is not None:
        return code
    for block in reversed(blocks):
        if "class ModelNew" in block:
            try:
                ast.parse(block)
            except SyntaxError as error:
                raise ExtractionError(
                    f"the code defining ModelNew does not parse: {error.msg} (line {error.lineno})"
                ) from None
    if fenced and _unclosed(text):
        raise ExtractionError(
            "the last code block is never closed (was the answer cut off?) and no earlier block defines class ModelNew"
        )
    raise ExtractionError("no complete Python module defining class ModelNew was found")


def _unclosed(text: str) -> bool:
    """Whether the text ends inside a code block: an odd number of fence lines."""
    return len(_OPEN_FENCE.findall(text)) % 2 == 1
