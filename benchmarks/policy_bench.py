"""Policy service benchmark: sampling throughput of the transformers backend, and the gap
between the log-probs it returns and a separate forward pass over the same tokens.

    # CPU: the embedded default model (SmolLM2-135M-Instruct), converted into the cache once
    .venv/bin/python -m benchmarks.policy_bench cpu
    # GPU: a random Qwen2.5-0.5B-shaped model built from a config (no download), batch 1/16/64
    python -m benchmarks.policy_bench gpu --out /tmp/policy_bench.jsonl
    # Continuous batching: 1, 8 and 16 concurrent one-sample requests (distinct prompts) on the
    # embedded model (or --gguf FILE / --model DIR), on the GPU when there is one
    python -m benchmarks.policy_bench concurrent --concurrency 1,8,16

Every configuration writes one JSON line (to --out, appended, and to stdout) and a table is
printed at the end. Throughput counts sampled tokens (prompt excluded) over the wall time of
the whole request, prefill included, after one warm-up request. The log-prob gap is the
largest |service - reference| over the sampled tokens of up to --gap-samples samples, where
the reference is one forward pass of the same model over prompt + completion in the same
dtype, with the same temperature applied. In the concurrent mode the throughput is that of all
requests together (first sent to last finished) and the speedup is over one request at a time
(the first level, normally 1), which is how the backend served concurrent requests before it
batched them; the forward passes are read from the backend's Prometheus counters.

Only torch, transformers, prometheus_client and the backend are imported (no structlog,
pydantic or gRPC), so the GPU and concurrent modes run from a plain checkout on a machine with
just those (``--gguf`` also needs ``gguf``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

import torch

from services.policy.transformers_backend import TransformersBackend
from services.policy.types import SamplingParams


@dataclass(frozen=True)
class Row:
    """One measured configuration."""

    mode: str
    model: str
    parameters: int
    device: str
    dtype: str
    batch: int
    prompt_tokens: int
    max_tokens: int
    temperature: float
    sampled_tokens: int
    seconds: float
    tokens_per_second: float
    logprob_max_abs_gap: float
    gap_samples: int
    torch: str
    transformers: str


async def _sample(
    backend: TransformersBackend, prompt: list[int], params: SamplingParams
) -> tuple[list[list[int]], list[list[float]], float]:
    tokens: list[list[int]] = [[] for _ in range(params.n)]
    logprobs: list[list[float]] = [[] for _ in range(params.n)]
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    started = time.perf_counter()
    async for deltas in backend.stream(prompt, params):
        for delta in deltas:
            tokens[delta.index] += delta.token_ids
            logprobs[delta.index] += delta.logprobs
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return tokens, logprobs, time.perf_counter() - started


@torch.inference_mode()
def _gap(
    model: torch.nn.Module,
    prompt: list[int],
    tokens: list[list[int]],
    logprobs: list[list[float]],
    temperature: float,
    samples: int,
) -> float:
    """Largest |service - reference| log-prob, one forward pass per sample (memory stays at
    one sequence's logits even for large vocabularies)."""
    device = next(model.parameters()).device
    gap = 0.0
    for sampled, served in list(zip(tokens, logprobs, strict=True))[:samples]:
        ids = torch.tensor([prompt + sampled], device=device)
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float() / temperature
        reference = torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(prompt) :, None]).squeeze(1)
        gap = max(gap, (torch.tensor(served, device=device) - reference).abs().max().item())
    return gap


def measure(
    backend: TransformersBackend,
    reference: torch.nn.Module,
    model_name: str,
    mode: str,
    prompt: list[int],
    batches: list[int],
    max_tokens: int,
    temperature: float,
    gap_samples: int,
) -> list[Row]:
    import transformers

    info = backend.info()
    asyncio.run(_sample(backend, prompt, SamplingParams(1, temperature, 1.0, 8, (), 0)))  # warm-up
    rows = []
    for batch in batches:
        params = SamplingParams(batch, temperature, 1.0, max_tokens, (), seed=batch)
        tokens, logprobs, seconds = asyncio.run(_sample(backend, prompt, params))
        sampled = sum(len(t) for t in tokens)
        row = Row(
            mode=mode,
            model=model_name,
            parameters=info.parameter_count,
            device=_device_name(info.device),
            dtype=info.dtype,
            batch=batch,
            prompt_tokens=len(prompt),
            max_tokens=max_tokens,
            temperature=temperature,
            sampled_tokens=sampled,
            seconds=seconds,
            tokens_per_second=sampled / seconds,
            logprob_max_abs_gap=_gap(reference, prompt, tokens, logprobs, temperature or 1.0, gap_samples),
            gap_samples=min(gap_samples, batch),
            torch=torch.__version__,
            transformers=transformers.__version__,
        )
        print(json.dumps(asdict(row)), flush=True)
        rows.append(row)
    return rows


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def _reference(model_dir: Path, dtype: str, device: str) -> torch.nn.Module:
    """The same weights loaded apart from the backend, for the separate forward pass."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype), local_files_only=True)
    return model.to(device).eval()


def run_cpu(args: argparse.Namespace) -> list[Row]:
    from transformers import AutoTokenizer

    from services.policy.default_model import MODEL_NAME, ensure_default_model

    model_dir = ensure_default_model(args.cache_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    backend = TransformersBackend(model_dir, tokenizer, device="cpu", dtype="float32", max_batch_size=64)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Write a Triton kernel that adds two vectors."}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
    )
    return measure(
        backend,
        _reference(model_dir, "float32", "cpu"),
        MODEL_NAME,
        "cpu",
        list(prompt),
        args.batches or [1, 4, 16],
        args.max_tokens or 64,
        args.temperature,
        args.gap_samples,
    )


def _word_level_tokenizer(vocab_size: int):  # type: ignore[no-untyped-def]
    """A tokenizer over opaque ids for a random model: text is meaningless there anyway."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {f"<{i}>": i for i in range(vocab_size)}
    inner = Tokenizer(models.WordLevel(vocab, unk_token="<0>"))
    return PreTrainedTokenizerFast(tokenizer_object=inner, eos_token="<1>", pad_token="<1>")


def run_gpu(args: argparse.Namespace) -> list[Row]:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu mode needs a CUDA GPU (--device cpu makes a slow dry run)")
    config = Qwen2Config(  # the shape of Qwen2.5-0.5B
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
    )
    torch.manual_seed(0)
    tokenizer = _word_level_tokenizer(config.vocab_size)
    batches = args.batches or [1, 16, 64]
    with tempfile.TemporaryDirectory(prefix="policy-bench-") as directory:
        Qwen2ForCausalLM(config).to(getattr(torch, args.dtype)).save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        backend = TransformersBackend(
            Path(directory), tokenizer, device=args.device, dtype=args.dtype, max_batch_size=max(batches)
        )
        reference = _reference(Path(directory), args.dtype, args.device)
    generator = torch.Generator().manual_seed(1)
    prompt = torch.randint(2, config.vocab_size, (args.prompt_tokens,), generator=generator).tolist()
    return measure(
        backend,
        reference,
        "random Qwen2.5-0.5B-shaped",
        "gpu",
        prompt,
        batches,
        args.max_tokens or 256,
        args.temperature,
        args.gap_samples,
    )


@dataclass(frozen=True)
class ConcurrentRow:
    """One concurrency level of the concurrent mode."""

    mode: str
    model: str
    parameters: int
    device: str
    dtype: str
    concurrency: int
    max_batch_size: int
    batch_window_ms: float
    prompt_tokens_mean: float
    max_tokens: int
    temperature: float
    sampled_tokens: int
    seconds: float
    tokens_per_second: float
    speedup: float
    request_seconds_max: float
    prefill_passes: int
    decode_passes: int
    rows_per_decode: float
    logprob_max_abs_gap: float
    torch: str
    transformers: str


# Distinct kernel-writing prompts, so the batch holds prompts of different lengths.
_TASKS = (
    "adds two vectors",
    "computes the ReLU of a matrix",
    "computes the softmax of each row of a matrix",
    "multiplies two matrices in float16 with float32 accumulation",
    "computes the mean of each column",
    "applies layer normalisation over the last dimension",
    "clamps a tensor between two scalars",
    "computes the GELU activation with the tanh approximation",
)


def _chat_prompts(tokenizer, count: int) -> list[list[int]]:  # type: ignore[no-untyped-def]
    prompts = []
    for i in range(count):
        message = f"Task {i}: write a Triton kernel that {_TASKS[i % len(_TASKS)]}."
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        prompts.append(list(ids))
    return prompts


def _counters() -> tuple[float, float, float, float]:
    """(prefill passes, decode passes, rows decoded, decode passes observed) so far."""
    from prometheus_client import REGISTRY

    def value(name: str, labels: dict[str, str] | None = None) -> float:
        return REGISTRY.get_sample_value(name, labels or {}) or 0.0

    return (
        value("drkernel_policy_forward_passes_total", {"phase": "prefill"}),
        value("drkernel_policy_forward_passes_total", {"phase": "decode"}),
        value("drkernel_policy_batch_rows_sum"),
        value("drkernel_policy_batch_rows_count"),
    )


async def _concurrently(
    backend: TransformersBackend, prompts: list[list[int]], params: list[SamplingParams]
) -> tuple[list[tuple[list[list[int]], list[list[float]], float]], float]:
    """Every request sent at once: (tokens, log-probs, seconds) per request, and the wall time."""

    async def one(prompt: list[int], p: SamplingParams) -> tuple[list[list[int]], list[list[float]], float]:
        started = time.perf_counter()
        tokens, logprobs, _ = await _sample(backend, prompt, p)
        return tokens, logprobs, time.perf_counter() - started

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    started = time.perf_counter()
    results = await asyncio.gather(*(one(prompt, p) for prompt, p in zip(prompts, params, strict=True)))
    return list(results), time.perf_counter() - started


def measure_concurrency(
    backend: TransformersBackend,
    reference: torch.nn.Module,
    model_name: str,
    prompts: list[list[int]],
    args: argparse.Namespace,
) -> list[ConcurrentRow]:
    import transformers

    info = backend.info()
    levels: list[int] = args.concurrency
    warm = [SamplingParams(1, args.temperature, 1.0, 8, (), seed=i) for i in range(max(levels))]
    asyncio.run(_concurrently(backend, prompts[: max(levels)], warm))
    rows: list[ConcurrentRow] = []
    for level in levels:
        params = [SamplingParams(1, args.temperature, 1.0, args.max_tokens, (), seed=i) for i in range(level)]
        before = _counters()
        results, seconds = asyncio.run(_concurrently(backend, prompts[:level], params))
        prefills, decodes, rows_decoded, observed = (a - b for a, b in zip(_counters(), before, strict=True))
        sampled = sum(len(t) for tokens, _, _ in results for t in tokens)
        gap = max(
            _gap(reference, prompt, tokens, logprobs, args.temperature or 1.0, 1)
            for prompt, (tokens, logprobs, _) in list(zip(prompts, results, strict=False))[: args.gap_samples]
        )
        row = ConcurrentRow(
            mode="concurrent",
            model=model_name,
            parameters=info.parameter_count,
            device=_device_name(info.device),
            dtype=info.dtype,
            concurrency=level,
            max_batch_size=args.max_batch_size,
            batch_window_ms=args.batch_window_ms,
            prompt_tokens_mean=sum(len(p) for p in prompts[:level]) / level,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            sampled_tokens=sampled,
            seconds=seconds,
            tokens_per_second=sampled / seconds,
            speedup=(sampled / seconds) / rows[0].tokens_per_second if rows else 1.0,
            request_seconds_max=max(s for _, _, s in results),
            prefill_passes=int(prefills),
            decode_passes=int(decodes),
            rows_per_decode=rows_decoded / observed if observed else 0.0,
            logprob_max_abs_gap=gap,
            torch=torch.__version__,
            transformers=transformers.__version__,
        )
        print(json.dumps(asdict(row)), flush=True)
        rows.append(row)
    return rows


def _model_dir(args: argparse.Namespace) -> tuple[Path, str]:
    """The model of the concurrent mode: --model, --gguf (converted once into the cache), or the
    embedded default."""
    if args.model:
        return args.model, str(args.model)
    if args.gguf:
        from services.policy.default_model import convert_gguf

        target = args.cache_dir / "models" / f"gguf-{args.gguf.stem}"
        if not (target / "config.json").is_file():
            convert_gguf(args.gguf, target)
        return target, args.gguf.name
    from services.policy.default_model import MODEL_NAME, ensure_default_model

    return ensure_default_model(args.cache_dir), MODEL_NAME


def run_concurrent(args: argparse.Namespace) -> list[ConcurrentRow]:
    from transformers import AutoTokenizer

    model_dir, model_name = _model_dir(args)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = args.dtype or "float32"
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    backend = TransformersBackend(model_dir, tokenizer, device, dtype, args.max_batch_size, args.batch_window_ms)
    return measure_concurrency(
        backend, _reference(model_dir, dtype, device), model_name, _chat_prompts(tokenizer, max(args.concurrency)), args
    )


def concurrent_table(rows: list[ConcurrentRow]) -> str:
    lines = [
        f"{'requests':>8} {'tokens':>7} {'seconds':>8} {'tokens/s':>9} {'speedup':>8} "
        f"{'prefills':>8} {'decodes':>8} {'rows/decode':>11} {'logprob gap':>12}"
    ]
    lines += [
        f"{r.concurrency:>8} {r.sampled_tokens:>7} {r.seconds:>8.2f} {r.tokens_per_second:>9.1f} {r.speedup:>8.2f} "
        f"{r.prefill_passes:>8} {r.decode_passes:>8} {r.rows_per_decode:>11.1f} {r.logprob_max_abs_gap:>12.2e}"
        for r in rows
    ]
    return "\n".join(lines)


def table(rows: list[Row]) -> str:
    lines = [
        f"{'mode':<5} {'dtype':<9} {'batch':>5} {'tokens':>7} {'seconds':>8} {'tokens/s':>9} {'logprob gap':>12}",
    ]
    lines += [
        f"{r.mode:<5} {r.dtype:<9} {r.batch:>5} {r.sampled_tokens:>7} {r.seconds:>8.2f} "
        f"{r.tokens_per_second:>9.1f} {r.logprob_max_abs_gap:>12.2e}"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["cpu", "gpu", "concurrent"])
    parser.add_argument("--batches", type=lambda s: [int(b) for b in s.split(",")], help="e.g. 1,16,64")
    parser.add_argument("--max-tokens", type=int, help="Tokens per sample (cpu 64, gpu 256, concurrent 64).")
    parser.add_argument("--prompt-tokens", type=int, default=128, help="Random prompt length (gpu).")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument(
        "--dtype", choices=["bfloat16", "float16", "float32"], help="gpu (default bfloat16), concurrent (float32)"
    )
    parser.add_argument("--gap-samples", type=int, default=4, help="Samples checked against a forward pass.")
    parser.add_argument(
        "--device", choices=["cuda", "cpu"], help="gpu mode: cuda (cpu is a dry run); concurrent: cuda if there is one"
    )
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "drkernel", help="cpu, concurrent")
    parser.add_argument(
        "--concurrency", type=lambda s: [int(c) for c in s.split(",")], default=[1, 8, 16], help="concurrent"
    )
    parser.add_argument("--max-batch-size", type=int, default=64, help="concurrent: rows decoded together")
    parser.add_argument("--batch-window-ms", type=float, default=10.0, help="concurrent: wait for others when idle")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", type=Path, help="concurrent: a model directory (default: the embedded one)")
    source.add_argument("--gguf", type=Path, help="concurrent: the embedded package's GGUF file, converted once")
    parser.add_argument("--out", type=Path, help="Append the JSON lines to this file too.")
    args = parser.parse_args(argv)
    if args.mode == "concurrent":
        args.max_tokens = args.max_tokens or 64
        levels = run_concurrent(args)
        _append(args.out, levels)
        print(concurrent_table(levels))
        return
    args.device, args.dtype = args.device or "cuda", args.dtype or "bfloat16"
    rows = run_cpu(args) if args.mode == "cpu" else run_gpu(args)
    _append(args.out, rows)
    print(table(rows))


def _append(path: Path | None, rows: list[Row] | list[ConcurrentRow]) -> None:
    if path:
        with path.open("a") as out:
            out.writelines(json.dumps(asdict(r)) + "\n" for r in rows)


if __name__ == "__main__":
    main()
