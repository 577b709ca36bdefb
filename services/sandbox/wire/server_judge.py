"""Messages between the server's worker and its judge process (no torch: the server imports
this). The EvaluateRequest and the EvaluateResponse travel as payloads."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from services.sandbox.wire.framing import Message, Shutdown


class Job(Message):
    """Evaluate the EvaluateRequest in the payload; the candidate's socket comes as a file
    descriptor with this message."""

    kind: Literal["job"] = "job"


class JudgeReady(Message):
    """The judge process is up."""

    kind: Literal["judge_ready"] = "judge_ready"
    device_name: str


class JobDone(Message):
    """The EvaluateResponse is the payload. ``candidate_lost`` says the candidate's process
    vanished mid-evaluation (the server adds how it ended); a non-empty ``bad_task`` says the
    task itself is broken and the request should be refused; a non-empty ``not_judged`` says
    the device could not run the evaluation (its memory taken by other work), so there is no
    verdict and the request may be retried."""

    kind: Literal["job_done"] = "job_done"
    candidate_lost: bool
    bad_task: str
    not_judged: str = ""


JUDGE_COMMAND = TypeAdapter(Annotated[Job | Shutdown, Field(discriminator="kind")])
JUDGE_REPLY = TypeAdapter(Annotated[JudgeReady | JobDone, Field(discriminator="kind")])
