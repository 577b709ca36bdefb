"""The one place hack evidence is collected.

Findings of reward hacking come from many checks (launches, tampering, the harness's
problems, the knock-out call, timed results, late device work); every check adds to one
HackEvidence, and a stage stops the funnel on it, with a HACKED verdict, where the funnel's
design says a finding must be final.
"""

from __future__ import annotations

from typing import NoReturn

from services.sandbox.judge.stages import Stop
from services.sandbox.shared.evaluation import Verdict


class HackEvidence:
    """The findings of one evaluation, in the order found, each once."""

    def __init__(self) -> None:
        self._reasons: list[str] = []

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(self._reasons)

    def add(self, reason: str) -> None:
        """Records a finding; the funnel goes on until a stage stops on the evidence."""
        if reason not in self._reasons:
            self._reasons.append(reason)

    def stop(self, *reasons: str) -> NoReturn:
        """Records findings that are final at once; the error names only them."""
        for reason in reasons:
            self.add(reason)
        raise Stop(Verdict.HACKED, "; ".join(reasons))

    def stop_if_any(self) -> None:
        """Stops with every finding so far, if there is one."""
        if self._reasons:
            raise Stop(Verdict.HACKED, "; ".join(self._reasons))
