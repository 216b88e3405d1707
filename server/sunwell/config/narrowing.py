"""What a workspace config may set on top of the user's: only what narrows (lower trust and limits, more blocked
paths and denied hosts, dry run on, model overrides the user left unset, a model on a provider the user configured), each value
compared as the settings model reads it. The rest is ignored and named (`workspace_config_ignored`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from sunwell.config.settings import HooksSettings, McpSandbox, McpServerConfig, ModelOverride, Settings
from sunwell.errors import ConfigError, first_problem
from sunwell.model_strings import ModelSpec, parse_model_string
from sunwell.vocabulary import TRUST_NAMES

# The workspace config is written by whoever wrote the repository, or by a command the model ran: it may only
# narrow. These keys decide what runs on the host, where code and keys go, what is allowed without asking, or what
# the user is told things cost.
WORKSPACE_MAY_NOT_SET = frozenset({
    "ripgrep_path", "sandbox", "approval", "base_url", "data_dir", "command_allowlist", "env_passthrough",
    "mcp_servers", "prices", "web_search", "learned_apis",
})  # fmt: skip
# Limits a workspace may lower but not raise; in the groups, every field is one.
CEILINGS = ("max_tool_turns", "max_output_bytes", "max_tokens", "provider_attempts", "tool_timeout_sec",
            "max_command_timeout_sec", "approval_timeout_sec", "compact_at")  # fmt: skip
LIMIT_GROUPS = ("rate_limits", "staging", "subagent", "background", "images", "worktrees")
RAISED_NARROWS = ("background.stop_at_session_end",)
"""Limits of the groups that narrow when raised (on is the careful setting); a list narrows to a subset."""
USERS_ALONE = ("worktrees.folder",)
"""Fields of the groups a workspace never sets: where Sunwell writes on this machine."""
# Where each provider's endpoint or key is set (docs/config.md "Model strings"): a user who set one chose that provider.
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


def narrowed(user: dict[str, Any], workspace: dict[str, Any],
             may_choose: Callable[[str], bool]) -> tuple[dict[str, Any], list[str]]:
    """`user` with what `workspace` may set on top: lower trust and limits, more blocked paths, dry run on, model
    overrides the user left unset, a prompt, and a model `may_choose` allows. Each value is compared as the settings
    model reads it (`"1000"` is 1000, `true` is 1), so no spelling widens. Returns the merge and the keys that were
    ignored because they would widen."""
    merged, ignored = dict(user), []
    mine = Settings.model_validate(user)
    for key, value in workspace.items():
        if key in ("mcp_servers", "hooks"):
            continue  # proposals, never merged: see proposed_servers and proposed_hooks
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
            wider = {name for name in type(theirs).model_fields if name in theirs.model_fields_set
                     and _wider(f"{key}.{name}", getattr(theirs, name), getattr(ours, name))}
            ignored += [f"{key}.{name}" for name in type(theirs).model_fields if name in wider]
            merged[key] = {**ours.model_dump(), **theirs.model_dump(include=theirs.model_fields_set - wider)}
        elif key == "models":
            merged[key], refused = _models_narrowed(ours, theirs)
            ignored += refused
        elif key == "blocked_paths":
            merged[key] = [*ours, *theirs]
        elif key == "network":  # more hosts denied, lower caps; never a host allowed
            wider = [name for name in ("max_bytes", "timeout") if not getattr(theirs, name) <= getattr(ours, name)]
            ignored += [f"network.{name}" for name in ("allow", *wider) if name in theirs.model_fields_set]
            merged[key] = {**ours.model_dump(), "deny": [*ours.deny, *theirs.deny],
                           **{name: getattr(theirs, name) for name in ("max_bytes", "timeout")
                              if name in theirs.model_fields_set and name not in wider}}
        elif _widens(key, theirs, ours, may_choose):
            ignored.append(key)
        else:
            merged[key] = theirs
    return merged, ignored


def _wider(name: str, theirs: Any, ours: Any) -> bool:
    if name in USERS_ALONE:
        return theirs != ours
    if name in RAISED_NARROWS:
        return not theirs >= ours
    if isinstance(theirs, list):
        return not set(theirs) <= set(ours)
    return not theirs <= ours  # not `>`: a NaN is no lower limit either


_DRY_RUN_ORDER: tuple[object, ...] = (False, "risky", True)


def _widens(key: str, theirs: Any, ours: Any, may_choose: Callable[[str], bool]) -> bool:
    if key == "trust":
        return TRUST_NAMES.index(theirs) > TRUST_NAMES.index(ours)
    if key == "dry_run":  # off < risky < all: a workspace may only run fewer calls for real
        return _DRY_RUN_ORDER.index(theirs) < _DRY_RUN_ORDER.index(ours)
    if key in CEILINGS:
        return not theirs <= ours  # not `>`: a NaN is no lower limit either
    if key in ("model", "compaction_model"):
        return theirs is not None and not may_choose(theirs)
    return False


def _models_narrowed(ours: dict[str, ModelOverride],
                     theirs: dict[str, ModelOverride]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The user's `models:` overrides, with the workspace's fields the user left unset for that model added, and
    constrained decoding and vision, which a workspace may only turn off. The engine reads a model's entry by its
    full model string before its bare id, so a workspace entry by the full string does not outdo the user's by the
    id."""
    merged = {name: entry.model_dump(exclude_none=True) for name, entry in ours.items()}
    refused = []
    for name, entry in theirs.items():
        users = {**_set_fields(ours.get(_model_id(name))), **_set_fields(ours.get(name))}
        added = {}
        for field in type(entry).model_fields:
            value = getattr(entry, field)
            if value is None or users.get(field) == value:
                continue
            # constrained decoding and sight only off: a workspace saying a model sees would send it images (its
            # provider's 400, or pictures to a model the user never chose to show them to)
            may_add = value is False if field in ("constrained", "vision") else field not in users
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


def proposed_hooks(raw: Any, source: str) -> HooksSettings:
    """The hooks a workspace config proposes, validated (a wrong one stops with its key, like any setting)."""
    if raw is None:
        return HooksSettings()
    try:
        return HooksSettings.model_validate(raw)
    except ValidationError as exc:
        key, problem = first_problem(exc)
        raise ConfigError(f"{source}: invalid setting 'hooks.{key}': {problem}") from None
