"""The model runner shared by the judge and the candidate: where weights are drawn, and the
meta-device count the judge uses to decide it (services/sandbox/shared/runner.py)."""

from __future__ import annotations

from pathlib import Path

import torch

from services.sandbox.shared.runner import ModelRunner
from services.sandbox.wire.judge_candidate import RunSpec

INPUTS = """
import torch
def get_inputs():
    return [torch.randn(3, 48)]
def get_init_inputs():
    return [48, 32]
"""


class Linear(torch.nn.Module):
    def __init__(self, inputs: int, outputs: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(inputs, outputs)
        self.register_buffer("scale", torch.ones(outputs))


class NeedsHostTensors(Linear):
    def __init__(self, inputs: int, outputs: int) -> None:
        super().__init__(inputs, outputs)
        self.table = torch.arange(4).numpy()  # only a host tensor has a numpy view


def runner(model_class: type[torch.nn.Module], tmp_path: Path) -> ModelRunner:
    return ModelRunner(INPUTS, lambda _constants: model_class, torch.device("cpu"), tmp_path)


def test_weight_elements_are_counted_on_the_meta_device_without_drawing_random_numbers(tmp_path: Path) -> None:
    torch.manual_seed(5)
    state = torch.get_rng_state()
    assert runner(Linear, tmp_path).weight_elements(RunSpec()) == 48 * 32 + 32 + 32
    assert torch.equal(torch.get_rng_state(), state)


def test_a_constructor_that_cannot_run_on_the_meta_device_has_no_count(tmp_path: Path) -> None:
    assert runner(NeedsHostTensors, tmp_path).weight_elements(RunSpec()) is None


def test_models_built_on_and_off_the_device_are_kept_apart_and_equal_for_equal_draws(tmp_path: Path) -> None:
    models = runner(Linear, tmp_path)
    on_host = models.model(RunSpec(weight_seed=3))
    on_device = models.model(RunSpec(weight_seed=3, init_on_device=True))
    assert on_host is not on_device
    assert RunSpec(init_on_device=True).model_key != RunSpec().model_key
    # on the CPU the device is the host: the same generator, the same weights
    assert torch.equal(on_host.linear.weight, on_device.linear.weight)
