"""The few exception types services raise for RPC-level failures.

Core code raises these without knowing about gRPC; ``drkernel.serving`` maps each to a
status code in one place. A kernel that fails to compile or is wrong is a verdict, never one
of these.
"""

from __future__ import annotations


class DrKernelError(Exception):
    """Base of the errors that become a gRPC status other than INTERNAL."""


class InvalidArgument(DrKernelError):
    """The request is malformed or names something unusable (INVALID_ARGUMENT)."""


class ResourceExhausted(DrKernelError):
    """The server is at capacity; retry after ``retry_after_ms`` (RESOURCE_EXHAUSTED)."""

    def __init__(self, message: str, retry_after_ms: int) -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms


class Unavailable(DrKernelError):
    """The server is shutting down or a dependency is unreachable (UNAVAILABLE)."""


class FailedPrecondition(DrKernelError):
    """The request is valid but the server cannot serve it in its state (FAILED_PRECONDITION)."""


class NotFound(DrKernelError):
    """The request names something the server does not have, such as an unknown run (NOT_FOUND)."""
