"""Incremental detokenisation with stop strings, shared by every backend.

Decoding a growing token list from scratch every step costs O(length^2); instead each step
decodes a short window and keeps what it adds (the prefix/read offset method used by
text-generation-inference and vLLM), so characters that need several tokens, and tokenizers
that change a token's text depending on its left neighbour, come out right. Text that could
still be the start of a stop string is held back until it is settled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

_INCOMPLETE = "\ufffd"  # what decode() gives for a partial UTF-8 sequence


class Decoder(Protocol):
    """The part of a Hugging Face tokenizer this module needs."""

    def decode(self, token_ids: list[int], skip_special_tokens: bool = ...) -> str: ...


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """The text before the earliest stop string, and whether one was found."""
    hits = [i for i in (text.find(s) for s in stop) if i >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


def _held_back(text: str, stop: Sequence[str]) -> int:
    """Length of the longest end of ``text`` that is a proper start of a stop string."""
    longest = 0
    for s in stop:
        for size in range(min(len(s) - 1, len(text)), longest, -1):
            if text.endswith(s[:size]):
                longest = size
                break
    return longest


class IncrementalText:
    """The text of one sample, fed token by token; special tokens are left out."""

    def __init__(self, tokenizer: Decoder, stop: Sequence[str]) -> None:
        self._tokenizer, self._stop = tokenizer, tuple(stop)
        self._ids: list[int] = []
        self._prefix = self._read = 0
        self._text = ""
        self._emitted = 0
        self._stopped = False

    def _decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=True)

    def _advance(self, final: bool) -> None:
        before = self._decode(self._ids[self._prefix : self._read])
        window = self._decode(self._ids[self._prefix :])
        if len(window) > len(before) and (final or not window.endswith(_INCOMPLETE)):
            self._text += window[len(before) :]
            self._prefix, self._read = self._read, len(self._ids)

    def _settle(self, final: bool) -> str:
        if self._stopped:
            return ""
        text, self._stopped = cut_at_stop(self._text, self._stop)
        end = len(text) if self._stopped or final else len(text) - _held_back(text, self._stop)
        new = text[self._emitted : end]
        self._emitted = max(self._emitted, end)
        return new

    def add(self, token_ids: Sequence[int]) -> str:
        """Takes new tokens and returns the text they settle (possibly empty)."""
        self._ids.extend(token_ids)
        self._advance(final=False)
        return self._settle(final=False)

    def finish(self) -> str:
        """Returns the rest of the text once the sample has ended, cut before a stop string."""
        self._advance(final=True)
        return self._settle(final=True)
