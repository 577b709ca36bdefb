"""Continuous batching in the transformers backend, on a tiny random model in process: requests
in flight together give what they give alone, share forward passes, finish on their own, and
never see a weight update land inside a batch."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from services.policy.engine import PolicyEngine, open_engine
from services.policy.settings import TransformersSettings
from services.policy.types import (
    ChatMessage,
    CheckpointUpdate,
    FinishReason,
    GenerationRequest,
    GenerationResult,
    SamplingParams,
)

from ..conftest import BackgroundLoop

CHAT = (ChatMessage("user", "Write a Triton kernel that adds two vectors."),)
LONG_CHAT = (
    ChatMessage("system", "You write fast, correct Triton kernels for PyTorch modules."),
    ChatMessage("user", "Write a Triton kernel that computes the softmax of each row of a matrix, then explain it."),
)
# Mixed lengths, sample counts, temperatures, nuclei and seeds: 8 rows, one batch.
MIXED = (
    GenerationRequest(prompt=CHAT, n=2, temperature=0, max_tokens=12),
    GenerationRequest(prompt="def f(x):", n=3, temperature=1.0, max_tokens=9, seed=5),
    GenerationRequest(prompt=LONG_CHAT, n=1, temperature=0.7, top_p=0.9, max_tokens=16, seed=6),
    GenerationRequest(prompt="import torch", n=2, temperature=1.3, max_tokens=5, seed=7),
)


def _passes(phase: str) -> float:
    return REGISTRY.get_sample_value("drkernel_policy_forward_passes_total", {"phase": phase}) or 0.0


def _rows_decoded() -> float:
    return REGISTRY.get_sample_value("drkernel_policy_batch_rows_sum") or 0.0


def _counters() -> tuple[float, float, float]:
    return _passes("prefill"), _passes("decode"), _rows_decoded()


def _delta(before: tuple[float, float, float]) -> tuple[float, float, float]:
    after = _counters()
    return after[0] - before[0], after[1] - before[1], after[2] - before[2]


@pytest.fixture(scope="module")
def engine(tiny_settings: Any, background_loop: BackgroundLoop) -> PolicyEngine:
    """Room for 8 rows; a request reaching an idle backend waits 0.2 s for the others."""
    settings = tiny_settings.model_copy(
        update={"transformers": TransformersSettings(max_batch_size=8, batch_window_ms=200), "queue_capacity": 16}
    )
    return open_engine(settings)


@pytest.fixture(scope="module")
def mixed_alone(engine: PolicyEngine, background_loop: BackgroundLoop) -> list[GenerationResult]:
    """Each request of MIXED run on its own."""
    return _alone(engine, background_loop, MIXED)


def _alone(engine: PolicyEngine, loop: BackgroundLoop, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    return [loop.run(engine.generate(request)) for request in requests]


def _together(
    engine: PolicyEngine, loop: BackgroundLoop, requests: Sequence[GenerationRequest]
) -> list[GenerationResult]:
    async def gather() -> list[GenerationResult]:
        return list(await asyncio.gather(*(engine.generate(r) for r in requests)))

    return loop.run(gather())


def _assert_same(batched: GenerationResult, alone: GenerationResult) -> None:
    assert batched.prompt_token_ids == alone.prompt_token_ids
    for mine, theirs in zip(batched.completions, alone.completions, strict=True):
        assert mine.token_ids == theirs.token_ids
        assert mine.text == theirs.text
        assert mine.finish_reason is theirs.finish_reason
        assert mine.weights_version == theirs.weights_version
        # Rows of a padded batch round differently from a batch of one (float32: ~1e-7).
        assert max(abs(a - b) for a, b in zip(mine.logprobs, theirs.logprobs, strict=True)) < 1e-5


def test_requests_batched_together_give_what_they_give_alone(
    engine: PolicyEngine, background_loop: BackgroundLoop, mixed_alone: list[GenerationResult]
) -> None:
    before = _counters()
    together = _together(engine, background_loop, MIXED)
    prefills, decodes, rows = _delta(before)
    assert prefills == 1  # one prefill pass for all four prompts
    assert decodes == max(r.max_tokens or 0 for r in MIXED) - 1  # the longest request's steps
    assert rows < sum(r.n * ((r.max_tokens or 0) - 1) for r in MIXED) + 1  # finished rows left
    for batched, single in zip(together, mixed_alone, strict=True):
        _assert_same(batched, single)
    assert len({c.token_ids for c in together[1].completions}) == 3  # a request's samples differ


def test_concurrent_requests_share_forward_passes(engine: PolicyEngine, background_loop: BackgroundLoop) -> None:
    requests = [GenerationRequest(prompt=f"def add_{i}(a, b):", temperature=0, max_tokens=8) for i in range(6)]
    before = _counters()
    results = _together(engine, background_loop, requests)
    assert _delta(before) == (1, 7, 6 * 7)  # one prefill, then 7 decode passes of 6 rows each
    assert all(len(r.completions[0].token_ids) == 8 for r in results)


def test_requests_join_a_running_batch_and_leave_it_when_done(
    engine: PolicyEngine, background_loop: BackgroundLoop
) -> None:
    running = GenerationRequest(prompt=CHAT, n=2, temperature=1.0, max_tokens=30, seed=3)
    # A prompt shorter and one longer than the running rows' tokens when they join.
    joining = (
        GenerationRequest(prompt="x = 1", temperature=0, max_tokens=6),
        GenerationRequest(prompt=LONG_CHAT + CHAT, temperature=0.8, max_tokens=10, seed=4),
    )
    alone = _alone(engine, background_loop, [running, *joining])

    async def scenario() -> tuple[list[Any], list[GenerationResult], bool]:
        stream = engine.stream(engine.prepare(running))
        chunks = [await anext(stream) for _ in range(6)]  # 3 tokens of each sample
        late = await asyncio.gather(*(engine.generate(r) for r in joining))
        still_running = engine.info().running_requests == 1  # the joiners ended before it
        chunks += [chunk async for chunk in stream]
        return chunks, list(late), still_running

    before = _counters()
    chunks, late, still_running = background_loop.run(scenario())
    prefills, decodes, _ = _delta(before)
    assert still_running
    assert prefills in (2, 3)  # the joiners arrive together or one step apart
    assert decodes == 29  # nobody waited for the running batch to end
    for index, completion in enumerate(alone[0].completions):
        mine = [c for c in chunks if c.index == index]
        assert sum((c.token_ids for c in mine), ()) == completion.token_ids
        gap = max(abs(a - b) for a, b in zip(sum((c.logprobs for c in mine), ()), completion.logprobs, strict=True))
        assert gap < 1e-5
    for batched, single in zip(late, alone[1:], strict=True):
        _assert_same(batched, single)


def test_a_short_request_returns_while_a_long_one_goes_on(
    engine: PolicyEngine, background_loop: BackgroundLoop
) -> None:
    lengths = (2, 6, 120)
    requests = [GenerationRequest(prompt=CHAT, temperature=0, max_tokens=m) for m in lengths]

    async def scenario() -> None:
        tasks = [asyncio.create_task(engine.generate(r)) for r in requests]
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        assert done == {tasks[0]}
        await asyncio.wait(tasks[1:], return_when=asyncio.FIRST_COMPLETED)
        assert tasks[1].done() and not tasks[2].done()
        results = [await t for t in tasks]
        for result, length in zip(results, lengths, strict=True):
            completion = result.completions[0]
            assert len(completion.token_ids) == length and completion.finish_reason is FinishReason.LENGTH
        long = results[2].completions[0].token_ids
        assert results[0].completions[0].token_ids == long[:2]  # greedy: the same path, cut shorter
        assert results[1].completions[0].token_ids == long[:6]

    background_loop.run(scenario())


def test_each_request_keeps_its_own_stop_strings(engine: PolicyEngine, background_loop: BackgroundLoop) -> None:
    prompts = (CHAT, LONG_CHAT, "def f(x):")
    free = _together(
        engine, background_loop, [GenerationRequest(prompt=p, temperature=0, max_tokens=24) for p in prompts]
    )
    texts = [r.completions[0].text for r in free]
    assert all(len(t) > 20 for t in texts)
    stops = [(texts[0][10:13],), (texts[1][15:17], "never appears"), ()]
    stopped = _together(
        engine,
        background_loop,
        [
            GenerationRequest(prompt=p, temperature=0, max_tokens=24, stop=s)
            for p, s in zip(prompts, stops, strict=True)
        ],
    )
    for result, whole, stop in zip(stopped, free, stops, strict=True):
        completion, text = result.completions[0], whole.completions[0].text
        expected = whole.completions[0].token_ids
        if stop:
            assert completion.finish_reason is FinishReason.STOP
            assert completion.text == text[: text.index(stop[0])]
            assert completion.token_ids == expected[: len(completion.token_ids)]
            assert len(completion.token_ids) < len(expected)
        else:
            assert completion.finish_reason is FinishReason.LENGTH and completion.token_ids == expected


def test_a_cancelled_request_leaves_the_others_untouched(
    engine: PolicyEngine, background_loop: BackgroundLoop, mixed_alone: list[GenerationResult]
) -> None:
    kept, alone = MIXED[:2], mixed_alone[:2]
    doomed = GenerationRequest(prompt=LONG_CHAT, n=2, temperature=1.0, max_tokens=200, seed=9)

    async def scenario() -> list[GenerationResult]:
        stream = engine.stream(engine.prepare(doomed))
        others = asyncio.gather(*(engine.generate(r) for r in kept))
        for _ in range(4):
            await anext(stream)
        await stream.aclose()
        return list(await others)

    before = _counters()
    results = background_loop.run(scenario())
    _, decodes, _ = _delta(before)
    assert decodes < 50  # the cancelled rows did not run on to 200 tokens
    for batched, single in zip(results, alone, strict=True):
        _assert_same(batched, single)
    info = engine.info()
    assert info.running_requests == info.queued_requests == 0
    assert (
        _together(engine, background_loop, [kept[0]])[0].completions[0].token_ids == alone[0].completions[0].token_ids
    )


def test_a_sample_depends_on_its_seed_and_index_only(engine: PolicyEngine, background_loop: BackgroundLoop) -> None:
    six, two = _together(
        engine,
        background_loop,
        [
            GenerationRequest(prompt=CHAT, n=6, max_tokens=8, seed=21),
            GenerationRequest(prompt=CHAT, n=2, max_tokens=8, seed=21),
        ],
    )
    assert [c.token_ids for c in six.completions[:2]] == [c.token_ids for c in two.completions]
    assert len({c.token_ids for c in six.completions}) == 6


def test_a_weight_update_waits_for_the_batch_in_flight(
    tiny_settings: Any, other_tiny_model_dir: Path, background_loop: BackgroundLoop
) -> None:
    """At the backend itself (the engine's version gate bypassed): an update sent while rows are
    decoding is applied only once they are done, and a request sent after it waits for it."""
    engine = open_engine(tiny_settings)
    backend = engine._backend
    prompt = list(engine.prepare(GenerationRequest(prompt=CHAT)).prompt_token_ids)
    params = SamplingParams(n=2, temperature=0, top_p=1.0, max_tokens=80, stop=(), seed=0)

    def first_sample(deltas: list[list[Any]]) -> list[int]:
        return [d.token_ids[0] for step in deltas for d in step if d.index == 0]

    async def tokens() -> list[int]:
        return first_sample([deltas async for deltas in backend.stream(prompt, params)])

    async def scenario() -> None:
        old = await tokens()
        stream = backend.stream(prompt, params)
        seen = [await anext(stream)]  # the batch is decoding: 79 steps to go
        update = asyncio.create_task(backend.update(CheckpointUpdate(other_tiny_model_dir), 1))
        await asyncio.sleep(0)
        later = asyncio.create_task(tokens())
        seen += [deltas async for deltas in stream]
        assert first_sample(seen) == old  # every token of the batch from the old weights
        assert await update > 0
        assert await later != old  # admitted after the update

    background_loop.run(scenario())
    background_loop.run(engine.close())
