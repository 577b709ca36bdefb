"""The introspection guard refuses listing the process's objects and stacks once armed, and
keeps a finding even when the refusal is caught. Each case runs in a fresh interpreter: an
audit hook, once added, stays for the life of the process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from services.sandbox.candidate.introspection import REFUSED

_PROBES = {
    "gc.get_objects": "import gc; gc.get_objects()",
    "gc.get_referrers": "import gc; gc.get_referrers(object)",
    "gc.get_referents": "import gc; gc.get_referents([])",
    "sys._current_frames": "import sys; sys._current_frames()",
}


def _run(body: str) -> dict[str, object]:
    script = (
        textwrap.dedent(
            """
        import json
        from services.sandbox.candidate.introspection import IntrospectionGuard

        guard = IntrospectionGuard()
        result = {}
        """
        )
        + textwrap.dedent(body)
        + "\nprint(json.dumps(result))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_refused_event_has_a_probe():
    assert set(_PROBES) == set(REFUSED)


@pytest.mark.parametrize("event", sorted(_PROBES))
def test_allowed_before_arming_refused_after_with_a_finding(event):
    result = _run(
        f"""
        {_PROBES[event]}
        result["before"] = guard.take_findings()
        guard.arm()
        try:
            {_PROBES[event]}
            result["refused"] = False
        except PermissionError:
            result["refused"] = True
        result["findings"] = guard.take_findings()
        result["again"] = guard.take_findings()
        """
    )
    assert result["before"] == []
    assert result["refused"] is True
    findings = result["findings"]
    assert isinstance(findings, list) and len(findings) == 1 and f"it called {event}" in findings[0]
    assert result["again"] == []


def test_collecting_garbage_and_reading_frames_stay_allowed():
    # an honest kernel may free memory; namedtuple, dataclasses and warnings read frames
    result = _run(
        """
        import collections, gc, sys, warnings
        guard.arm()
        gc.collect(); gc.disable(); gc.enable(); gc.get_count()
        collections.namedtuple("Point", "x y")
        warnings.warn("a warning", stacklevel=2)
        result["frame"] = sys._getframe(0).f_code.co_name
        result["findings"] = guard.take_findings()
        """
    )
    assert result == {"frame": "<module>", "findings": []}


def test_a_refusal_in_another_thread_is_found_too():
    result = _run(
        """
        import threading, gc
        guard.arm()
        def spy():
            try:
                gc.get_objects()
            except PermissionError:
                pass
        worker = threading.Thread(target=spy)
        worker.start(); worker.join()
        result["findings"] = guard.take_findings()
        """
    )
    assert len(result["findings"]) == 1
