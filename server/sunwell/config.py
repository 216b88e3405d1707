"""Settings: defaults < user file < workspace file < environment < flags (or initializationOptions).

One pydantic model, validated once; a wrong key or value stops with one line naming the key and where it came from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from sunwell.errors import ConfigError, first_problem
from sunwell.model_strings import ModelSpec, parse_model_string
from sunwell.vocabulary import TRUST_NAMES, ApprovalMode, TrustName

__all__ = ["ConfigError", "McpServerConfig", "Price", "Settings", "load_settings"]


class ModelOverride(BaseModel):
    """Per-model capability overrides, keyed by the full model string or the bare model id."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    native_tools: bool | None = Field(None, alias="nativeTools")
    emulation: Literal["json", "xml", "hermes", "llama3", "mistral", "harmony"] | None = None
    """How tools are taught to a model without native calls: json or xml, or a family's own format."""
    context_window: int | None = Field(None, alias="contextWindow", gt=0)
    parallel_calls: bool | None = Field(None, alias="parallelCalls")
    temperature: float | None = Field(None, ge=0, le=2)
    constrained: bool | None = None
    """Constrained decoding for emulated tool calls (models/emulation/constrained.py); on by default, a workspace may only
    turn it off."""


class RateLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_calls_per_min: int = 30
    writes_per_min: int = 10
    shell_per_min: int = 5
    bytes_written: int = 10_000_000


class Staging(BaseModel):
    """What one command may change in its staging overlay before its changes are refused (tools/sandbox/effects.py)."""

    model_config = ConfigDict(extra="forbid")
    max_bytes: int = Field(500_000_000, ge=0)
    max_files: int = Field(20_000, ge=0)


class McpSandbox(BaseModel):
    """What a sandboxed stdio MCP server may do besides reading the system and the workspace."""

    model_config = ConfigDict(extra="forbid")
    write: bool = False
    """The workspace writable (else read-only)."""
    network: bool = False


class McpServerConfig(BaseModel):
    """One MCP server (PROTOCOL.md "Config keys"): a `command` run over stdio, or a streamable HTTP `url`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("sandbox", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value

    command: str | None = Field(None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Variables the server gets on top of the allowlisted environment commands get."""
    cwd: str | None = None
    """Where the server runs, relative to the workspace (default: the workspace)."""
    url: str | None = Field(None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    trust: TrustName | None = None
    """The trust level its tools need; default `shell` for a command, `full` for a url."""
    approval: Literal["ask", "auto"] = "ask"
    tools: list[str] | None = None
    """Allowlist of the server's tool names; None offers all."""
    disabled_tools: list[str] = Field(default_factory=list, alias="disabledTools")
    timeout: float = Field(60, gt=0, le=3600)
    """Seconds one request (a start, a listing, a call) may take."""
    sandbox: McpSandbox | Literal["off"] = Field(default_factory=McpSandbox)
    """A command runs in bubblewrap like run_command; `off` runs it as you (user config only)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a stdio server) or `url` (a streamable HTTP server)")
        return self

    @property
    def needs(self) -> TrustName:
        return self.trust or ("shell" if self.command else "full")


class Price(BaseModel):
    """What a model costs, in USD per million tokens (PROTOCOL.md `prices:`), for the cost display only."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("sandbox", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML reads a bare `off` as false

    model: str | None = None
    """Model string, `PROVIDER:MODEL` (PROTOCOL.md "Model strings")."""
    base_url: str | None = None
    """Endpoint of an `openai-compatible` provider."""
    trust: TrustName = "workspace"
    """What the model may do: discovery < read_only < workspace < shell < full."""
    approval: ApprovalMode | None = None
    """How risky calls are answered; unset means `ask` on a terminal, else `deny`."""
    max_tool_turns: int = Field(50, ge=1)
    """Bound on model round trips that use tools, per turn."""
    dry_run: bool = False
    data_dir: Path | None = None
    """Sessions, audit log and checkpoints; default `$XDG_DATA_HOME/sunwell`."""
    max_output_bytes: int = Field(100_000, ge=1_000)
    """Cap on one tool result's output."""
    max_tokens: int = Field(4096, ge=1)
    ripgrep_path: str | None = None
    approval_timeout_sec: float = Field(600, gt=0)
    provider_attempts: int = Field(3, ge=1, le=10)
    tool_timeout_sec: float = Field(30, gt=0)
    """Default time limit of one tool call."""
    blocked_paths: list[str] = Field(default_factory=list)
    """Extra path patterns the tools may not touch (added to the built-in ones)."""
    command_allowlist: list[str] = Field(default_factory=list)
    sandbox: Literal["auto", "off"] = "auto"
    """`off` runs shell commands without bubblewrap (a warning every turn)."""
    max_command_timeout_sec: float = Field(600, gt=0, le=3600)
    """Cap on the `timeout` a model may ask of run_command."""
    rate_limits: RateLimits = Field(default_factory=RateLimits)
    staging: Staging = Field(default_factory=Staging)
    models: dict[str, ModelOverride] = Field(default_factory=dict)
    system_prompt: str | None = None
    """Replaces the built-in system instructions."""
    compact_at: float = Field(0.8, gt=0, le=1)
    """Compact when the next request (its input and the output reserved for the answer) would pass this fraction
    of the context window: old tool results are elided first, then older turns are summarised."""
    compaction_model: str | None = None
    """A model string (`PROVIDER:MODEL`) that writes the summaries when history is compacted; default: the
    session's model."""
    env_passthrough: list[str] = Field(default_factory=list)
    """Variables commands may see besides PATH, HOME, LANG/LC_*, TERM, USER, SHELL, TMPDIR, TZ."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Per million tokens, keyed by model string or model id; on top of the defaults (sunwell.agent.usage)."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers whose tools become Sunwell tools named `SERVER__TOOL` (README "Tools from outside")."""
    _ignored: list[str] = PrivateAttr(default_factory=list)
    _proposed_mcp: dict[str, McpServerConfig] = PrivateAttr(default_factory=dict)

    @property
    def ignored_workspace_keys(self) -> list[str]:
        """Keys the workspace config tried to set but may not (WORKSPACE_MAY_NOT_SET, or a widening value)."""
        return self._ignored

    @property
    def proposed_mcp_servers(self) -> dict[str, McpServerConfig]:
        """MCP servers the workspace config proposes: never merged into `mcp_servers`, started only once the user
        approved that exact command (tools/mcp/consent.py); narrowed to the defaults (ask, sandboxed)."""
        return self._proposed_mcp


# The workspace config is written by whoever wrote the repository, or by a command the model ran: it may only
# narrow. These keys decide what runs on the host, where code and keys go, what is allowed without asking, or what
# the user is told things cost.
WORKSPACE_MAY_NOT_SET = frozenset({
    "ripgrep_path", "sandbox", "approval", "base_url", "data_dir", "command_allowlist", "env_passthrough",
    "mcp_servers", "prices",
})  # fmt: skip
# Limits a workspace may lower but not raise; in the groups, every field is one.
CEILINGS = ("max_tool_turns", "max_output_bytes", "max_tokens", "provider_attempts", "tool_timeout_sec",
            "max_command_timeout_sec", "approval_timeout_sec", "compact_at")  # fmt: skip
LIMIT_GROUPS = ("rate_limits", "staging")
# Where each provider's endpoint or key is set (PROTOCOL.md "Model strings"): a user who set one chose that provider.
PROVIDER_VARIABLES = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "ollama": ("OLLAMA_HOST",),
    "openai-compatible": ("SUNWELL_BASE_URL", "SUNWELL_API_KEY"),
}
# Providers that send nothing until the user sets their key or endpoint (models/factory.py stops first with "...
# is not set"), so a workspace naming one cannot reach an endpoint the user did not set. Any other provider (Ollama,
# with its built-in 127.0.0.1:11434 and no key) a workspace may name only when the user configured it.
UNUSABLE_UNTIL_CONFIGURED = ("openai", "anthropic", "openai-compatible")


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
    if workspace is not None:
        path = workspace / ".sunwell" / "config.yaml"
        values = _read_yaml(path)
        merged, ignored = narrowed(merged, values, users_models(merged, env, flags or {}))
        _validate(merged, str(path))
        proposed = proposed_servers(values.get("mcp_servers"), str(path), ignored)
    for source, values in (("environment", {key: env[var] for var, key in ENV_VARS.items() if env.get(var)}),
                           ("command line", {k: v for k, v in (flags or {}).items() if v is not None})):
        merged = {**merged, **values}
        _validate(merged, source)
    settings = _validate(merged, "settings")
    settings._ignored = ignored
    settings._proposed_mcp = {name: server for name, server in proposed.items() if name not in settings.mcp_servers}
    if settings.data_dir is None:
        settings.data_dir = default_data_dir(env)
    return settings


def narrowed(user: dict[str, Any], workspace: dict[str, Any],
             may_choose: Callable[[str], bool]) -> tuple[dict[str, Any], list[str]]:
    """`user` with what `workspace` may set on top: lower trust and limits, more blocked paths, dry run on, model
    overrides the user left unset, a prompt, and a model `may_choose` allows. Each value is compared as the settings
    model reads it (`"1000"` is 1000, `true` is 1), so no spelling widens. Returns the merge and the keys that were
    ignored because they would widen."""
    merged, ignored = dict(user), []
    mine = Settings.model_validate(user)
    for key, value in workspace.items():
        if key == "mcp_servers":
            continue  # proposals, never merged: see proposed_servers
        if key in WORKSPACE_MAY_NOT_SET:
            ignored.append(key)
            continue
        try:
            theirs = getattr(Settings.model_validate({key: value}), key)
        except ValidationError:
            merged[key] = value  # validating the merge stops with the key and the file
            continue
        ours = getattr(mine, key)
        if key in LIMIT_GROUPS:
            wider = {name for name in type(theirs).model_fields
                     if name in theirs.model_fields_set and not getattr(theirs, name) <= getattr(ours, name)}
            ignored += [f"{key}.{name}" for name in type(theirs).model_fields if name in wider]
            merged[key] = {**ours.model_dump(), **theirs.model_dump(include=theirs.model_fields_set - wider)}
        elif key == "models":
            merged[key], refused = _models_narrowed(ours, theirs)
            ignored += refused
        elif key == "blocked_paths":
            merged[key] = [*ours, *theirs]
        elif _widens(key, theirs, ours, may_choose):
            ignored.append(key)
        else:
            merged[key] = theirs
    return merged, ignored


def _widens(key: str, theirs: Any, ours: Any, may_choose: Callable[[str], bool]) -> bool:
    if key == "trust":
        return TRUST_NAMES.index(theirs) > TRUST_NAMES.index(ours)
    if key == "dry_run":
        return bool(ours and not theirs)
    if key in CEILINGS:
        return not theirs <= ours  # not `>`: a NaN is no lower limit either
    if key in ("model", "compaction_model"):
        return theirs is not None and not may_choose(theirs)
    return False


def _models_narrowed(ours: dict[str, ModelOverride],
                     theirs: dict[str, ModelOverride]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The user's `models:` overrides, with the workspace's fields the user left unset for that model added, and
    constrained decoding, which a workspace may only turn off. The engine reads a model's entry by its full model
    string before its bare id, so a workspace entry by the full string does not outdo the user's by the id."""
    merged = {name: entry.model_dump(exclude_none=True) for name, entry in ours.items()}
    refused = []
    for name, entry in theirs.items():
        users = {**_set_fields(ours.get(_model_id(name))), **_set_fields(ours.get(name))}
        added = {}
        for field in type(entry).model_fields:
            value = getattr(entry, field)
            if value is None or users.get(field) == value:
                continue
            may_add = value is False if field == "constrained" else field not in users
            if may_add:
                added[field] = value
            else:
                refused.append(f"models.{name}.{field}")
        if added:
            merged[name] = {**merged.get(name, {}), **added}
    return merged, refused


def _set_fields(entry: ModelOverride | None) -> dict[str, Any]:
    return entry.model_dump(exclude_none=True) if entry is not None else {}


def _model_id(key: str) -> str:
    """The bare model id of a `models:` key written as a full model string (else the key itself)."""
    spec = _spec(key)
    return spec.model if spec is not None and key.lower().startswith(f"{spec.provider}:") else key


def users_models(user: Mapping[str, Any], env: Mapping[str, str], flags: Mapping[str, Any]) -> Callable[[str], bool]:
    """Which model strings a workspace may choose (`model`, `compaction_model`): those that keep the conversation
    where the user's configuration sends it. A provider whose endpoint or key they set (`env`, `base_url`), the
    provider of their own model or summariser (config, environment, flags), a model they listed under `models:`,
    and a provider that sends nothing until they configure it."""
    providers = {provider for provider, names in PROVIDER_VARIABLES.items()
                 if any((env.get(name) or "").strip() for name in names)}
    if user.get("base_url") or flags.get("base_url"):
        providers.add("openai-compatible")
    for chosen in (user.get("model"), user.get("compaction_model"), env.get("SUNWELL_MODEL"), flags.get("model"),
                   flags.get("compaction_model")):
        if (spec := _spec(chosen)) is not None:
            providers.add(spec.provider)
    listed = {_spec(key) for key in (*(user.get("models") or {}), *(flags.get("models") or {}))}

    def may_choose(model: str) -> bool:
        spec = _spec(model)
        return spec is not None and (spec.provider in providers or spec.provider in UNUSABLE_UNTIL_CONFIGURED
                                     or spec in listed)

    return may_choose


def _spec(model: Any) -> ModelSpec | None:
    try:
        return parse_model_string(model) if isinstance(model, str) else None
    except ValueError:
        return None


def proposed_servers(raw: Any, source: str, ignored: list[str]) -> dict[str, McpServerConfig]:
    """The MCP servers a workspace config proposes, validated, with what would widen dropped (and named in
    `ignored`): `approval` other than ask, any `sandbox` setting, a `trust` below the default."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: invalid setting 'mcp_servers': expected a mapping of server names")
    proposed: dict[str, McpServerConfig] = {}
    for name, values in raw.items():
        try:
            server = McpServerConfig.model_validate(values)
        except ValidationError as exc:
            key, problem = first_problem(exc)
            raise ConfigError(f"{source}: invalid setting 'mcp_servers.{name}.{key}': {problem}") from None
        dropped = [key for key in ("approval", "sandbox") if key in server.model_fields_set]
        default = "shell" if server.command else "full"
        if server.trust is not None and TRUST_NAMES.index(server.trust) < TRUST_NAMES.index(default):
            dropped.append("trust")
        ignored += [f"mcp_servers.{name}.{key}" for key in dropped]
        proposed[str(name)] = server.model_copy(update={"approval": "ask", "sandbox": McpSandbox(),
                                                        **({"trust": None} if "trust" in dropped else {})})
    return proposed


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
