"""Helpers of the policy tests: tiny random models and an independent log-prob reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def build_tiny_model(directory: Path, tokenizer: Any, seed: int, hidden_size: int = 64, heads: int = 4) -> Path:
    """A random 2-layer Qwen2 model with the default model's tokenizer, saved as a directory."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=heads // 2,
        max_position_embeddings=1024,
        tie_word_embeddings=False,  # tied random weights make greedy decoding repeat the prompt
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def forward_logprobs(model: Any, prompt_ids: Any, token_ids: Any, temperature: float = 1.0, top_p: float = 1.0) -> Any:
    """The log-probs of sampled tokens from one separate forward pass over prompt + tokens,
    under softmax(logits / T) restricted to the top-p nucleus (written out here, independently
    of the service's processors)."""
    import torch

    ids = torch.tensor([list(prompt_ids) + list(token_ids)])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt_ids) - 1 : -1].float() / temperature
    if top_p < 1.0:
        probs = torch.softmax(logits, dim=-1)
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
        drop_sorted = mass_before >= top_p  # keep the smallest prefix reaching top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    logprobs = torch.log_softmax(logits, dim=-1)
    return logprobs.gather(1, torch.tensor(list(token_ids))[:, None]).squeeze(1)
