"""The policy engine with the transformers backend on a tiny random model, in process."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from drkernel.errors import InvalidArgument, ResourceExhausted
from services.policy.engine import PolicyEngine, open_engine
from services.policy.types import (
    ChatMessage,
    CheckpointUpdate,
    FinishReason,
    GenerationRequest,
)

from ..conftest import BackgroundLoop
from .helpers import forward_logprobs

CHAT = (ChatMessage("user", "Write a Triton kernel that adds two vectors."),)


@pytest.fixture(scope="module")
def engine(tiny_settings: Any, background_loop: BackgroundLoop) -> PolicyEngine:
    return open_engine(tiny_settings)


@pytest.fixture(scope="module")
def reference_model(tiny_model_dir: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()


@pytest.mark.parametrize(("temperature", "top_p"), [(0.0, 1.0), (1.0, 1.0), (0.7, 1.0), (1.3, 0.9)])
def test_logprobs_match_a_separate_forward_pass(
    engine: PolicyEngine, reference_model: Any, background_loop: BackgroundLoop, temperature: float, top_p: float
) -> None:
    result = background_loop.run(
        engine.generate(
            GenerationRequest(
                prompt=CHAT,
                n=2,
                temperature=temperature,
                top_p=top_p,
                max_tokens=12,
                seed=11,
            )
        )
    )
    for completion in result.completions:
        assert len(completion.logprobs) == len(completion.token_ids) == 12
        assert all(lp <= 0 for lp in completion.logprobs)
        served = torch.tensor(completion.logprobs)
        # Greedy log-probs are taken under the untempered distribution.
        expected = forward_logprobs(
            reference_model,
            result.prompt_token_ids,
            completion.token_ids,
            temperature=temperature or 1.0,
            top_p=top_p,
        )
        assert (served - expected).abs().max().item() < 1e-4
        if temperature not in (0.0, 1.0) or top_p < 1.0:
            plain = forward_logprobs(reference_model, result.prompt_token_ids, completion.token_ids)
            assert (served - plain).abs().max().item() > 1e-2  # temperature/top_p did shape them


def test_the_same_seed_gives_the_same_samples(engine: PolicyEngine, background_loop: BackgroundLoop) -> None:
    def sample(seed: int) -> list[tuple[int, ...]]:
        request = GenerationRequest(prompt=CHAT, n=3, max_tokens=10, seed=seed)
        return [c.token_ids for c in background_loop.run(engine.generate(request)).completions]

    first, again, other = sample(7), sample(7), sample(8)
    assert first == again
    assert first != other
    assert len(set(first)) == 3  # the samples of one request differ from each other


def test_greedy_samples_are_identical_and_seed_free(engine: PolicyEngine, background_loop: BackgroundLoop) -> None:
    a = background_loop.run(engine.generate(GenerationRequest(prompt=CHAT, n=2, temperature=0, max_tokens=8, seed=1)))
    b = background_loop.run(engine.generate(GenerationRequest(prompt=CHAT, n=1, temperature=0, max_tokens=8, seed=2)))
    assert a.completions[0].token_ids == a.completions[1].token_ids == b.completions[0].token_ids


def test_samples_beyond_the_batch_size_are_generated_in_several_batches(
    engine: PolicyEngine, background_loop: BackgroundLoop
) -> None:
    result = background_loop.run(engine.generate(GenerationRequest(prompt="def f(x):", n=6, max_tokens=4, seed=3)))
    assert [c.index for c in result.completions] == list(range(6))  # max_batch_size is 4
    assert all(len(c.token_ids) == 4 and c.finish_reason is FinishReason.LENGTH for c in result.completions)


def test_a_stop_string_cuts_the_text_and_ends_the_sample(engine: PolicyEngine, background_loop: BackgroundLoop) -> None:
    free = background_loop.run(engine.generate(GenerationRequest(prompt=CHAT, max_tokens=40, seed=5))).completions[0]
    assert len(free.text) > 20
    stop = free.text[len(free.text) // 2 : len(free.text) // 2 + 3]
    cut = free.text[: free.text.index(stop)]
    stopped = background_loop.run(
        engine.generate(GenerationRequest(prompt=CHAT, max_tokens=40, seed=5, stop=(stop,)))
    ).completions[0]
    assert stopped.finish_reason is FinishReason.STOP
    assert stopped.text == cut
    assert stopped.token_ids == free.token_ids[: len(stopped.token_ids)]
    assert len(stopped.token_ids) < len(free.token_ids)
    assert stop in "".join(free.text)  # the tokens that formed the stop string were kept


def test_stream_pieces_add_up_to_the_generated_completions(
    engine: PolicyEngine, background_loop: BackgroundLoop
) -> None:
    request = GenerationRequest(prompt=CHAT, n=2, max_tokens=10, seed=9)
    whole = background_loop.run(engine.generate(request))

    async def collect() -> list[Any]:
        return [chunk async for chunk in engine.stream(engine.prepare(request))]

    chunks = background_loop.run(collect())
    assert len(chunks) > 2  # really streamed: one piece per token
    for completion in whole.completions:
        mine = [c for c in chunks if c.index == completion.index]
        assert "".join(c.text for c in mine) == completion.text
        assert sum((c.token_ids for c in mine), ()) == completion.token_ids
        assert sum((c.logprobs for c in mine), ()) == completion.logprobs
        assert [c.finish_reason for c in mine][-1] is completion.finish_reason
        assert all(c.finish_reason is None for c in mine[:-1])


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        ({"prompt": ""}, "prompt is empty"),
        ({"prompt": ()}, "no messages"),
        ({"n": 0}, "n must be between 1 and 8"),
        ({"n": 9}, "n must be between 1 and 8"),
        ({"temperature": -0.5}, "temperature must be >= 0"),
        ({"temperature": float("nan")}, "temperature must be >= 0"),
        ({"top_p": 0.0}, "top_p must be in (0, 1]"),
        ({"top_p": 1.5}, "top_p must be in (0, 1]"),
        ({"max_tokens": 0}, "max_tokens must be between 1 and"),
        ({"max_tokens": 1024}, "exceeds the model's context of 1024 tokens"),
        ({"stop": ("",)}, "non-empty strings"),
        ({"request_id": "x" * 300}, "request_id is longer than 256 bytes"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(
    engine: PolicyEngine, request_fields: dict[str, Any], message: str
) -> None:
    request = GenerationRequest(**{"prompt": "hello", **request_fields})
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        engine.prepare(request)


def test_too_many_requests_at_once_are_refused(engine: PolicyEngine, background_loop: BackgroundLoop) -> None:
    async def scenario() -> None:
        streams = [engine.stream(engine.prepare(GenerationRequest(prompt="x", max_tokens=3))) for _ in range(4)]
        for stream in streams:  # queue_capacity is 4: each now holds a place
            await anext(stream)
        with pytest.raises(ResourceExhausted, match="4 generation requests in progress"):
            await anext(engine.stream(engine.prepare(GenerationRequest(prompt="x"))))
        for stream in streams:
            await stream.aclose()
        assert engine.info().queued_requests == engine.info().running_requests == 0

    background_loop.run(scenario())


def test_an_update_waits_for_running_requests_and_never_mixes_versions(
    tiny_settings: Any, other_tiny_model_dir: Path, background_loop: BackgroundLoop
) -> None:
    engine = open_engine(tiny_settings)
    request = GenerationRequest(prompt=CHAT, max_tokens=6, temperature=0)

    async def scenario() -> None:
        before = await engine.generate(request)
        running = engine.stream(engine.prepare(request))
        first = await anext(running)
        update = asyncio.create_task(engine.update_weights(CheckpointUpdate(other_tiny_model_dir)))
        await asyncio.sleep(0.3)
        assert not update.done()  # the running request still holds version 0
        later = asyncio.create_task(engine.generate(request))
        await asyncio.sleep(0.1)
        assert not later.done()  # new requests wait behind the update
        rest = [chunk async for chunk in running]
        assert {c.weights_version for c in [first, *rest]} == {0}
        result = await update
        assert (result.previous_version, result.version) == (0, 1)
        after = await later
        assert after.completions[0].weights_version == 1
        assert after.completions[0].token_ids != before.completions[0].token_ids

    background_loop.run(scenario())
    background_loop.run(engine.close())
