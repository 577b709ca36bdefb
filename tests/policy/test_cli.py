"""`drkernel generate` and `drkernel serve policy` as a user runs them, with the embedded
default model (SmolLM2-135M-Instruct, converted from its GGUF into the session's cache)."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from drkernel.cli import main as cli_main

ACCEPTANCE = ["generate", "--prompt", "def add(a, b):\\n", "--temperature", "0", "--json"]


def environment(policy_cache: Path) -> dict[str, str]:
    return {**os.environ, "DRKERNEL_POLICY__CACHE_DIR": str(policy_cache), "HF_HUB_OFFLINE": "1"}


def run_in_process(args: list[str], policy_cache: Path) -> tuple[int, str]:
    """Runs the command in this process (its imports are warm), as the console script would."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setenv("DRKERNEL_POLICY__CACHE_DIR", str(policy_cache))
        code = cli_main(args)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def local_greedy(default_model_dir: Path, policy_cache: Path) -> dict[str, Any]:
    """The issue's acceptance command with the default model."""
    code, out = run_in_process(ACCEPTANCE, policy_cache)
    assert code == 0
    return json.loads(out)


@pytest.mark.slow
def test_the_default_model_is_converted_once_into_an_ordinary_directory(
    default_model_dir: Path, policy_cache: Path
) -> None:
    from services.policy.default_model import ensure_default_model

    names = {p.name for p in default_model_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} <= names
    assert "quantization_config" not in json.loads((default_model_dir / "config.json").read_text())
    started = time.perf_counter()
    assert ensure_default_model(policy_cache) == default_model_dir
    assert time.perf_counter() - started < 1  # cached: no second conversion
    assert [p.name for p in default_model_dir.parent.iterdir()] == [default_model_dir.name]  # no staging left


@pytest.mark.slow
def test_the_converted_model_ends_a_turn_where_the_gguf_says(default_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    from services.policy.default_model import gguf_path, gguf_special_tokens

    tokenizer = AutoTokenizer.from_pretrained(default_model_dir, local_files_only=True)

    special = gguf_special_tokens(gguf_path())
    assert special["eos"] != special["bos"]
    generation = json.loads((default_model_dir / "generation_config.json").read_text())
    assert generation["eos_token_id"] == special["eos"] == tokenizer.eos_token_id
    assert tokenizer.eos_token == "<|im_end|>"  # the chat template's end of an assistant turn
    assert (
        tokenizer.apply_chat_template([{"role": "assistant", "content": "x"}], tokenize=False)
        .rstrip()
        .endswith(tokenizer.eos_token)
    )


@pytest.mark.slow
def test_greedy_generate_with_the_default_model_writes_python(local_greedy: dict[str, Any]) -> None:
    [completion] = local_greedy["completions"]
    assert set(completion) >= {"text", "token_ids", "logprobs", "finish_reason"}
    assert len(completion["token_ids"]) == len(completion["logprobs"]) > 0
    assert all(lp <= 0 for lp in completion["logprobs"])
    assert completion["finish_reason"] == "FINISH_REASON_STOP"
    blocks = re.findall(r"```(?:python)?\n(.*?)```", completion["text"], re.DOTALL)
    assert blocks, completion["text"]
    returns = [n for b in blocks for n in ast.walk(ast.parse(b)) if isinstance(n, ast.Return)]
    assert returns and "return" in completion["text"]


@pytest.mark.slow
def test_served_greedy_equals_in_process_greedy(local_greedy: dict[str, Any], policy_cache: Path) -> None:
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "drkernel",
            "serve",
            "policy",
            "--port",
            "0",
            "--metrics-port",
            "0",
            "--backend",
            "transformers",
        ],
        env=environment(policy_cache),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = None
        deadline = time.monotonic() + 180
        assert server.stderr is not None
        while port is None and time.monotonic() < deadline:
            line = server.stderr.readline()
            if not line:
                pytest.fail(f"the server exited with {server.wait()}")
            if line.startswith("{") and json.loads(line).get("event") == "serving":
                port = json.loads(line)["port"]
        assert port is not None, "the server did not start in time"
        code, out = run_in_process([*ACCEPTANCE, "--server", f"127.0.0.1:{port}"], policy_cache)
        assert code == 0
        assert json.loads(out)["completions"] == local_greedy["completions"]
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0  # a graceful stop


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generate", "--prompt", "x", "--model", "/nonexistent/model"], "not a Hugging Face model directory"),
        (["generate", "--prompt", "x", "--server", "127.0.0.1:1", "--model", "m"], "--model is for local generation"),
        (["generate", "--prompt", "x", "--n", "0"], "--n must be at least 1"),
        (["generate", "--prompt", "x", "--max-tokens", "-3"], "--max-tokens must be at least 1"),
    ],
)
def test_bad_input_ends_with_one_line_and_exit_code_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_asking_for_vllm_without_it_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["serve", "policy", "--backend", "vllm"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the vllm backend needs vllm installed" in err
