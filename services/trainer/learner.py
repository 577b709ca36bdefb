"""The learner: scores rows and applies per-row advantages and keep masks with the PPO loss.

It knows nothing of the RL algorithm (advantages, MRS and PRS are decided before it). Every
rank of a run builds one; under ``torchrun`` (world size > 1) each decoder layer and the root
are sharded with FSDP2 (``fully_shard``) and every method here is collective: all ranks call
it with the same rows, each rank works on ``rows[rank::world]`` and the results are combined.
Every rank runs the same number of forward/backward passes (a rank short of rows runs a
zero-weighted dummy), because FSDP2 gathers parameters inside each forward and reduces
gradients inside each backward.

Precision: trained parameters are kept in float32 whatever ``dtype`` says, because at RL
learning rates (1e-6) an AdamW step is far below bfloat16's resolution (about 1e-4 for a
weight of 0.02) and would round away. ``dtype`` is the compute precision: FSDP2's
mixed-precision policy (bfloat16 gathers, float32 gradient reduction) when sharded, autocast
on a single process. Frozen LoRA base weights are stored in ``dtype`` directly.
"""

from __future__ import annotations

import copy
import math
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor
from torch.optim.lr_scheduler import LambdaLR
from transformers import AutoModelForCausalLM, PreTrainedModel

from services.policy.transformers_backend import resolve_dtype
from services.trainer import checkpoint, distributed
from services.trainer.loss import LossTerms, ppo_loss
from services.trainer.rows import TrainingRow
from services.trainer.run_config import RunConfig

# Files of a model directory that export_hf does not copy: it writes its own weights and config.
_NOT_COPIED = re.compile(r".*\.(safetensors|bin|pt|pth|gguf|index\.json)$|config\.json$")
_LORA_A = re.compile(r"(.+)\.lora_A\.([^.]+)\.weight")
_PEFT_PREFIX = "base_model.model."


@dataclass(frozen=True)
class UpdateStats:
    """What one ``update`` did, over all ranks and optimizer steps."""

    loss: float  # global loss, mean over optimizer steps
    grad_norm: float  # global gradient norm before clipping, mean over optimizer steps
    clip_fraction: float  # trained tokens whose PPO clip cut the gradient
    dual_clip_fraction: float  # trained tokens bounded by the dual clip (negative advantages)
    kl: float  # mean k3 KL per trained token (0 without reference log-probs)
    lr: float  # learning rate of the last optimizer step
    rows: int  # rows trained (kept, with a completion)
    tokens: int  # completion tokens trained
    optimizer_steps: int


@dataclass(frozen=True)
class _Batch:
    """Right-padded rows. Column j of ``targets``/``mask`` is the token predicted at position
    ``start + j``: only the logits from the shortest prompt's last token on are computed."""

    ids: torch.Tensor  # [B, L]
    attention: torch.Tensor  # [B, L]
    targets: torch.Tensor  # [B, K], K = L - start - 1
    mask: torch.Tensor  # [B, K], 1 at trained completion tokens
    offsets: list[int]  # column of each row's first completion token
    lengths: list[int]  # completion tokens of each row

    def aligned(self, values: Sequence[Sequence[float]]) -> torch.Tensor:
        """Per-row completion values placed in the [B, K] layout (zeros elsewhere)."""
        out = torch.zeros(self.targets.shape, dtype=torch.float32)
        for row, (offset, row_values) in enumerate(zip(self.offsets, values, strict=True)):
            out[row, offset : offset + len(row_values)] = torch.tensor(row_values, dtype=torch.float32)
        return out.to(self.targets.device)


# Stands in for the missing rows of a rank with fewer rows than another (never trained on).
_DUMMY = ([0], [0])


def _micro_steps(rows: int, world: int, micro_batch_rows: int) -> int:
    """Micro-batches every rank runs: enough for the rank with the most rows (rank 0)."""
    return math.ceil(math.ceil(rows / world) / micro_batch_rows)


def _chunks(indices: list[int], size: int, count: int) -> Iterator[list[int]]:
    """``count`` consecutive chunks of ``size`` indices; the last ones may be empty."""
    for start in range(0, count * size, size):
        yield indices[start : start + size]


class Learner:
    """The policy's trainable copy: log-probs, PPO updates, weights and checkpoints."""

    def __init__(self, config: RunConfig, model_dir: Path, device: torch.device) -> None:
        self.config, self.model_dir, self.device = config, Path(model_dir), device
        self.rank, self.world = distributed.rank_and_world()
        self.dtype = resolve_dtype(config.dtype, device)
        self.dtype_name = str(self.dtype).removeprefix("torch.")
        torch.manual_seed(config.seed)  # LoRA's initial A: the same on every rank
        lora = config.lora
        base: PreTrainedModel = AutoModelForCausalLM.from_pretrained(
            self.model_dir,
            dtype=self.dtype if lora.enabled else torch.float32,
            local_files_only=True,
        )
        self._hf_config = copy.deepcopy(base.config)
        self._tied = _tied_duplicates(base)
        self._lora_scaling = lora.alpha / lora.rank if lora.enabled else None
        model: torch.nn.Module = base
        if lora.enabled:
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(
                base,
                LoraConfig(
                    r=lora.rank,
                    lora_alpha=lora.alpha,
                    lora_dropout=lora.dropout,
                    target_modules=list(lora.target_modules),
                    task_type="CAUSAL_LM",
                ),
            )  # adapters in float32 (peft's autocast_adapter_dtype)
        # Full fine-tuning with a KL term keeps the initial weights, unsharded, in the compute
        # dtype (LoRA switches its adapter off instead).
        self._reference: torch.nn.Module | None = None
        if config.loss.kl_coef > 0 and not lora.enabled:
            self._reference = copy.deepcopy(model).to(device, self.dtype).eval().requires_grad_(False)
        self._sharded = self.world > 1
        if self._sharded:
            _shard(model, base, device, self.dtype)
        else:
            model.to(device)
        self.model = model
        self._scorer: torch.nn.Module = model  # what _score runs: the model, or the KL reference
        optim = config.optim
        self.optimizer = torch.optim.AdamW(
            [p for p in model.parameters() if p.requires_grad],
            lr=optim.lr,
            betas=optim.betas,
            weight_decay=optim.weight_decay,
        )
        warmup = optim.warmup_steps
        self.scheduler = LambdaLR(self.optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0)

    # ----- scoring -------------------------------------------------------------------------

    def _collate(self, sequences: Sequence[tuple[Sequence[int], Sequence[int]]], trained: bool = True) -> _Batch:
        """Right-pads (prompt, completion) pairs; ``trained`` False zeroes the whole mask."""
        prompts = [len(prompt) for prompt, _ in sequences]
        if min(prompts) < 1:
            raise ValueError("every row needs at least one prompt token")
        width = max(len(p) + len(c) for p, c in sequences)
        start = min(prompts) - 1
        ids = torch.zeros((len(sequences), width), dtype=torch.long)
        attention = torch.zeros_like(ids)
        for row, (prompt, completion) in enumerate(sequences):
            tokens = list(prompt) + list(completion)
            ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            attention[row, : len(tokens)] = 1
        offsets = [p - 1 - start for p in prompts]
        lengths = [len(c) for _, c in sequences]
        mask = torch.zeros((len(sequences), width - start - 1), dtype=torch.float32)
        for row, (offset, length) in enumerate(zip(offsets, lengths, strict=True)):
            mask[row, offset : offset + length] = float(trained)
        return _Batch(
            ids=ids.to(self.device),
            attention=attention.to(self.device),
            targets=ids[:, start + 1 :].to(self.device),
            mask=mask.to(self.device),
            offsets=offsets,
            lengths=lengths,
        )

    def _score(self, batch: _Batch) -> torch.Tensor:
        """[B, K] float32 log-probs of the targets under softmax(logits / temperature), the
        distribution the policy samples from (top_p 1)."""
        autocast = not self._sharded and self.dtype != torch.float32
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=autocast):
            logits = self._scorer(
                input_ids=batch.ids,
                attention_mask=batch.attention,
                logits_to_keep=batch.targets.shape[1] + 1,
                use_cache=False,
            ).logits
        logits = logits[:, :-1].float() / self.config.rollout.temperature
        chosen = logits.gather(-1, batch.targets[..., None]).squeeze(-1)
        return chosen - logits.logsumexp(dim=-1)

    @torch.no_grad()
    def reference_logprobs(self, rows: Sequence[TrainingRow]) -> list[list[float]]:
        """Collective: log-probs under the initial weights, for the KL term: the base model
        with the adapter switched off (LoRA), or a frozen copy kept from the start."""
        if self._lora_scaling is not None:
            with self.model.disable_adapter():  # type: ignore[operator]
                return self.logprobs(rows)
        if self._reference is None:
            raise ValueError("reference log-probs need loss.kl_coef > 0 when the learner is built")
        self._scorer = self._reference
        try:
            return self.logprobs(rows)
        finally:
            self._scorer = self.model

    @torch.no_grad()
    def logprobs(self, rows: Sequence[TrainingRow]) -> list[list[float]]:
        """Collective: the log-prob of every completion token of every row, in input order."""
        self.model.eval()
        mb = self.config.optim.micro_batch_rows
        mine = sorted(range(self.rank, len(rows), self.world), key=lambda i: -rows[i].tokens)
        local: dict[int, list[float]] = {}
        for chunk in _chunks(mine, mb, _micro_steps(len(rows), self.world, mb)):
            sequences = [(rows[i].prompt_ids, rows[i].completion_ids) for i in chunk] or [_DUMMY]
            batch = self._collate(sequences)
            scores = self._score(batch).cpu()
            for row, index in enumerate(chunk):
                offset, length = batch.offsets[row], batch.lengths[row]
                local[index] = scores[row, offset : offset + length].tolist()
        merged: dict[int, list[float]] = {}
        for part in distributed.all_gather_object(local):
            merged.update(part)
        return [merged[i] for i in range(len(rows))]

    # ----- training ------------------------------------------------------------------------

    def update(
        self,
        rows: Sequence[TrainingRow],
        old_logprobs: Sequence[Sequence[float]],
        ref_logprobs: Sequence[Sequence[float]] | None = None,
    ) -> UpdateStats:
        """Collective: ``optim.updates_per_step`` optimizer steps; step j trains on the
        mini-batch ``rows[j::updates_per_step]`` with gradient accumulation over micro-batches.

        Each micro-batch's loss is its exact share of the mini-batch loss (the denominator is
        the mini-batch's row count, masked rows included), times the world size because FSDP2
        averages gradients over ranks: the step is the same whatever the world size and the
        micro-batch size. Masked rows are not even run forward."""
        settings = self.config.loss
        for name, values in (("old_logprobs", old_logprobs), ("ref_logprobs", ref_logprobs)):
            if values is not None and [len(v) for v in values] != [len(r.completion_ids) for r in rows]:
                raise ValueError(f"{name} must hold one log-prob per completion token of every row")
        if settings.kl_coef > 0 and ref_logprobs is None:
            raise ValueError("loss.kl_coef > 0 needs ref_logprobs")
        self.model.train()
        mb = self.config.optim.micro_batch_rows
        shares = self.config.optim.updates_per_step
        # loss, tokens, clipped, dual-clipped, kl sum: summed over micro-batches and ranks
        sums = torch.zeros(5, dtype=torch.float64, device=self.device)
        norms: list[float] = []
        lr = self.scheduler.get_last_lr()[0]
        trained = [i for i, row in enumerate(rows) if row.keep and row.completion_ids]
        for share in range(shares):
            members = range(share, len(rows), shares)
            if not members:
                continue
            kept = [i for i in trained if i % shares == share]
            mine = sorted(kept[self.rank :: self.world], key=lambda i: -rows[i].tokens)
            for chunk in _chunks(mine, mb, _micro_steps(len(kept), self.world, mb)):
                terms = self._micro_loss(rows, chunk, old_logprobs, ref_logprobs, len(members))
                (terms.loss * self.world).backward()
                sums += torch.stack(
                    [terms.loss.detach(), terms.tokens, terms.clipped_tokens, terms.dual_clipped_tokens, terms.kl_sum]
                ).to(sums.dtype)
            norms.append(self._clip_gradients())
            lr = self.scheduler.get_last_lr()[0]
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
        loss, tokens, clipped, dual, kl = distributed.all_reduce_sum(sums).tolist()
        steps = len(norms)
        return UpdateStats(
            loss=loss / max(steps, 1),
            grad_norm=sum(norms) / max(steps, 1),
            clip_fraction=clipped / max(tokens, 1.0),
            dual_clip_fraction=dual / max(tokens, 1.0),
            kl=kl / max(tokens, 1.0),
            lr=lr,
            rows=len(trained),
            tokens=sum(len(rows[i].completion_ids) for i in trained),
            optimizer_steps=steps,
        )

    def _micro_loss(
        self,
        rows: Sequence[TrainingRow],
        chunk: list[int],
        old_logprobs: Sequence[Sequence[float]],
        ref_logprobs: Sequence[Sequence[float]] | None,
        global_rows: int,
    ) -> LossTerms:
        if chunk:
            sequences = [(rows[i].prompt_ids, rows[i].completion_ids) for i in chunk]
            batch = self._collate(sequences)
            old = batch.aligned([old_logprobs[i] for i in chunk])
            ref = batch.aligned([ref_logprobs[i] for i in chunk]) if ref_logprobs is not None else None
            advantages = [rows[i].advantage for i in chunk]
        else:  # this rank is out of rows: a forward/backward that trains nothing
            batch = self._collate([_DUMMY], trained=False)
            old, ref, advantages = torch.zeros_like(batch.mask), None, [0.0]
        logprobs = self._score(batch)
        return ppo_loss(
            logprobs,
            old,
            torch.tensor(advantages, dtype=torch.float32, device=self.device),
            batch.mask,
            self.config.loss,
            global_rows,
            ref,
        )

    def _clip_gradients(self) -> float:
        """Clips to ``optim.grad_clip`` by the global norm (over all shards); returns the norm."""
        params = [p for p in self.model.parameters() if p.requires_grad]
        norm = torch.nn.utils.clip_grad_norm_(params, self.config.optim.grad_clip)
        if isinstance(norm, DTensor):
            norm = norm.full_tensor()
        return float(norm)

    # ----- weights and checkpoints ---------------------------------------------------------

    def full_state_dict(self) -> dict[str, torch.Tensor] | None:
        """Collective: on rank 0 the full weights on the CPU in ``dtype``, named as in the
        base model (LoRA merged: W + alpha/r * B @ A; tied duplicates such as ``lm_head.weight``
        left out, since one safetensors file cannot hold shared tensors); None elsewhere."""
        state = get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if self.rank != 0:
            return None
        if self._lora_scaling is not None:
            state = _merge_lora(state, self._lora_scaling)
        # Unsharded on the CPU, the "offloaded" tensors are the live parameters: copy them.
        live = not self._sharded and self.device.type == "cpu"
        return {
            name: tensor.to(dtype=self.dtype, copy=live) for name, tensor in state.items() if name not in self._tied
        }

    def export_hf(self, directory: Path) -> None:
        """Collective: rank 0 writes (atomically) a model directory the policy service and
        ``from_pretrained`` load: model.safetensors, config.json, and the other files of the
        original directory (tokenizer, generation config) copied."""
        tensors = self.full_state_dict()
        if tensors is not None:
            with checkpoint.atomic_directory(Path(directory)) as partial:
                save_file(
                    {name: t.contiguous() for name, t in tensors.items()},
                    str(partial / "model.safetensors"),
                    metadata={"format": "pt"},
                )
                config = copy.deepcopy(self._hf_config)
                config.dtype = self.dtype
                config.save_pretrained(partial)
                for path in self.model_dir.iterdir():
                    if path.is_file() and not _NOT_COPIED.fullmatch(path.name):
                        shutil.copy2(path, partial / path.name)
        distributed.barrier()

    def save_checkpoint(self, directory: Path, extra: dict[str, Any]) -> None:
        """Collective: model, optimizer, scheduler, RNG and ``extra`` (JSON) under ``directory``."""
        checkpoint.save_checkpoint(Path(directory), self.model, self.optimizer, self.scheduler, extra)

    def load_checkpoint(self, directory: Path) -> dict[str, Any]:
        """Collective: restores a ``save_checkpoint`` directory; returns its ``extra``."""
        return checkpoint.load_checkpoint(Path(directory), self.model, self.optimizer, self.scheduler)


def _shard(model: torch.nn.Module, base: PreTrainedModel, device: torch.device, dtype: torch.dtype) -> None:
    """FSDP2 over all ranks: each decoder layer is one unit (gathered only while it runs),
    the root holds the rest (embeddings, final norm, head)."""
    _, world = distributed.rank_and_world()
    mesh = init_device_mesh(device.type, (world,))
    policy = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
    layer_classes = set(base._no_split_modules or ())
    layers = [m for m in base.modules() if type(m).__name__ in layer_classes]
    if not layers:
        raise ValueError(f"no decoder layers ({', '.join(sorted(layer_classes)) or 'unknown class'}) to shard")
    for layer in layers:
        fully_shard(layer, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)


def _tied_duplicates(model: torch.nn.Module) -> frozenset[str]:
    """Names of parameters that are another name's tensor (e.g. a tied ``lm_head.weight``)."""
    first = {id(p): name for name, p in model.named_parameters()}
    return frozenset(name for name, p in model.named_parameters(remove_duplicate=False) if first[id(p)] != name)


def _merge_lora(state: dict[str, torch.Tensor], scaling: float) -> dict[str, torch.Tensor]:
    """A peft state dict as plain base weights: W + scaling * B @ A, peft's prefixes and
    ``base_layer`` removed."""
    merged = {name: t for name, t in state.items() if ".lora_" not in name}
    for name, a in state.items():
        match = _LORA_A.fullmatch(name)
        if match is None:
            if ".lora_" in name and ".lora_B." not in name:
                raise ValueError(f"cannot merge adapter tensor {name}")
            continue
        module, adapter = match.groups()
        b = state[f"{module}.lora_B.{adapter}.weight"]
        weight = f"{module}.base_layer.weight"
        delta = scaling * (b.float() @ a.float())
        merged[weight] = (merged[weight].float() + delta).to(merged[weight].dtype)
    return {name.removeprefix(_PEFT_PREFIX).replace(".base_layer.", "."): tensor for name, tensor in merged.items()}
