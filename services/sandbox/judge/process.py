"""The judge process: owns the reference and runs the funnel for each job the server sends.

One judge serves one worker slot for many evaluations (keeping its device warm and its
reference outputs cached); every job arrives with the socket of a fresh candidate process.
"""

from __future__ import annotations

import argparse
import faulthandler
import socket
from collections import OrderedDict
from pathlib import Path

import torch

from services.profiler import start_cuda_tracing
from services.sandbox.judge.candidate_client import CandidateClient
from services.sandbox.judge.funnel import Evaluation
from services.sandbox.judge.reference import OutputCache, Reference
from services.sandbox.judge.stages import BadTask, NotJudged
from services.sandbox.settings import SandboxSettings
from services.sandbox.shared.clock import Clock
from services.sandbox.shared.evaluation import EvaluationRequest, Judgement
from services.sandbox.shared.task_source import parse_task
from services.sandbox.wire.framing import Shutdown, receive, receive_with_fds, send
from services.sandbox.wire.server_judge import (
    CANDIDATE_ENDED,
    JSON_EXPANSION,
    JUDGE_COMMAND,
    JUDGEMENT,
    REQUEST,
    CandidateStarted,
    EndCandidate,
    JobDone,
    JudgeReady,
)

_REFERENCES_KEPT = 8


class Judge:
    """Evaluates jobs one after another."""

    def __init__(self, settings: SandboxSettings, device: torch.device, scratch: Path, control: socket.socket) -> None:
        self.settings = settings
        self.control = control
        self.device = device
        self.module_dir = scratch / "modules"
        self.module_dir.mkdir(exist_ok=True)
        self.clock = Clock(device, settings.timing.l2_flush_bytes)
        self.clock.prepare()
        self.cache = OutputCache(settings.reference_cache_bytes)
        self.references: OrderedDict[str, Reference] = OrderedDict()

    def _reference(self, source: str) -> Reference:
        if source in self.references:
            self.references.move_to_end(source)
            return self.references[source]
        reference = Reference(parse_task(source), self.device, self.module_dir, self.cache)
        self.references[source] = reference
        if len(self.references) > _REFERENCES_KEPT:
            self.references.popitem(last=False)
        return reference

    def evaluate(self, request: EvaluationRequest, candidate_socket: socket.socket) -> tuple[JobDone, Judgement | None]:
        """Judges one request: the JobDone and, when judged, the judgement that travels as its
        payload."""
        client = CandidateClient(
            candidate_socket, self.settings.max_output_bytes, self.device, self._end_sandbox, self._candidate_started
        )
        try:
            reference = self._reference(request.reference_source)
            evaluation = Evaluation(request, reference.task, reference, client, self.settings, self.device, self.clock)
            return JobDone(), evaluation.run()
        except BadTask as error:
            return JobDone(bad_task=str(error)), None
        except NotJudged as error:
            return JobDone(not_judged=str(error)), None
        finally:
            client.close()
            if self.device.type == "cuda":
                torch.cuda.empty_cache()  # give the next candidate the memory this one used

    def _candidate_started(self) -> None:
        send(self.control, CandidateStarted())

    def _end_sandbox(self) -> None:
        """Has the server kill the current candidate's sandbox, and waits until it has."""
        send(self.control, EndCandidate())
        receive(self.control, CANDIDATE_ENDED, 0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", type=int, required=True, help="Control socket to the server.")
    parser.add_argument("--settings", type=Path, required=True, help="SandboxSettings as JSON.")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    faulthandler.enable()
    settings = SandboxSettings.model_validate_json(args.settings.read_text())
    control = socket.socket(fileno=args.fd)
    device = torch.device(args.device)
    if device.type == "cuda":
        device = torch.device("cuda", 0)  # the sandbox sees only its own GPU
        start_cuda_tracing(device)  # now rather than in the first evaluation's profile
        device_name = torch.cuda.get_device_name(device)
    else:
        torch.set_num_threads(1)
        device_name = "cpu"
    judge = Judge(settings, device, Path.cwd(), control)
    send(control, JudgeReady(device_name=device_name))
    max_request = 2 * JSON_EXPANSION * settings.max_source_bytes + 2**20
    while True:
        command, payload, fds = receive_with_fds(control, JUDGE_COMMAND, max_request, max_fds=1)
        if isinstance(command, Shutdown):
            return
        done, judgement = judge.evaluate(REQUEST.validate_json(payload), socket.socket(fileno=fds[0]))
        send(control, done, JUDGEMENT.dump_json(judgement) if judgement is not None else b"")
