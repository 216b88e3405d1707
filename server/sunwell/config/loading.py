"""Settings: defaults < user file < workspace file < environment < flags (or initializationOptions).

One pydantic model, validated once; a wrong key or value stops with one line naming the key and where it came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sunwell.config.narrowing import narrowed, proposed_hooks, proposed_servers, users_models
from sunwell.config.settings import HooksSettings, McpServerConfig, Settings
from sunwell.errors import ConfigError, first_problem

ENV_VARS = {
    "SUNWELL_MODEL": "model",
    "SUNWELL_BASE_URL": "base_url",
    "SUNWELL_DATA_DIR": "data_dir",
    "SUNWELL_TRUST": "trust",
    "SUNWELL_APPROVAL": "approval",
    "SUNWELL_MAX_TOOL_TURNS": "max_tool_turns",
}


def user_config_path(env: Mapping[str, str] = os.environ) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sunwell" / "config.yaml"


def default_data_dir(env: Mapping[str, str] = os.environ) -> Path:
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "sunwell"


def load_settings(workspace: Path | None, flags: Mapping[str, Any] | None = None,
                  env: Mapping[str, str] = os.environ) -> Settings:
    """Merge every source in precedence order and validate each as it is added, so errors name their source."""
    merged = _read_yaml(user_config_path(env))
    _validate(merged, str(user_config_path(env)))
    ignored: list[str] = []
    proposed: dict[str, McpServerConfig] = {}
    hooks = HooksSettings()
    if workspace is not None:
        path = workspace / ".sunwell" / "config.yaml"
        values = _read_yaml(path)
        merged, ignored = narrowed(merged, values, users_models(merged, env, flags or {}))
        _validate(merged, str(path))
        proposed = proposed_servers(values.get("mcp_servers"), str(path), ignored)
        hooks = proposed_hooks(values.get("hooks"), str(path))
    for source, values in (("environment", {key: env[var] for var, key in ENV_VARS.items() if env.get(var)}),
                           ("command line", {k: v for k, v in (flags or {}).items() if v is not None})):
        merged = {**merged, **values}
        _validate(merged, source)
    settings = _validate(merged, "settings")
    settings._ignored = ignored
    settings._proposed_hooks = hooks
    settings._proposed_mcp = {name: server for name, server in proposed.items() if name not in settings.mcp_servers}
    if settings.data_dir is None:
        settings.data_dir = default_data_dir(env)
    return settings


def _validate(values: dict[str, Any], source: str) -> Settings:
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        key, problem = first_problem(exc)
        raise ConfigError(f"{source}: invalid setting '{key}': {problem}") from None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    import yaml  # here: most users have no config file, and the sidecar's start need not pay for the parser

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    return {str(k).replace("-", "_"): v for k, v in data.items()}
