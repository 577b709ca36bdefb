"""Prometheus metrics of the policy service (RPC counts and latencies come from drkernel.serving)."""

from __future__ import annotations

import prometheus_client

REQUESTS = prometheus_client.Counter(
    "drkernel_policy_requests_total",
    "Generation requests by outcome (ok, invalid, refused, cancelled, error).",
    ["outcome"],
)
TOKENS = prometheus_client.Counter("drkernel_policy_tokens_total", "Tokens by kind (prompt, generated).", ["kind"])
COMPLETIONS = prometheus_client.Counter(
    "drkernel_policy_completions_total", "Finished samples by finish reason.", ["finish_reason"]
)
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)
GENERATION_SECONDS = prometheus_client.Histogram(
    "drkernel_policy_generation_seconds",
    "From admission to the last token of a request.",
    buckets=_LATENCY_BUCKETS,
)
FIRST_TOKEN_SECONDS = prometheus_client.Histogram(
    "drkernel_policy_first_token_seconds",
    "From admission to the first token of a request (queueing and prefill).",
    buckets=_LATENCY_BUCKETS,
)
QUEUED = prometheus_client.Gauge("drkernel_policy_queued_requests", "Requests admitted that have no token yet.")
RUNNING = prometheus_client.Gauge("drkernel_policy_running_requests", "Requests producing tokens.")
WEIGHTS_VERSION = prometheus_client.Gauge("drkernel_policy_weights_version", "Version of the weights being served.")
WEIGHT_UPDATES = prometheus_client.Counter(
    "drkernel_policy_weight_updates_total",
    "Applied weight updates by source (checkpoint, tensors, lora).",
    ["source"],
)
WEIGHT_UPDATE_SECONDS = prometheus_client.Histogram(
    "drkernel_policy_weight_update_seconds",
    "Time to apply a weight update, waiting for running requests excluded.",
    buckets=_LATENCY_BUCKETS,
)
FORWARD_PASSES = prometheus_client.Counter(
    "drkernel_policy_forward_passes_total",
    "Forward passes of the transformers backend by phase (prefill: requests joining the batch; "
    "decode: one token for every row in flight).",
    ["phase"],
)
BATCH_ROWS = prometheus_client.Histogram(
    "drkernel_policy_batch_rows",
    "Rows (samples of all requests in flight) in each decode pass of the transformers backend.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
)
