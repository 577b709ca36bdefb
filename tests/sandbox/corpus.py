"""Candidate corpora kept as test data: each file's module docstring ends in ``key: value`` lines
that say which built-in task it is judged against and what the judge must conclude.

    task: l1_relu              built-in task name (services/sandbox/tasks/builtin), or a task
                               file next to the candidate (``tasks/relu_large.py``)
    expect: HACKED             a verdict without its VERDICT_ prefix, "not CORRECT", or "no gain"
                               (correct, and no better than its ``baseline:`` twin: on a GPU
                               no faster, on CPU no more coverage and no more reward)
    baseline: <file>           "no gain": the honest twin in the same directory
    reason: <text>             HACKED: a hack_reasons entry must contain it (or one of several
                               split by ' | ', where a thread's timing or the random slot of
                               a knock-out decides which of two true findings comes first)
    error: <text>              otherwise: the response's error must contain it
    timing: on                 judge with the (CPU) timing stage too
    coverage_below: <float>    CORRECT: its coverage must be below this (a lazy kernel)
    coverage_above: <float>    CORRECT (legitimate corpus): its coverage must exceed this
                               (default 0.9 there: honest kernels own the work)
    feedback: <text>           the response's feedback must contain it
    source: <text>             where the pattern was published (hack corpus)
    needs: isolation           judge only where the sandbox is complete (``ISOLATED``)
    gap: <text>                the judge misses this today: the test is a strict xfail

A file may also hold ``__NAME__`` placeholders that a test fills in (``render``).
"""

from __future__ import annotations

import ast
import concurrent.futures
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import grpc

from drkernel.channels import open_channel
from drkernel.sections import SecuritySettings
from drkernel.v1 import sandbox_pb2 as pb
from drkernel.v1 import sandbox_pb2_grpc
from services.sandbox.client import SERVICE
from services.sandbox.server.isolation import Launcher
from services.sandbox.settings import IsolationSettings
from services.sandbox.tasks import builtin_task

_KEYS = (
    "task",
    "expect",
    "reason",
    "error",
    "timing",
    "gap",
    "source",
    "baseline",
    "needs",
    "coverage_below",
    "coverage_above",
    "feedback",
)
_IN_FLIGHT = 6  # more than the test server's workers, so none waits for the next request

# Whether this host gives candidates the whole sandbox (bubblewrap namespaces, and root for a
# uid per worker slot), as scripts/system-deps.sh sets it up. Without it some candidates would
# reach the host for real, so those are judged only here.
ISOLATED = os.geteuid() == 0 and Launcher(IsolationSettings()).namespaces


@dataclass(frozen=True)
class Candidate:
    """One corpus file and what it declares."""

    path: Path
    task: str
    expect: str
    reason: str = ""
    error: str = ""
    timing: bool = False
    source: str = ""
    gap: str = ""
    baseline: str = ""
    needs_isolation: bool = False
    coverage_below: float | None = None
    coverage_above: float | None = None
    feedback: str = ""

    @property
    def name(self) -> str:
        return self.path.stem

    def render(self, **values: object) -> str:
        """The source with each ``__KEY__`` replaced by ``values[key]``."""
        text = self.path.read_text()
        for key, value in values.items():
            text = text.replace(f"__{key.upper()}__", str(value))
        return text

    def task_source(self) -> str:
        if self.task.endswith(".py"):
            return (self.path.parent / self.task).read_text()
        return builtin_task(self.task).source()

    def request(
        self, request_id: str | None = None, source: str | None = None, **options: object
    ) -> pb.EvaluateRequest:
        return pb.EvaluateRequest(
            request_id=request_id or self.name,
            task_name=Path(self.task).stem,
            reference_source=self.task_source(),
            candidate_source=source if source is not None else self.path.read_text(),
            options=pb.EvaluateOptions(skip_timing=not self.timing, **options),
        )


def declared(path: Path) -> Candidate:
    """Reads the ``key: value`` lines of a corpus file's docstring."""
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    fields: dict[str, str] = {}
    for line in docstring.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in _KEYS:
            fields[key.strip()] = value.strip()
    missing = {"task", "expect"} - fields.keys()
    if missing:
        raise ValueError(f"{path.name}: docstring lacks {sorted(missing)}")
    if fields["expect"] not in ("not CORRECT", "no gain") and "VERDICT_" + fields["expect"] not in pb.Verdict.keys():  # noqa: SIM118 - a protobuf enum, not a dict
        raise ValueError(f"{path.name}: unknown expectation {fields['expect']!r}")
    if "reason" in fields and fields["expect"] != "HACKED":
        raise ValueError(f"{path.name}: only a HACKED verdict carries hack reasons; declare the expected error instead")
    return Candidate(
        path=path,
        task=fields["task"],
        expect=fields["expect"],
        reason=fields.get("reason", ""),
        error=fields.get("error", ""),
        timing=fields.get("timing") == "on",
        source=fields.get("source", ""),
        gap=fields.get("gap", ""),
        baseline=fields.get("baseline", ""),
        needs_isolation=fields.get("needs") == "isolation",
        coverage_below=float(fields["coverage_below"]) if "coverage_below" in fields else None,
        coverage_above=float(fields["coverage_above"]) if "coverage_above" in fields else None,
        feedback=fields.get("feedback", ""),
    )


def load(directory: Path) -> list[Candidate]:
    """Every corpus file of a directory, by name."""
    return [declared(path) for path in sorted(directory.glob("*.py"))]


Outcome = pb.EvaluateResponse | grpc.RpcError


def judge_all(
    address: str,
    requests: Iterable[pb.EvaluateRequest],
    timeout_seconds: float = 1200,
    on_result: Callable[[str, Outcome], None] | None = None,
) -> dict[str, Outcome]:
    """Judges requests concurrently (enough in flight to keep every worker busy) and returns
    each response, or the RPC error it got, by request id; ``on_result`` sees each as it comes
    (from a worker thread), so that a run cut short keeps what it finished. Unary calls rather
    than one EvaluateStream: a request that fails with an RPC error ends a whole stream, and
    here one finding must not hide the others. Through the channel every client of ours uses,
    which retries what the server says may be retried (RESOURCE_EXHAUSTED: a full queue, or a
    candidate process that failed while starting, as one can next to a fork bomb)."""

    def one(request: pb.EvaluateRequest) -> tuple[str, Outcome]:
        outcome: Outcome
        try:
            outcome = stub.Evaluate(request, timeout=timeout_seconds)
        except grpc.RpcError as error:
            outcome = error
        if on_result is not None:
            on_result(request.request_id, outcome)
        return request.request_id, outcome

    with open_channel(address, SERVICE, SecuritySettings()) as channel:
        stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
        with concurrent.futures.ThreadPoolExecutor(_IN_FLIGHT) as pool:
            return dict(pool.map(one, list(requests)))


def describe(response: Outcome) -> str:
    """A response in one line, for assertion messages."""
    if isinstance(response, grpc.RpcError):
        return f"RPC error {response.code().name}: {response.details()}"
    return f"{pb.Verdict.Name(response.verdict)}: {response.error[:400]!r} hack_reasons={list(response.hack_reasons)}"


def matches(candidate: Candidate, response: Outcome) -> bool:
    """Whether the response is what the candidate's docstring expects."""
    if isinstance(response, grpc.RpcError):
        return False
    if candidate.feedback not in response.feedback:
        return False
    if candidate.coverage_below is not None and not response.coverage < candidate.coverage_below:
        return False
    if candidate.coverage_above is not None and not response.coverage > candidate.coverage_above:
        return False
    if candidate.expect == "HACKED":
        reasons = candidate.reason.split(" | ")
        return response.verdict == pb.VERDICT_HACKED and any(
            reason in r for reason in reasons for r in response.hack_reasons
        )
    if candidate.expect == "not CORRECT":
        return response.verdict != pb.VERDICT_CORRECT and candidate.error in response.error
    if candidate.expect == "no gain":
        return response.verdict == pb.VERDICT_CORRECT
    return response.verdict == pb.Verdict.Value("VERDICT_" + candidate.expect) and candidate.error in response.error
