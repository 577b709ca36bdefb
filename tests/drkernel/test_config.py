"""Settings: defaults, file and environment precedence, helpful errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from drkernel.config import load_settings
from drkernel.errors import InvalidArgument


def test_defaults_match_the_documented_recipe():
    settings = load_settings()
    assert settings.sandbox.timing.trials == 50 and settings.sandbox.timing.warmup_trials == 10
    assert settings.sandbox.reward.speedup_cap == 3.0
    assert settings.sandbox.correctness.variants == ("original", "seed", "scaled", "resized", "dtype")


def test_file_then_environment_override(tmp_path, monkeypatch):
    config = tmp_path / "drkernel.yaml"
    config.write_text("sandbox:\n  cpu_workers: 3\n  timing:\n    trials: 80\n")
    monkeypatch.setenv("DRKERNEL_SANDBOX__TIMING__TRIALS", "120")
    settings = load_settings(config)
    assert settings.sandbox.cpu_workers == 3
    assert settings.sandbox.timing.trials == 120


def test_config_file_from_the_environment_variable(tmp_path, monkeypatch):
    config = tmp_path / "drkernel.yaml"
    config.write_text("sandbox:\n  queue_capacity: 7\n")
    monkeypatch.setenv("DRKERNEL_CONFIG", str(config))
    assert load_settings().sandbox.queue_capacity == 7


def test_unknown_keys_and_bad_values_are_errors(tmp_path):
    typo = tmp_path / "typo.yaml"
    typo.write_text("sandbox:\n  cpu_wrokers: 3\n")
    with pytest.raises(ValidationError, match="cpu_wrokers"):
        load_settings(typo)
    inverted = tmp_path / "inverted.yaml"
    inverted.write_text("sandbox:\n  default_timeout_seconds: 100\n  max_timeout_seconds: 10\n")
    with pytest.raises(ValidationError, match="must not exceed"):
        load_settings(inverted)
    with pytest.raises(FileNotFoundError):
        load_settings(tmp_path / "missing.yaml")


def test_environment_variable_naming_no_section_is_an_error(monkeypatch):
    monkeypatch.setenv("DRKERNEL_SANDBX__CPU_WORKERS", "4")
    with pytest.raises(InvalidArgument, match="DRKERNEL_SANDBX__CPU_WORKERS names no settings section"):
        load_settings()


def test_environment_variable_with_unknown_field_is_an_error(monkeypatch):
    monkeypatch.setenv("DRKERNEL_SANDBOX__CPU_WROKERS", "4")
    with pytest.raises(ValidationError, match="cpu_wrokers"):
        load_settings()
