"""The concise text a model reads in its next turn: what failed and what to fix."""

from __future__ import annotations

from drkernel.v1 import sandbox_pb2
from services.profiler import bottleneck_text

_MAX_ERROR_CHARS = 1500


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + " [...]"


def feedback_text(response: sandbox_pb2.EvaluateResponse) -> str:
    """One short paragraph derived from the verdict, error, checks and timing."""
    verdict = response.verdict
    if verdict == sandbox_pb2.VERDICT_SYNTAX_ERROR:
        return f"Syntax error, the module does not parse: {_clip(response.error)}"
    if verdict == sandbox_pb2.VERDICT_COMPILE_ERROR:
        return f"Compile error: {_clip(response.error)}"
    if verdict == sandbox_pb2.VERDICT_RUNTIME_ERROR:
        return f"Runtime error: {_clip(response.error)}"
    if verdict == sandbox_pb2.VERDICT_TIMEOUT:
        return f"Timed out: {_clip(response.error)} The kernel may never finish or be far too slow."
    if verdict == sandbox_pb2.VERDICT_HACKED:
        reasons = "; ".join(response.hack_reasons)
        return (
            f"Rejected as reward hacking: {reasons}. Every forward call must do the task's work in "
            "your own Triton kernels, in train and eval mode, with and without autograd."
        )
    if verdict == sandbox_pb2.VERDICT_INCORRECT:
        text = f"Incorrect {_clip(response.error)}"
        failed = [c for c in response.checks if not c.passed and not c.skipped]
        if failed and failed[0].variant == sandbox_pb2.INPUT_VARIANT_DTYPE and any(c.passed for c in response.checks):
            text += (
                f" Only the {failed[0].description} precision check failed; everything in the task's own dtype "
                f"passed. Make the kernel work for {failed[0].description} inputs too (compute in float32 inside "
                "the kernel, store in the output's dtype). The kernelgym and kernelbench correctness profiles do "
                "not run this check."
            )
        return text
    checked = [c for c in response.checks if c.passed]
    text = f"Correct on {len(checked)} input variant(s)."
    timing = response.timing
    if timing.valid:
        text += (
            f" Speedup {response.speedup:.2f}x over PyTorch (reference {timing.reference.median_us:.1f} us, "
            f"yours {timing.candidate.median_us:.1f} us, median of {timing.candidate.trials} runs)."
        )
    elif timing.invalid_reason:
        text += f" Speed not measured: {timing.invalid_reason}."
    profile = bottleneck_text(response.profile)
    return f"{text} {profile}" if profile else text
