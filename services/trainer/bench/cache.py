"""Results kept across runs, so that an interrupted or repeated benchmark judges nothing twice.

``OUT/cache.jsonl`` gets one line per judged evaluation (the whole EvaluateResponse) and per
timed baseline, appended and flushed as each arrives; a run resumed in the same OUT reads it
back first. An evaluation is keyed by what decides its result: the task's source, the
candidate's source, the correctness profile, the device (kind and name, from the sandbox's
Describe), the seed and whether timing ran. A line cut off by an interruption is ignored.
Errors of the sandbox itself (no verdict) are never cached, so a rerun tries them again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from drkernel.logs import get_logger
from drkernel.v1 import sandbox_pb2 as pb
from services.sandbox.client import Evaluator

log = get_logger(__name__)

CACHE_FILE = "cache.jsonl"
# Bumped when what a key covers changes, so that older entries are never read as current.
_KEY_VERSION = 1


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def cache_key(**parts: object) -> str:
    """A stable key over named parts."""
    return digest(json.dumps({"v": _KEY_VERSION, **parts}, sort_keys=True))


def evaluation_key(request: pb.EvaluateRequest, device: str) -> str:
    options = request.options
    return cache_key(
        kind="evaluation",
        task=digest(request.reference_source),
        code=digest(request.candidate_source),
        profile=pb.CorrectnessProfile.Name(options.correctness_profile),
        device=device,
        seed=options.seed if options.HasField("seed") else None,
        timing=not options.skip_timing,
    )


class ResultCache:
    """The cache file: entries by key, appended as they come."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] = {}
        if path.is_file():
            self._load()

    def _load(self) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            try:
                entry = json.loads(line)
                self._entries[entry["key"]] = entry["value"]
            except (json.JSONDecodeError, KeyError, TypeError):
                if number != len(lines):  # the last line may be cut off by an interruption
                    log.warning("unreadable cache line skipped", path=str(self.path), line=number)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        return self._entries.get(key)

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        self._entries[key] = dict(value)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"key": key, "value": value}) + "\n")


class CachedSandbox:
    """An Evaluator that answers from the cache when it can and judges otherwise; the same
    evaluation asked for twice at once is judged once. ``device`` names the sandbox's device
    in the keys."""

    def __init__(self, evaluator: Evaluator, cache: ResultCache, device: str) -> None:
        self._evaluator, self._cache, self.device = evaluator, cache, device
        self._in_flight: dict[str, asyncio.Future[pb.EvaluateResponse]] = {}
        self.hits = 0
        self.judged = 0

    async def evaluate(self, request: pb.EvaluateRequest, timeout: float | None = None) -> pb.EvaluateResponse:
        key = evaluation_key(request, self.device)
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            return _with_id(json_format.ParseDict(cached, pb.EvaluateResponse()), request.request_id)
        if key in self._in_flight:
            self.hits += 1
            return _with_id(await asyncio.shield(self._in_flight[key]), request.request_id)
        future: asyncio.Future[pb.EvaluateResponse] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            response = await self._evaluator.evaluate(request, timeout)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as error:
            future.set_exception(error)
            future.exception()  # retrieved here: waiters re-raise it, nobody else must
            raise
        finally:
            del self._in_flight[key]
        self.judged += 1
        self._cache.put(key, json_format.MessageToDict(response, preserving_proto_field_name=True))
        future.set_result(response)
        return response


def _with_id(response: pb.EvaluateResponse, request_id: str) -> pb.EvaluateResponse:
    copy = pb.EvaluateResponse()
    copy.CopyFrom(response)
    copy.request_id = request_id
    return copy
