"""Continuous batching for the transformers backend: every request in flight is decoded in one
batch, one token per row per forward pass, and requests join or leave between passes.

One worker thread owns the model. Each turn of its loop it drops the rows of requests whose
reader has gone, admits waiting requests (one prefill pass over their left-padded prompts, one
row per request, copied to each of its samples, then merged into the running batch), and runs
one decode pass over all rows. A row leaves the batch as soon as it ends (end of sequence, stop
string, its own ``max_tokens``), so a long request never holds back the others' results. When
the batch is empty, the first arrival waits ``window_s`` for others to join its prefill.

Every row samples with its request's temperature and top-p and its own generator
(``sampling``), so a request's tokens and log-probs do not depend on what else is in the batch
(up to float rounding of the padded batch: about 1e-7 in log-probs in float32).

Work that must see no generation running (weight updates) goes through ``exclusive``: admission
stops, the running rows finish, the job runs on the worker thread, admission resumes. A weight
update can therefore never land between two tokens of a batch.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from random import Random
from typing import Any

import torch
from transformers import DynamicCache, PreTrainedTokenizerBase, StopStringCriteria

from drkernel.errors import Unavailable
from services.policy import metrics
from services.policy.kv_batch import KvBatch
from services.policy.sampling import draw, sample_rng, shape_scores
from services.policy.types import FinishReason, SamplingParams, TokenDelta

DONE = object()  # posted after a request's last delta
# (input ids [rows, tokens], attention mask [rows, columns], position ids [rows, tokens], cache)
# -> logits of each row's last input token [rows, vocab]; the cache grows by ``tokens`` columns.
Forward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, DynamicCache], torch.Tensor]


class BatchRequest:
    """One generation request: its prompt and parameters, the queue (on its reader's event
    loop) that receives its deltas (lists of ``TokenDelta``, then ``DONE``, or an exception),
    and whether its reader has gone."""

    def __init__(
        self,
        prompt: Sequence[int],
        params: SamplingParams,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[object],
    ) -> None:
        self.prompt, self.params, self.loop, self.queue = list(prompt), params, loop, queue
        self.cancelled = threading.Event()
        self.arrived = time.monotonic()
        self.admitted = 0  # samples started
        self.finished = 0  # samples ended
        self.stop: StopStringCriteria | None = None  # built on the worker thread when admitted


@dataclass
class _Row:
    """One sample in the batch."""

    request: BatchRequest
    index: int
    rng: Random | None  # None: greedy
    recent: list[int] = field(default_factory=list)  # last tokens (prompt, then samples): stop strings
    sampled: int = 0


@dataclass(frozen=True)
class _Admission:
    request: BatchRequest
    first: int  # index of its first sample admitted now
    count: int


class ContinuousBatcher:
    """Decodes every admitted request's samples together on one worker thread."""

    def __init__(
        self,
        forward: Forward,
        tokenizer: PreTrainedTokenizerBase,
        eos_token_ids: frozenset[int],
        pad_token_id: int,
        device: torch.device,
        max_rows: int,
        window_s: float,
    ) -> None:
        self._forward, self._tokenizer = forward, tokenizer
        self._eos, self._pad, self._device = eos_token_ids, pad_token_id, device
        self._max_rows, self._window_s = max_rows, window_s
        self._wake = threading.Condition()
        self._pending: deque[BatchRequest] = deque()
        self._exclusive: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._closing = False
        self._batch: KvBatch | None = None
        self._rows: list[_Row] = []  # row i of the batch
        self._thread = threading.Thread(target=self._run, name="policy-batcher", daemon=True)
        self._thread.start()

    def submit(self, request: BatchRequest) -> None:
        """Queues a request; its deltas arrive in its queue."""
        with self._wake:
            if self._closing:
                raise Unavailable("the policy backend is shutting down")
            self._pending.append(request)
            self._wake.notify()

    def exclusive(self, job: Callable[[], Any]) -> Future[Any]:
        """Runs ``job`` on the worker thread once no row is in flight; new requests wait."""
        future: Future[Any] = Future()
        with self._wake:
            if self._closing:
                raise Unavailable("the policy backend is shutting down")
            self._exclusive.append((job, future))
            self._wake.notify()
        return future

    def close(self) -> None:
        """Stops the worker; requests still queued or running get ``Unavailable``."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self._retain([i for i, row in enumerate(self._rows) if not row.request.cancelled.is_set()])
            work = self._next_work()
            if work is None:
                break
            admissions, job = work
            if job is not None:
                _run_job(*job)
                continue
            try:
                if admissions:
                    self._admit(admissions)
                if self._rows:
                    self._step()
            except Exception as error:  # noqa: BLE001 - the batch is lost: its requests learn why
                self._fail(error, [a.request for a in admissions])
        self._shut_down()

    def _next_work(self) -> tuple[list[_Admission], tuple[Callable[[], Any], Future[Any]] | None] | None:
        """What the worker does next: requests to admit, or an exclusive job; None: stop.
        Blocks while there is nothing to do, and for the batch window."""
        with self._wake:
            while not self._closing:
                while self._pending and self._pending[0].cancelled.is_set():
                    self._pending.popleft()
                if self._exclusive:
                    return ([], None) if self._rows else ([], self._exclusive.popleft())
                if self._pending and not self._rows:
                    wait = self._pending[0].arrived + self._window_s - time.monotonic()
                    waiting = sum(r.params.n - r.admitted for r in self._pending)
                    if wait > 0 and waiting < self._max_rows:
                        self._wake.wait(wait)
                        continue
                if self._pending or self._rows:
                    return self._take(), None
                self._wake.wait()
            return None

    def _take(self) -> list[_Admission]:
        """Admits waiting samples in arrival order while the batch has room (holding the lock)."""
        admissions: list[_Admission] = []
        free = self._max_rows - len(self._rows)
        while self._pending and free > 0:
            request = self._pending[0]
            count = min(free, request.params.n - request.admitted)
            if not request.cancelled.is_set():
                admissions.append(_Admission(request, request.admitted, count))
                free -= count
            request.admitted += count
            if request.admitted == request.params.n or request.cancelled.is_set():
                self._pending.popleft()
        return admissions

    @torch.inference_mode()
    def _admit(self, admissions: list[_Admission]) -> None:
        """One prefill pass over the new prompts; their first tokens are sampled here, and the
        rows that go on join the running batch."""
        width = max(len(a.request.prompt) for a in admissions)
        ids = torch.full((len(admissions), width), self._pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, admission in enumerate(admissions):
            prompt = admission.request.prompt
            ids[i, width - len(prompt) :] = torch.tensor(prompt)
            mask[i, width - len(prompt) :] = 1
        ids, mask = ids.to(self._device), mask.to(self._device)
        cache = DynamicCache()
        logits = self._forward(ids, mask, (mask.cumsum(dim=1) - 1).clamp(min=0), cache)
        metrics.FORWARD_PASSES.labels("prefill").inc()
        copies = torch.tensor([i for i, a in enumerate(admissions) for _ in range(a.count)], device=self._device)
        batch = KvBatch(cache, mask, mask.sum(dim=1), torch.zeros_like(mask[:, 0]))
        batch.select(copies)
        rows = [self._row(a, a.first + k) for a in admissions for k in range(a.count)]
        batch.tokens, keep = self._sample(rows, logits[copies])
        if len(keep) < len(rows):
            if not keep:
                return
            batch.select(torch.tensor(keep, device=self._device))
        rows = [rows[i] for i in keep]
        if self._batch is None:
            self._batch = batch
        else:
            self._batch.merge(batch)
        self._batch.trim()
        self._rows += rows

    def _row(self, admission: _Admission, index: int) -> _Row:
        request = admission.request
        params = request.params
        if params.stop and request.stop is None:
            request.stop = StopStringCriteria(self._tokenizer, list(params.stop))
        recent = request.prompt[-request.stop.maximum_token_len :] if request.stop else []
        return _Row(request, index, None if params.greedy else sample_rng(params.seed, index), recent)

    @torch.inference_mode()
    def _step(self) -> None:
        """One decode pass: every row's last token in, one new token per row out."""
        batch = self._batch
        assert batch is not None
        batch.mask = torch.cat([batch.mask, batch.mask.new_ones(batch.rows, 1)], dim=1)
        logits = self._forward(batch.tokens[:, None], batch.mask, batch.positions[:, None], batch.cache)
        metrics.FORWARD_PASSES.labels("decode").inc()
        metrics.BATCH_ROWS.observe(batch.rows)
        batch.positions = batch.positions + 1
        batch.tokens, keep = self._sample(self._rows, logits)
        self._retain(keep)

    def _sample(self, rows: list[_Row], logits: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
        """Draws each row's next token, reports it, and returns the tokens with the indices of
        the rows that go on."""
        params = [row.request.params for row in rows]
        scores = shape_scores(logits, [p.temperature for p in params], [p.top_p for p in params])
        tokens = draw(scores, [None if row.rng is None else row.rng.random() for row in rows])
        logprobs = scores.log_softmax(dim=-1).gather(1, tokens[:, None]).squeeze(1)
        deltas: dict[BatchRequest, list[TokenDelta]] = {}
        keep: list[int] = []
        for i, (row, token, logprob) in enumerate(zip(rows, tokens.tolist(), logprobs.tolist(), strict=True)):
            reason = self._advance(row, token)
            deltas.setdefault(row.request, []).append(TokenDelta(row.index, (token,), (logprob,), reason))
            if reason is None:
                keep.append(i)
            else:
                row.request.finished += 1
        posts: list[tuple[BatchRequest, object]] = []
        for request, request_deltas in deltas.items():
            posts.append((request, request_deltas))
            if request.finished == request.params.n:
                posts.append((request, DONE))
        _post(posts)
        return tokens, keep

    def _advance(self, row: _Row, token: int) -> FinishReason | None:
        """Counts a sampled token and says whether it ends the row."""
        row.sampled += 1
        stop = row.request.stop
        if stop is not None:
            row.recent = [*row.recent, token][-stop.maximum_token_len :]
            if bool(stop(torch.tensor([row.recent]), None)[0]):
                return FinishReason.STOP
        if token in self._eos:
            return FinishReason.STOP
        return FinishReason.LENGTH if row.sampled >= row.request.params.max_tokens else None

    def _retain(self, keep: list[int]) -> None:
        """Keeps the given rows of the batch (in order) and drops the rest."""
        if len(keep) == len(self._rows):
            return
        self._rows = [self._rows[i] for i in keep]
        if not keep:
            self._batch = None
            return
        assert self._batch is not None
        self._batch.select(torch.tensor(keep, device=self._device))
        self._batch.trim()

    def _fail(self, error: BaseException, admitting: list[BatchRequest]) -> None:
        """Ends every request of the batch (and those being admitted) with ``error``."""
        failed = {id(r): r for r in [*admitting, *(row.request for row in self._rows)]}
        for request in failed.values():
            request.cancelled.set()
        _post([(request, error) for request in failed.values()])
        self._batch, self._rows = None, []

    def _shut_down(self) -> None:
        error = Unavailable("the policy backend is shutting down")
        with self._wake:
            pending, jobs = list(self._pending), list(self._exclusive)
            self._pending.clear()
            self._exclusive.clear()
        self._fail(error, pending)
        for _, future in jobs:
            future.set_exception(error)


def _post(items: list[tuple[BatchRequest, object]]) -> None:
    """Puts items in their requests' queues with one wake-up per event loop: every wake-up
    hands the interpreter lock to the loop's thread, which the worker then waits to get back."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[BatchRequest, object]]] = {}
    for request, item in items:
        by_loop.setdefault(request.loop, []).append((request, item))
    for loop, posts in by_loop.items():
        try:
            loop.call_soon_threadsafe(_deliver, posts)
        except RuntimeError:  # the readers' loop is closed: nobody waits for the rest
            for request, _ in posts:
                request.cancelled.set()


def _deliver(posts: list[tuple[BatchRequest, object]]) -> None:
    for request, item in posts:
        request.queue.put_nowait(item)


def _run_job(job: Callable[[], Any], future: Future[Any]) -> None:
    try:
        future.set_result(job())
    except Exception as error:  # noqa: BLE001 - the caller awaits the future and re-raises it
        future.set_exception(error)
