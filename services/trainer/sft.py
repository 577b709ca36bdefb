"""Supervised fine-tuning on correct kernels before RL (Beyond TritonRL: SFT with LoRA r=16,
then RL).

A random or general model rarely answers in the shape the sandbox can judge (one module with
``ModelNew`` in a fenced block), so RL from it wastes most samples. SFT on known-correct
solutions teaches that shape first. The data is JSONL, one object per line:
``{"task": name, "reference": source, "solution": source}``; ``write_solution_data`` writes it
from the built-in solutions and the generated families, and best-of-N sampling
(services/trainer/best_of_n.py) writes more in the same format.

Each example is rendered exactly as the policy sees a first turn: the system prompt and the
task message (``build_messages``) through the model's chat template as the prompt, and as the
completion a short sentence, the solution in one ```python block and the end-of-sequence
token. Only completion tokens carry loss. The output directory is a plain Hugging Face model
directory (merged weights as safetensors, config, tokenizer) that the policy service loads, with
the LoRA adapter kept under ``adapter/`` and a summary in ``sft_result.json``.
"""

from __future__ import annotations

import ast
import json
import math
import random
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

import torch
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from drkernel.errors import InvalidArgument
from drkernel.logs import get_logger
from services.policy.chat import chat_token_ids
from services.policy.prompting import SYSTEM_PROMPT, build_messages
from services.sandbox.tasks import builtin_tasks
from services.trainer.checkpoint import atomic_directory
from services.trainer.families import family_tasks

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = get_logger(__name__)
T = TypeVar("T")

ADAPTER_DIR = "adapter"
RESULT_FILE = "sft_result.json"
_IGNORE = -100


class SftSettings(BaseModel):
    """One supervised fine-tuning run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    epochs: int = Field(3, ge=1, description="Passes over the data.")
    lr: float = Field(
        1e-4, gt=0, description="Peak AdamW learning rate (1e-4 suits LoRA; full fine-tuning wants ~1e-5)."
    )
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    batch_size: int = Field(8, ge=1, description="Examples per optimizer step.")
    micro_batch_size: int = Field(
        1, ge=1, description="Examples per forward/backward; gradients accumulate up to batch_size."
    )
    max_length: int = Field(
        4096,
        ge=8,
        description=(
            "Most prompt + completion tokens. Longer examples are skipped, not cut: a cut "
            "completion would teach the model to stop in the middle of a module."
        ),
    )
    warmup_steps: int = Field(0, ge=0, description="Linear warm-up of the learning rate, in optimizer steps.")
    schedule: Literal["constant", "cosine"] = Field(
        "cosine", description="After warm-up: constant, or cosine decay to zero at the last step."
    )
    grad_clip: float = Field(1.0, gt=0, description="Max global gradient norm.")
    lora: bool = Field(
        True, description="Train LoRA adapters (merged into the exported weights) instead of all weights."
    )
    lora_rank: int = Field(16, ge=1, description="LoRA rank r (Beyond TritonRL: 16).")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha; the update is scaled by alpha / r.")
    lora_dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the LoRA input.")
    lora_target_modules: tuple[str, ...] = Field(
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        description="Module names that get adapters (every linear layer of Llama/Qwen-style blocks).",
    )
    seed: int = Field(0, ge=0, description="Seeds the adapters' initialisation and the example order.")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: cuda when a GPU is visible.")
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="Weights while training and in the export; auto: bfloat16 on GPUs, float32 on CPUs."
    )


class SftResult(BaseModel):
    """What a run did; also written to ``OUT/sft_result.json``."""

    epoch_losses: list[float] = Field(description="Mean loss per completion token in each epoch.")
    steps: int = Field(description="Optimizer steps taken.")
    examples: int = Field(description="Examples trained on.")
    skipped: list[str] = Field(description="Tasks of examples left out for being longer than max_length.")
    trainable_parameters: int
    seconds: float
    out_dir: Path
    settings: SftSettings


# ----- data -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SftExample:
    """One line of SFT data: a task's reference module and a correct solution for it, and
    for sampled solutions (best-of-N) the reward the sandbox gave it, which training ignores."""

    task: str
    reference: str
    solution: str
    reward: float | None = None

    def to_json(self) -> str:
        row: dict[str, object] = {"task": self.task, "reference": self.reference, "solution": self.solution}
        if self.reward is not None:
            row["reward"] = self.reward
        return json.dumps(row)


def read_sft_jsonl(path: Path) -> list[SftExample]:
    """The examples of a JSONL file; keys other than task, reference, solution and reward are
    ignored. InvalidArgument names the first bad line."""
    examples = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidArgument(f"{path}:{number}: not JSON: {error}") from None
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("task", "reference", "solution")):
            raise InvalidArgument(f"{path}:{number}: expected an object with string task, reference and solution")
        reward = row.get("reward")
        if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
            raise InvalidArgument(f"{path}:{number}: reward must be a number")
        examples.append(
            SftExample(row["task"], row["reference"], row["solution"], None if reward is None else float(reward))
        )
    if not examples:
        raise InvalidArgument(f"{path}: no examples")
    return examples


def write_sft_jsonl(path: Path, examples: Iterable[SftExample]) -> int:
    """Writes examples one per line (the file is replaced whole); returns how many."""
    lines = [example.to_json() for example in examples]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text("".join(f"{line}\n" for line in lines))
    partial.replace(path)
    return len(lines)


def solution_examples(exclude: Collection[str] = (), builtin: bool = True, families: bool = True) -> list[SftExample]:
    """Our known-correct solutions as examples: the built-in suite's and the families', less
    the tasks named in ``exclude`` (the held-out split). A name in ``exclude`` that is none of
    these tasks is an error, so that a typo never trains on a held-out task."""
    pool: list[SftExample] = []
    if builtin:
        pool += [SftExample(t.name, t.source(), t.solution.read_text()) for t in builtin_tasks() if t.solution]
    if families:
        pool += [SftExample(t.name, t.reference, t.solution) for t in family_tasks()]
    unknown = sorted(set(exclude) - {e.task for e in pool})
    if unknown:
        raise InvalidArgument(f"excluded task(s) not in the data: {', '.join(unknown)}")
    return [e for e in pool if e.task not in exclude]


def write_solution_data(path: Path, exclude: Collection[str] = (), builtin: bool = True, families: bool = True) -> int:
    """Writes ``solution_examples`` as SFT JSONL; returns the number of lines."""
    return write_sft_jsonl(path, solution_examples(exclude, builtin, families))


# ----- rendering ------------------------------------------------------------------------------


def _kernel_names(solution: str) -> list[str]:
    """Names of the module's ``@triton.jit`` functions (for the completion's sentence)."""
    try:
        tree = ast.parse(solution)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(target, ast.Attribute) and target.attr in ("jit", "autotune", "heuristics"):
                    names.append(node.name)
                    break
    return names


def completion_text(solution: str) -> str:
    """The answer the model learns to give: one sentence, then the module in a python block
    (the shape the system prompt asks for and ``extract_code`` reads)."""
    names = [f"`{n}`" for n in _kernel_names(solution)]
    if not names:
        sentence = "`ModelNew` below does the work in Triton kernels launched from its forward."
    else:
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        kernels = "kernel" if len(names) == 1 else "kernels"
        sentence = f"`ModelNew` below does the work in the Triton {kernels} {listed}, launched from its forward."
    return f"{sentence}\n\n```python\n{solution.strip()}\n```"


def render_example(tokenizer: PreTrainedTokenizerBase, example: SftExample) -> tuple[list[int], list[int]]:
    """(prompt ids, completion ids): the first-turn prompt through the chat template, as the
    policy server renders it, and the completion's tokens ending with EOS."""
    if tokenizer.eos_token_id is None:
        raise InvalidArgument("the tokenizer has no end-of-sequence token to end completions with")
    prompt = chat_token_ids(tokenizer, build_messages(example.reference, (), SYSTEM_PROMPT))
    completion = tokenizer(completion_text(example.solution), add_special_tokens=False)["input_ids"]
    return prompt, [*completion, tokenizer.eos_token_id]


# ----- training -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenizedExample:
    """An example as token ids (``render_example``)."""

    task: str
    prompt: list[int]
    completion: list[int]


def collate(rows: Sequence[TokenizedExample], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """Left-padded ids, attention mask and positions, and the labels of the last
    ``window`` positions (completion tokens; -100 elsewhere). Left padding puts every
    completion at the end, so the model computes logits for that window only."""
    width = max(len(r.prompt) + len(r.completion) for r in rows)
    window = max(len(r.completion) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), window), _IGNORE, dtype=torch.long)
    for i, row in enumerate(rows):
        tokens = row.prompt + row.completion
        ids[i, width - len(tokens) :] = torch.tensor(tokens)
        mask[i, width - len(tokens) :] = 1
        labels[i, window - len(row.completion) :] = torch.tensor(row.completion)
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    batch = {"input_ids": ids, "attention_mask": mask, "position_ids": positions, "labels": labels}
    return {name: tensor.to(device) for name, tensor in batch.items()}


def completion_loss(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The cross-entropy summed over the completion tokens. Logits are computed for the
    completion window only (the vocabulary projection dominates memory)."""
    labels = batch["labels"]
    window = labels.shape[1]
    logits = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        logits_to_keep=window + 1,
    ).logits[:, :-1]
    return torch.nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=_IGNORE, reduction="sum"
    )


def _resolve(settings: SftSettings) -> tuple[torch.device, torch.dtype]:
    cuda = torch.cuda.is_available() if settings.device == "auto" else settings.device == "cuda"
    device = torch.device("cuda" if cuda else "cpu")
    if settings.dtype == "auto":
        return device, torch.bfloat16 if device.type == "cuda" else torch.float32
    return device, getattr(torch, settings.dtype)


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _schedule(settings: SftSettings, total_steps: int) -> Callable[[int], float]:
    """The learning-rate multiplier per optimizer step: linear warm-up, then constant or a
    cosine decay that reaches zero after the last step."""

    def factor(step: int) -> float:
        if step < settings.warmup_steps:
            return (step + 1) / settings.warmup_steps
        if settings.schedule == "constant":
            return 1.0
        progress = (step - settings.warmup_steps) / max(1, total_steps - settings.warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return factor


def _load_model(model_dir: Path, settings: SftSettings, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    torch.manual_seed(settings.seed)  # LoRA's initial A matrices
    model: torch.nn.Module = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, local_files_only=True)
    if settings.lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(
                r=settings.lora_rank,
                lora_alpha=settings.lora_alpha,
                lora_dropout=settings.lora_dropout,
                target_modules=list(settings.lora_target_modules),
                task_type="CAUSAL_LM",
            ),
        )
    return model.to(device)


def _export(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, directory: Path, lora: bool) -> None:
    """Writes the model directory: merged weights (LoRA folded in) as safetensors with config,
    generation config and tokenizer, and the adapter itself under ``adapter/``."""
    if lora:
        # Only the adapter tensors: the base embeddings are unchanged (even with lm_head among
        # the targets), and for large vocabularies they would dwarf the adapter.
        model.save_pretrained(directory / ADAPTER_DIR, save_embedding_layers=False)
        model = model.merge_and_unload()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)


def run_sft(data: Path, out_dir: Path, settings: SftSettings, model_dir: Path, *, progress: bool = True) -> SftResult:
    """Fine-tunes the model in ``model_dir`` on the JSONL ``data`` and exports it to
    ``out_dir``, which must not exist yet or be empty (it appears whole, or not at all)."""
    from transformers import AutoTokenizer

    started = time.perf_counter()
    if out_dir.exists() and any(out_dir.iterdir()):
        raise InvalidArgument(f"{out_dir} exists and is not empty")
    examples = read_sft_jsonl(data)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    rows, skipped = [], []
    for example in examples:
        prompt, completion = render_example(tokenizer, example)
        if len(prompt) + len(completion) > settings.max_length:
            skipped.append(example.task)
        else:
            rows.append(TokenizedExample(example.task, prompt, completion))
    if skipped:
        log.warning("examples longer than max_length skipped", count=len(skipped), max_length=settings.max_length)
    if not rows:
        raise InvalidArgument(f"every example is longer than max_length={settings.max_length} tokens")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    device, dtype = _resolve(settings)
    model = _load_model(model_dir, settings, device, dtype)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=settings.lr, weight_decay=settings.weight_decay)
    steps_per_epoch = math.ceil(len(rows) / settings.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(settings, settings.epochs * steps_per_epoch))

    epoch_losses: list[float] = []
    steps = 0
    with tqdm(
        total=settings.epochs * steps_per_epoch, desc="sft", unit="step", file=sys.stderr, disable=not progress
    ) as bar:
        for epoch in range(settings.epochs):
            order = list(range(len(rows)))
            random.Random(settings.seed * 1_000_003 + epoch).shuffle(order)
            epoch_sum, epoch_tokens = 0.0, 0
            for batch in _chunks([rows[i] for i in order], settings.batch_size):
                tokens = sum(len(r.completion) for r in batch)
                for micro in _chunks(batch, settings.micro_batch_size):
                    loss = completion_loss(model, collate(micro, pad_id, device))
                    (loss / tokens).backward()
                    epoch_sum += float(loss.detach())
                torch.nn.utils.clip_grad_norm_(trainable, settings.grad_clip)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                epoch_tokens += tokens
                steps += 1
                bar.update(1)
                bar.set_postfix(epoch=epoch + 1, loss=f"{epoch_sum / epoch_tokens:.4f}")
            epoch_losses.append(epoch_sum / epoch_tokens)
            log.info("sft epoch done", epoch=epoch + 1, loss=epoch_losses[-1])

    model.eval()
    result = SftResult(
        epoch_losses=epoch_losses,
        steps=steps,
        examples=len(rows),
        skipped=skipped,
        trainable_parameters=sum(p.numel() for p in trainable),
        seconds=time.perf_counter() - started,
        out_dir=out_dir,
        settings=settings,
    )
    with atomic_directory(out_dir) as partial:
        _export(model, tokenizer, partial, settings.lora)
        (partial / RESULT_FILE).write_text(result.model_dump_json(indent=2) + "\n")
    return result
