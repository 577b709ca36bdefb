"""The profiler's core: a profile request becomes a sandbox evaluation, and the evaluation's
profile becomes the answer. No gRPC here: the server and the CLI's local mode share it."""

from __future__ import annotations

from drkernel.v1 import profiler_pb2, sandbox_pb2
from services.profiler.summary import bottleneck_text, summary_from_proto


def evaluation_request(request: profiler_pb2.ProfileRequest) -> sandbox_pb2.EvaluateRequest:
    """The sandbox evaluation that checks and profiles the candidate (timing is not needed)."""
    options = sandbox_pb2.EvaluateOptions(
        device=request.device, timeout_seconds=request.timeout_seconds, skip_timing=True
    )
    if request.HasField("seed"):
        options.seed = request.seed
    return sandbox_pb2.EvaluateRequest(
        request_id=request.request_id,
        reference_source=request.reference_source,
        candidate_source=request.candidate_source,
        task_name="profile",
        options=options,
    )


def profile_response(evaluation: sandbox_pb2.EvaluateResponse) -> profiler_pb2.ProfileResponse:
    """The profile in an evaluation, or why there is none."""
    profile = evaluation.profile
    response = profiler_pb2.ProfileResponse(
        request_id=evaluation.request_id,
        verdict=evaluation.verdict,
        kernels=profile.kernels,
        coverage=profile.coverage,
        total_device_time_us=profile.total_device_time_us,
        reference_kernels=profile.reference_kernels,
        reference_total_device_time_us=profile.reference_total_device_time_us,
        device_name=evaluation.device_name,
        method=profile.method,
    )
    if evaluation.verdict != sandbox_pb2.VERDICT_CORRECT:
        verdict = sandbox_pb2.Verdict.Name(evaluation.verdict)
        response.error = f"not profiled: the candidate is {verdict}" + (
            f": {evaluation.error}" if evaluation.error else ""
        )
        response.feedback = evaluation.feedback
    elif not profile.kernels:
        stage = next((s for s in evaluation.stages if s.stage == sandbox_pb2.STAGE_PROFILE), None)
        response.error = f"not profiled: {stage.detail if stage else 'no profile stage ran'}"
    else:
        response.feedback = bottleneck_text(summary_from_proto(profile))
    return response
