"""drkernel's configuration: one typed tree, loaded once at start and passed down.

The root composes one section per service, each defined next to its service
(``services/<service>/settings.py``), and the shared ones (``drkernel/sections.py``).
Precedence, highest first: environment variables, the YAML file named by ``--config`` or
``DRKERNEL_CONFIG``, then the defaults written in those sections. Environment variables are
``DRKERNEL_`` plus the path with ``__`` between levels, for example
``DRKERNEL_SANDBOX__CPU_WORKERS=4`` or ``DRKERNEL_SANDBOX__TIMING__TRIALS=100``.
Unknown keys are errors, so a typo never silently keeps a default.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from drkernel.errors import InvalidArgument
from drkernel.sections import LogSettings, SecuritySettings
from services.policy.settings import PolicySettings
from services.profiler.settings import ProfilerSettings
from services.sandbox.settings import SandboxSettings
from services.trainer.settings import TrainerSettings

CONFIG_ENV_VAR = "DRKERNEL_CONFIG"


class Settings(BaseSettings):
    """The root of the tree: one section per concern."""

    model_config = SettingsConfigDict(env_prefix="DRKERNEL_", env_nested_delimiter="__", extra="forbid", frozen=True)

    log: LogSettings = LogSettings()
    security: SecuritySettings = SecuritySettings()
    sandbox: SandboxSettings = SandboxSettings()
    profiler: ProfilerSettings = ProfilerSettings()
    policy: PolicySettings = PolicySettings()
    trainer: TrainerSettings = TrainerSettings()


def _check_environment() -> None:
    """pydantic-settings ignores variables naming no section; a typo must not be silent."""
    sections = set(Settings.model_fields)
    for name in os.environ:
        if name.startswith("DRKERNEL_") and name != CONFIG_ENV_VAR:
            section = name.removeprefix("DRKERNEL_").split("__", 1)[0].lower()
            if section not in sections:
                raise InvalidArgument(
                    f"environment variable {name} names no settings section; known: {', '.join(sorted(sections))}"
                )


def load_settings(config_file: Path | None = None) -> Settings:
    """Builds the settings from the defaults, an optional YAML file and the environment."""
    _check_environment()
    env_path = os.environ.get(CONFIG_ENV_VAR)
    path = config_file or (Path(env_path) if env_path else None)
    if path is not None and not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")

    class _FromFile(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if path is not None:
                sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
            return tuple(sources)

    return _FromFile()
