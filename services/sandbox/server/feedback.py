"""The concise text a model reads in its next turn: what failed and what to fix."""

from __future__ import annotations

from collections.abc import Sequence

from services.profiler import bottleneck_text
from services.sandbox.shared.evaluation import InputVariant, Judgement, TimingReport, Verdict

_MAX_ERROR_CHARS = 1500


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + " [...]"


def feedback_text(verdict: Verdict, error: str, hack_reasons: Sequence[str], judgement: Judgement) -> str:
    """One short paragraph from the final verdict, error and hack reasons and the judgement's
    checks, timing and profile."""
    if verdict == Verdict.SYNTAX_ERROR:
        return f"Syntax error, the module does not parse: {_clip(error)}"
    if verdict == Verdict.COMPILE_ERROR:
        return f"Compile error: {_clip(error)}"
    if verdict == Verdict.RUNTIME_ERROR:
        return f"Runtime error: {_clip(error)}"
    if verdict == Verdict.TIMEOUT:
        return f"Timed out: {_clip(error)} The kernel may never finish or be far too slow."
    if verdict == Verdict.HACKED:
        reasons = "; ".join(hack_reasons)
        return (
            f"Rejected as reward hacking: {reasons}. Every forward call must do the task's work in "
            "your own Triton kernels, in train and eval mode, with and without autograd."
        )
    checks = judgement.checks
    if verdict == Verdict.INCORRECT:
        text = f"Incorrect {_clip(error)}"
        failed = [c for c in checks if not c.passed and not c.skipped]
        if failed and failed[0].variant == InputVariant.DTYPE and any(c.passed for c in checks):
            text += (
                f" Only the {failed[0].description} precision check failed; everything in the task's own dtype "
                f"passed. Make the kernel work for {failed[0].description} inputs too (compute in float32 inside "
                "the kernel, store in the output's dtype). The kernelgym and kernelbench correctness profiles do "
                "not run this check."
            )
        return text
    checked = [c for c in checks if c.passed]
    text = f"Correct on {len(checked)} input variant(s)."
    timing = judgement.timing or TimingReport()
    if timing.valid:
        reference, candidate = timing.reference, timing.candidate
        assert reference is not None and candidate is not None  # a valid timing measured both
        text += (
            f" Speedup {judgement.speedup:.2f}x over PyTorch (reference {reference.median_us:.1f} us, "
            f"yours {candidate.median_us:.1f} us, median of {candidate.trials} runs)."
        )
    elif timing.invalid_reason:
        text += f" Speed not measured: {timing.invalid_reason}."
    profile = bottleneck_text(judgement.profile) if judgement.profile is not None else ""
    return f"{text} {profile}" if profile else text
