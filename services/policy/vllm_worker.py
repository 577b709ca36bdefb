"""A vLLM worker extension (``worker_extension_cls``): methods vLLM mixes into its workers so
the engine can call them with ``collective_rpc``. Kept free of vLLM imports at module level."""

from __future__ import annotations

from typing import Any


class WeightsFromFile:
    """Loads tensors that the policy engine wrote to a safetensors file into the worker's
    model. Tensors cannot travel in ``collective_rpc`` arguments (they arrive undecoded), so
    they take this detour through a local file."""

    model_runner: Any

    def load_weights_file(self, path: str) -> int:
        from safetensors.torch import load_file

        tensors = load_file(path)
        self.model_runner.reload_weights(weights_iterator=tensors.items())
        return len(tensors)
