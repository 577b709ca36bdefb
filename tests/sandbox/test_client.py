"""The client seam spreads evaluations over several sandbox servers: a pool of addresses (each
call to the least busy) and one gRPC target listing several (gRPC's round robin)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from drkernel.sections import SecuritySettings
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import SandboxClient, SandboxPool, connect
from services.sandbox.server.servicer import RunningSandbox, start_sandbox
from tests.conftest import BackgroundLoop
from tests.sandbox.conftest import sandbox_settings, source

PLAIN = SecuritySettings()
REQUEST = pb.EvaluateRequest(reference_source=source("relu_task.py"), candidate_source=source("relu_syntax_error.py"))


async def _judged_counts(addresses: list[str]) -> list[int]:
    pool = SandboxPool(addresses, security=PLAIN)
    try:
        return [sum(w.evaluations for w in d.workers) for d in await pool.describe()]
    finally:
        await pool.close()


async def _evaluate(client: SandboxClient | SandboxPool, count: int, one_by_one: bool = False) -> list[int]:
    """Verdicts of ``count`` evaluations, all at once or one after another."""
    try:
        if one_by_one:
            return [(await client.evaluate(REQUEST)).verdict for _ in range(count)]
        return [r.verdict for r in await asyncio.gather(*(client.evaluate(REQUEST) for _ in range(count)))]
    finally:
        await client.close()


@pytest.mark.slow
def test_evaluations_spread_over_every_server(
    background_loop: BackgroundLoop, sandbox: RunningSandbox, tmp_path: Path
) -> None:
    second = background_loop.run(start_sandbox(sandbox_settings(tmp_path, cpu_workers=1, warm_candidates=1), PLAIN))
    addresses = [sandbox.address, second.address]
    try:
        single = background_loop.run(_make_client(addresses[0]))
        assert isinstance(single, SandboxClient)
        background_loop.run(single.close())
        before = background_loop.run(_judged_counts(addresses))
        pool = background_loop.run(_make_pool(addresses))
        assert background_loop.run(_evaluate(pool, 4)) == [pb.VERDICT_SYNTAX_ERROR] * 4
        after_pool = background_loop.run(_judged_counts(addresses))
        assert all(a > b for a, b in zip(after_pool, before, strict=True))
        # round robin takes turns among the servers it is connected to: one call after another,
        # so that the first calls do not all go to the first server to connect
        target = ",".join(addresses)  # an IP list: drkernel.channels turns it into an ipv4: target
        balanced = background_loop.run(_make_client(target))
        assert background_loop.run(_evaluate(balanced, 6, one_by_one=True)) == [pb.VERDICT_SYNTAX_ERROR] * 6
        after_target = background_loop.run(_judged_counts(addresses))
        assert all(a > b for a, b in zip(after_target, after_pool, strict=True))
    finally:
        background_loop.run(second.stop())


async def _make_pool(addresses: list[str]) -> SandboxClient | SandboxPool:
    return connect(addresses, concurrency=4, security=PLAIN)


async def _make_client(target: str) -> SandboxClient | SandboxPool:
    return connect([target], concurrency=4, security=PLAIN)
