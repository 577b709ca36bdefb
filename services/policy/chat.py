"""Rendering chat messages with a model's own chat template.

Some templates refuse a system turn (they raise); for those the system text is folded into
the first user turn, which is how such models are meant to receive instructions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from drkernel.errors import InvalidArgument
from services.policy.types import ChatMessage

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def _fold_system(messages: Sequence[ChatMessage]) -> list[ChatMessage] | None:
    if len(messages) < 2 or messages[0].role != "system" or messages[1].role != "user":
        return None
    merged = ChatMessage("user", f"{messages[0].content}\n\n{messages[1].content}")
    return [merged, *messages[2:]]


def _apply(tokenizer: PreTrainedTokenizerBase, messages: Sequence[ChatMessage], tokenize: bool) -> Any:
    if not messages:
        raise InvalidArgument("the conversation has no messages")
    if not tokenizer.chat_template:
        raise InvalidArgument("the model has no chat template: send prompt text instead of chat messages")
    from jinja2 import TemplateError

    def render(turns: Sequence[ChatMessage]) -> Any:
        return tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in turns],
            add_generation_prompt=True,
            tokenize=tokenize,
            return_dict=False,
        )

    try:
        return render(messages)
    except TemplateError as error:
        folded = _fold_system(messages)
        if folded is not None:
            try:
                return render(folded)
            except TemplateError:
                pass
        raise InvalidArgument(f"the chat template rejected the messages: {error}") from None


def chat_text(tokenizer: PreTrainedTokenizerBase, messages: Sequence[ChatMessage]) -> str:
    """The conversation as the model sees it, ending with the prompt for the assistant."""
    return str(_apply(tokenizer, messages, tokenize=False))


def chat_token_ids(tokenizer: PreTrainedTokenizerBase, messages: Sequence[ChatMessage]) -> list[int]:
    """The token ids of ``chat_text``, tokenized the way the template intends."""
    return list(_apply(tokenizer, messages, tokenize=True))
