"""Policy service benchmark: sampling throughput of the transformers backend, and the gap
between the log-probs it returns and a separate forward pass over the same tokens.

    # CPU: the embedded default model (SmolLM2-135M-Instruct), converted into the cache once
    .venv/bin/python -m benchmarks.policy_bench cpu
    # GPU: a random Qwen2.5-0.5B-shaped model built from a config (no download), batch 1/16/64
    python -m benchmarks.policy_bench gpu --out /tmp/policy_bench.jsonl

Every configuration writes one JSON line (to --out, appended, and to stdout) and a table is
printed at the end. Throughput counts sampled tokens (prompt excluded) over the wall time of
the whole request, prefill included, after one warm-up request. The log-prob gap is the
largest |service - reference| over the sampled tokens of up to --gap-samples samples, where
the reference is one forward pass of the same model over prompt + completion in the same
dtype, with the same temperature applied.

Only torch, transformers and the backend are imported (no structlog, pydantic or gRPC), so the
GPU mode runs from a plain checkout on a machine with just torch and transformers.
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
    parser.add_argument("mode", choices=["cpu", "gpu"])
    parser.add_argument("--batches", type=lambda s: [int(b) for b in s.split(",")], help="e.g. 1,16,64")
    parser.add_argument("--max-tokens", type=int, help="Tokens per sample (cpu 64, gpu 256).")
    parser.add_argument("--prompt-tokens", type=int, default=128, help="Random prompt length (gpu).")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"], help="gpu")
    parser.add_argument("--gap-samples", type=int, default=4, help="Samples checked against a forward pass.")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="gpu mode: cpu is a dry run")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "drkernel", help="cpu")
    parser.add_argument("--out", type=Path, help="Append the JSON lines to this file too.")
    args = parser.parse_args(argv)
    rows = run_cpu(args) if args.mode == "cpu" else run_gpu(args)
    if args.out:
        with args.out.open("a") as out:
            out.writelines(json.dumps(asdict(r)) + "\n" for r in rows)
    print(table(rows))


if __name__ == "__main__":
    main()
