"""Incremental detokenisation and stop strings, with the default model's real tokenizer."""

from __future__ import annotations

import random
from typing import Any

from services.policy.detokenize import IncrementalText, cut_at_stop

TEXT = "Fused kernel: héllo wörld 世界 🙂\n\tdef f(x):\n    return x * 2  # ∑ done"


def feed(tokenizer: Any, ids: list[int], stop: tuple[str, ...] = ()) -> list[str]:
    text = IncrementalText(tokenizer, stop)
    return [text.add([token]) for token in ids] + [text.finish()]


def test_token_by_token_text_equals_decoding_the_whole(tokenizer: Any) -> None:
    ids = tokenizer.encode(TEXT)
    pieces = feed(tokenizer, ids)
    assert "".join(pieces) == tokenizer.decode(ids, skip_special_tokens=True) == TEXT
    assert all("\ufffd" not in piece for piece in pieces)  # multi-byte characters never split


def test_random_tokens_and_special_tokens_decode_the_same_either_way(tokenizer: Any) -> None:
    rng = random.Random(0)
    ids = [rng.randrange(len(tokenizer)) for _ in range(300)] + [tokenizer.eos_token_id]
    assert "".join(feed(tokenizer, ids)) == tokenizer.decode(ids, skip_special_tokens=True)


def test_a_possible_stop_string_is_held_back_until_settled(tokenizer: Any) -> None:
    text = IncrementalText(tokenizer, ("```\n",))
    assert text.add(tokenizer.encode("x = 1\n")) == "x = 1\n"
    assert text.add(tokenizer.encode("``")) == ""  # could become the stop string
    assert text.add(tokenizer.encode("` not it")) == "``` not it"  # it did not


def test_text_is_cut_before_the_earliest_stop_string(tokenizer: Any) -> None:
    ids = tokenizer.encode("return a + b\n\n# tests\nassert add(1, 2) == 3\n")
    pieces = feed(tokenizer, ids, stop=("assert", "\n\n"))
    assert "".join(pieces) == "return a + b"
    assert cut_at_stop("abcSTOPdefEND", ("END", "STOP")) == ("abc", True)
    assert cut_at_stop("abc", ("STOP",)) == ("abc", False)
