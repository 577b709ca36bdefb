"""Messages between the server's worker and its judge process (no torch: the server imports
this). The request and the judgement travel as JSON payloads, validated on receipt."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from services.sandbox.shared.evaluation import EvaluationRequest, Judgement
from services.sandbox.wire.framing import Message, Shutdown

# The most a source grows as JSON: a control character becomes \u00XX.
JSON_EXPANSION = 6


class Job(Message):
    """Judge the EvaluationRequest in the payload; the candidate's socket comes as a file
    descriptor with this message."""

    kind: Literal["job"] = "job"


class JudgeReady(Message):
    """The judge process is up."""

    kind: Literal["judge_ready"] = "judge_ready"
    device_name: str


class JobDone(Message):
    """The job is over. With neither field set, its Judgement is the payload. A non-empty
    ``bad_task`` says the task itself is broken and the request should be refused; a non-empty
    ``not_judged`` says the device could not run the evaluation (its memory taken by other
    work), so there is no verdict and the request may be retried."""

    kind: Literal["job_done"] = "job_done"
    bad_task: str = ""
    not_judged: str = ""


class CandidateStarted(Message):
    """From the judge during a job: the candidate's process has finished starting (its Ready
    is in). The job's time limit runs from here."""

    kind: Literal["candidate_started"] = "candidate_started"


class EndCandidate(Message):
    """From the judge during a job: kill the candidate's sandbox now, with everything in it,
    and answer CandidateEnded once it is gone (the judge then times the reference alone)."""

    kind: Literal["end_candidate"] = "end_candidate"


class CandidateEnded(Message):
    """The candidate's sandbox of the current job is gone."""

    kind: Literal["candidate_ended"] = "candidate_ended"


JUDGE_COMMAND = TypeAdapter(Annotated[Job | Shutdown, Field(discriminator="kind")])
JUDGE_REPLY = TypeAdapter(
    Annotated[JudgeReady | JobDone | CandidateStarted | EndCandidate, Field(discriminator="kind")]
)
CANDIDATE_ENDED = TypeAdapter(CandidateEnded)
REQUEST = TypeAdapter(EvaluationRequest)
JUDGEMENT = TypeAdapter(Judgement)
