"""Refuses the candidate the ways of listing its process's live objects.

The judge's instruments (the launch recorder, the work probe, the PyTorch trace) run in the
candidate's process, so a candidate that lists the process's objects (``gc.get_objects``,
``gc.get_referrers``, ``gc.get_referents``) or reads every thread's stack
(``sys._current_frames``) finds them and can forge their records or switch them off. An honest
kernel has no use for either; Python announces both as audit events, and an audit hook, once
added, can be neither listed nor removed from Python. So the hook is added right before the
candidate's module is imported and refuses both, for the rest of the process's life (the
harness itself never calls them), raising ``PermissionError`` and keeping a finding that makes
the evaluation HACKED even when the candidate catches the error.

What this does not cover, and the docs say so: a frame's ``f_back`` (not an audit event) from
the candidate's own frame up to the harness's, and the closures of the instruments' wrappers.
"""

from __future__ import annotations

import sys
from typing import Any

# The audit events refused once the candidate's code may run, with what each one would give.
REFUSED: dict[str, str] = {
    "gc.get_objects": "every live object of its process",
    "gc.get_referrers": "the objects that refer to an object",
    "gc.get_referents": "the objects an object refers to",
    "sys._current_frames": "the stack of every thread",
}


class IntrospectionGuard:
    """An audit hook that refuses the events in ``REFUSED`` once ``arm`` was called;
    ``take_findings`` gives the findings since the last call."""

    def __init__(self) -> None:
        self._findings: list[str] = []
        self._armed = False

    def arm(self) -> None:
        """Adds the hook (once; it cannot be taken back)."""
        if self._armed:
            return
        self._armed = True
        findings = self._findings

        def refuse(event: str, _args: tuple[Any, ...]) -> None:
            gives = REFUSED.get(event)
            if gives is None:
                return
            finding = (
                f"it called {event}, which lists {gives}, where the judge's instruments live (refused by the sandbox)"
            )
            if finding not in findings:
                findings.append(finding)
            raise PermissionError(f"{event} is refused in the sandbox")

        sys.addaudithook(refuse)

    def take_findings(self) -> list[str]:
        """The findings since the last call."""
        taken = list(self._findings)
        self._findings.clear()
        return taken
