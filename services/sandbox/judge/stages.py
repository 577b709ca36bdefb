"""How a stage of the funnel ends: it passes or is skipped (``Ended``, which lets the funnel go
on), it stops the funnel with the candidate's verdict (``Stop``), or the whole evaluation ends
without a verdict (``BadTask``, ``NotJudged``)."""

from __future__ import annotations

from typing import NamedTuple

from services.sandbox.shared.evaluation import StageStatus, Verdict


class Ended(NamedTuple):
    """How a stage that let the funnel go on ended, with a line that says what it did."""

    status: StageStatus
    detail: str

    @classmethod
    def passed(cls, detail: str) -> Ended:
        return cls(StageStatus.PASSED, detail)

    @classmethod
    def skipped(cls, detail: str) -> Ended:
        return cls(StageStatus.SKIPPED, detail)


class Stop(Exception):
    """Ends the funnel: the candidate's verdict is decided, ``error`` says why."""

    def __init__(self, verdict: Verdict, error: str) -> None:
        super().__init__(error)
        self.verdict, self.error = verdict, error


class BadTask(Exception):
    """The task's own code fails on its own inputs: the request is at fault."""


class NotJudged(Exception):
    """The sandbox could not judge, through no fault of the candidate: device memory ran out
    where nothing can be skipped (the reference on the task's inputs, the candidate's first
    call and four modes, timing, the judge's own work in any stage) even after the judge freed
    its own, or the candidate's process failed while starting, before its code was loaded. No
    verdict, since an honest kernel must never pay for it; the server answers
    RESOURCE_EXHAUSTED and the caller may retry."""
