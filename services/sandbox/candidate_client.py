"""The judge's handle on a candidate's sandboxed process: typed calls over its socket."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

import torch
from pydantic import BaseModel

from services.sandbox import cuda_share
from services.sandbox.protocol import (
    REPLY,
    CompileCheck,
    CompileResult,
    Failure,
    KernelCompile,
    Load,
    Loaded,
    Profile,
    ProfiledKernel,
    ProfileResult,
    ProtocolError,
    Ready,
    Run,
    RunResult,
    Sample,
    SampleResult,
    Shutdown,
    TimeTrial,
    TrialResult,
    TensorMeta,
    receive_with_fds,
    send,
    unpack_tensors,
)
from services.sandbox.runner import RunSpec

_MAX_SHARED = 256


class CandidateLost(Exception):
    """The candidate's process hung up, died or sent garbage."""


class CandidateFailed(Exception):
    """The candidate's code failed; ``kind`` is compile, construct or runtime."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class CandidateRun:
    """Outputs of one checked forward call and what the harness observed."""

    outputs: list[torch.Tensor]
    result: RunResult


class CandidateClient:
    """Calls into the candidate's process; every reply is validated before use."""

    def __init__(self, sock: socket.socket, max_output_bytes: int, device: torch.device) -> None:
        self._sock = sock
        self._max_output_bytes = max_output_bytes
        self._device = device
        self._fds: list[int] = []

    def _call(self, command: BaseModel | None, expected: type[BaseModel]) -> tuple[BaseModel, bytearray]:
        try:
            if command is not None:
                send(self._sock, command)
            reply, payload, self._fds = receive_with_fds(self._sock, REPLY, self._max_output_bytes, _MAX_SHARED)
        except (ProtocolError, OSError) as error:
            raise CandidateLost(str(error)) from error
        if not isinstance(reply, RunResult):
            self._close_fds()
        if isinstance(reply, Failure):
            raise CandidateFailed(reply.error, reply.message)
        if not isinstance(reply, expected):
            raise CandidateLost(f"expected {expected.__name__}, got {type(reply).__name__}")
        return reply, payload

    def _close_fds(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def _import(self, fd: int, meta: TensorMeta, dtype: torch.dtype) -> torch.Tensor:
        if self._device.type != "cuda":
            os.close(fd)
            raise RuntimeError("shared GPU outputs on a CPU evaluation")
        return cuda_share.import_tensor(fd, meta.nbytes, dtype, meta.shape, self._device)

    def ready(self) -> None:
        """Waits for the process to finish starting."""
        self._call(None, Ready)

    def load(self, candidate_source: str, inputs_source: str, spec: RunSpec) -> Loaded:
        """Imports the candidate and builds ModelNew (parameter count and device name back)."""
        reply, _ = self._call(Load(candidate_source=candidate_source, inputs_source=inputs_source, spec=spec), Loaded)
        assert isinstance(reply, Loaded)
        return reply

    def run(self, spec: RunSpec, late_write_wait_seconds: float, *, knock_out: bool = False) -> CandidateRun:
        """One checked forward call (with ``knock_out``, what its own kernels write is destroyed)."""
        command = Run(spec=spec, late_write_wait_seconds=late_write_wait_seconds, knock_out=knock_out)
        reply, payload = self._call(command, RunResult)
        assert isinstance(reply, RunResult)
        fds, self._fds = self._fds, []
        try:
            outputs = unpack_tensors(reply.outputs, payload, fds, self._import)
        except ProtocolError as error:
            raise CandidateLost(str(error)) from error
        return CandidateRun(outputs, reply)

    def compile_check(self) -> list[KernelCompile]:
        """Compiles every kernel launched so far for the GPU target (CPU mode)."""
        reply, _ = self._call(CompileCheck(), CompileResult)
        assert isinstance(reply, CompileResult)
        return reply.kernels

    def time_trial(self, spec: RunSpec, calls: int) -> TrialResult:
        """One timed trial of ``calls`` forward calls on fresh inputs."""
        reply, _ = self._call(TimeTrial(spec=spec, calls=calls), TrialResult)
        assert isinstance(reply, TrialResult)
        return reply

    def sample(self, seed: int) -> list[torch.Tensor]:
        """The last timed trial's outputs at positions drawn from ``seed`` (on the host)."""
        reply, payload = self._call(Sample(seed=seed), SampleResult)
        assert isinstance(reply, SampleResult)
        try:
            return unpack_tensors(reply.samples, payload)
        except ProtocolError as error:
            raise CandidateLost(str(error)) from error

    def profile(self, spec: RunSpec, calls: int) -> list[ProfiledKernel]:
        """Every kernel of ``calls`` forward calls, with whether it is the candidate's own."""
        reply, _ = self._call(Profile(spec=spec, calls=calls), ProfileResult)
        assert isinstance(reply, ProfileResult)
        return reply.kernels

    def close(self) -> None:
        """Asks the process to exit and hangs up (the server kills it regardless)."""
        try:
            send(self._sock, Shutdown())
        except OSError:
            pass
        self._sock.close()
