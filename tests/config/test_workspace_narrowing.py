"""Issue 25, holes 4 and 5: a workspace config may only narrow the user's, compared as the settings model reads each
value (`"1000"` is 1000), and it may not send the conversation to a provider the user never configured. Attacks
first; the property walks every number and boolean of the settings model."""

from __future__ import annotations

import tempfile
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from annotated_types import Ge, Gt, Le, Lt
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from fake_provider import Reply
from sunwell.config import ConfigError, Settings, load_settings

FULL, BARE = "openai:gpt-4o", "gpt-4o"  # a `models:` entry by the full model string, or by the model id alone


def write(root: Path, user: dict[str, Any] | str, workspace: dict[str, Any] | str) -> dict[str, str]:
    """The user's and the workspace's config files under `root`; the environment that finds the user's."""
    for path, values in ((root / "config" / "sunwell" / "config.yaml", user),
                         (root / "ws" / ".sunwell" / "config.yaml", workspace)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(values if isinstance(values, str) else yaml.safe_dump(values))
    return {"XDG_CONFIG_HOME": str(root / "config"), "XDG_DATA_HOME": str(root / "data")}


# ---- 4: every number and boolean, as the settings model reads it ---------------------------------------------------


class Leaf(typing.NamedTuple):
    kind: type
    info: FieldInfo
    spellings: tuple[str, ...]  # how a config file may name it


def leaves(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Leaf]]:
    """Every int, float and bool field under `model`, nested models followed, a mapping's entries as `*`."""
    for name, info in model.model_fields.items():
        names = (name, *([info.alias] if info.alias else []), *([name.replace("_", "-")] if not prefix else []))
        yield from _leaves_of(info.annotation, (*prefix, name), info, tuple(dict.fromkeys(names)))


def _leaves_of(annotation: Any, path: tuple[str, ...], info: FieldInfo,
               names: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Leaf]]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _leaves_of(arg, path, info, names)
    elif origin is dict:
        yield from _leaves_of(args[1], (*path, "*"), info, names)
    elif origin is list:
        yield from _leaves_of(args[0], (*path, "[]"), info, names)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from leaves(annotation, path)
    elif annotation in (int, float, bool):
        yield path, Leaf(annotation, info, names)


LEAVES = dict(leaves(Settings))

# What "wider" means per key, as narrowed() decides it: a larger number is a looser limit (a count, a rate, a
# timeout, a window, the compaction threshold); dry run loosens when turned off, constrained decoding when turned
# on; a model's other overrides stand where the user set them; prices and MCP servers are the user's alone (a
# workspace only proposes servers).
LOOSER_WHEN_OFF = {("dry_run",), ("background", "stop_at_session_end")}
LOOSER_WHEN_ON = {("models", "*", "constrained"), ("models", "*", "vision")}  # vision: images sent
USERS_WHERE_SET = {("models", "*", "native_tools"), ("models", "*", "parallel_calls"), ("models", "*", "temperature")}
USERS_ALONE = {"prices", "mcp_servers", "learned_apis"}
ENTRY = {"models": {}, "prices": {"input": 1, "output": 1}, "mcp_servers": {"command": "true"},
         "learned_apis": {"source": "https://api.example.com/openapi.json"}}
"""What an entry of each mapping needs besides the field under test."""

TRICKY = ["1e9", " 5 ", "1_000_000", "+1000", "1000.0", "Infinity", "inf", "-inf", "nan", "-1", "0", "0x10",
          "9" * 30, " 1e3 ", "1,000", "", "true", "false", "yes", "off", "null"]  # fmt: skip


def spellings(value: Any) -> st.SearchStrategy[Any]:
    """`value` as a YAML file may hold it: itself, quoted, padded, in another notation."""
    forms: list[Any] = [value, str(value), f" {value} ", f"{value}\t"]
    if isinstance(value, bool):
        forms += [str(value).lower(), int(value), "yes" if value else "no", "on" if value else "off"]
    elif isinstance(value, int):
        forms += [float(value), f"{value}.0", f"{value:.0e}", f"{value:_}", f"+{value}"]
    elif isinstance(value, float):
        forms += [repr(value), f"{value:e}"]
    return st.sampled_from(forms)


def user_values(leaf: Leaf) -> st.SearchStrategy[Any]:
    """Values the user's own config may hold for `leaf` (within its bounds), spelled any way."""
    if leaf.kind is bool:
        return st.booleans().flatmap(spellings)
    low: float = 0
    high: float = 10**9
    exclude_low = exclude_high = False
    for bound in leaf.info.metadata:
        if isinstance(bound, Ge | Gt):
            low, exclude_low = bound.ge if isinstance(bound, Ge) else bound.gt, isinstance(bound, Gt)
        if isinstance(bound, Le | Lt):
            high, exclude_high = bound.le if isinstance(bound, Le) else bound.lt, isinstance(bound, Lt)
    if leaf.kind is int:
        numbers: st.SearchStrategy[Any] = st.integers(int(low) + exclude_low, int(high) - exclude_high)
    else:
        numbers = st.floats(low, high, exclude_min=exclude_low, exclude_max=exclude_high)
    return numbers.flatmap(spellings)


def workspace_values(leaf: Leaf) -> st.SearchStrategy[Any]:
    """Anything: within the field's bounds, far outside them, not numbers at all."""
    numbers = st.one_of(st.integers(-2, 10**12), st.floats(), st.booleans())
    return st.one_of(user_values(leaf), numbers.flatmap(spellings), st.sampled_from(TRICKY), st.none())


def config(path: tuple[str, ...], value: Any, key: str, name: str) -> dict[str, Any]:
    """A config holding `value` at `path`: `*` is the entry `key`, the last part spelled `name`."""
    def at(i: int) -> Any:
        if i == len(path):
            return value
        if path[i] == "*":
            return {key: {**ENTRY[path[i - 1]], **at(i + 1)}}
        return {(name if i == len(path) - 1 else path[i]): at(i + 1)}

    return at(0)


def read(values: Any, path: tuple[str, ...]) -> Any:
    """The value at `path` as the engine finds it: a model's override by its full model string, then by its id
    (agent/windows.py `configured_window`, models/capabilities.py `capabilities_for`)."""
    for i, part in enumerate(path):
        if part == "*":
            found = (read(values[key], path[i + 1:]) for key in (FULL, BARE) if key in values)
            return next((value for value in found if value is not None), None)
        values = getattr(values, part)
    return values


def wider(path: tuple[str, ...], got: Any, users: Any) -> bool:
    if path in LOOSER_WHEN_OFF:
        return users is True and got is not True
    if path in LOOSER_WHEN_ON:
        return users is False and got is not False  # unset means on, the default
    if path in USERS_WHERE_SET:
        return users is not None and got != users
    if LEAVES[path].kind is bool:
        pytest.fail(f"{'.'.join(path)}: which way does this boolean loosen safety? Say so in narrowed() and here")
    if users is None:
        return False  # no window configured: the server's or the registry's is used
    return got is None or not got <= users


def dotted(path: tuple[str, ...], key: str) -> str:
    return ".".join(key if part == "*" else part for part in path)


def test_the_walk_finds_the_numbers_and_booleans():
    assert {("max_tool_turns",), ("compact_at",), ("dry_run",), ("rate_limits", "writes_per_min"),
            ("staging", "max_files"), ("models", "*", "context_window"), ("models", "*", "constrained"),
            ("prices", "*", "input"), ("mcp_servers", "*", "sandbox", "network")} <= set(LEAVES)
    assert "contextWindow" in LEAVES[("models", "*", "context_window")].spellings


@pytest.mark.parametrize("path", list(LEAVES), ids=".".join)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_no_workspace_value_is_wider_than_the_users(path, data):
    leaf = LEAVES[path]
    user_key, workspace_key = data.draw(st.sampled_from([FULL, BARE])), data.draw(st.sampled_from([FULL, BARE]))
    mine = data.draw(st.none() | user_values(leaf), label="user")
    theirs = data.draw(workspace_values(leaf), label="workspace")
    user = {} if mine is None else config(path, mine, user_key, data.draw(st.sampled_from(leaf.spellings)))
    workspace = config(path, theirs, workspace_key, data.draw(st.sampled_from(leaf.spellings)))
    with tempfile.TemporaryDirectory() as tmp:
        env = write(Path(tmp), user, workspace)
        try:
            users = load_settings(None, env=env)
        except ConfigError:
            assume(False)
        try:
            final = load_settings(Path(tmp) / "ws", env=env)
        except ConfigError:
            event("the workspace value stops the run")
            return  # a value the settings model cannot read stops the run with its key and file: nothing widened
    if path[0] in USERS_ALONE:
        assert getattr(final, path[0]) == getattr(users, path[0])
        assert path[0] != "prices" or "prices" in final.ignored_workspace_keys
        return
    got, allowed = read(final, path), read(users, path)
    assert not wider(path, got, allowed), f"the workspace's {theirs!r} made {allowed!r} into {got!r}"
    # what was refused is named in the workspace_config_ignored notice (a less specific entry of `models:` only
    # reaches other providers' models of that id, and is not refused)
    try:
        asked = read(Settings.model_validate({path[0]: workspace[next(iter(workspace))]}), path)
    except ValidationError:
        return
    if asked is not None and wider(path, asked, allowed) and (workspace_key == FULL or user_key == BARE):
        assert dotted(path, workspace_key) in final.ignored_workspace_keys


def test_a_quoted_number_cannot_raise_a_limit(tmp_path):
    env = write(tmp_path, "dry_run: 'yes'\nmax_tool_turns: '20'\n",
                "rate_limits: {writes_per_min: '1000'}\ntool_timeout_sec: 1e9\nmax_tool_turns: ' 500 '\n"
                "staging: {max_files: '+99999'}\ncompact_at: '1.0'\ndry_run: 'no'\nmax_tokens: '100000'\n")
    settings = load_settings(tmp_path / "ws", env=env)
    assert settings.rate_limits.writes_per_min == 10 and settings.tool_timeout_sec == 30
    assert settings.max_tool_turns == 20 and settings.staging.max_files == 20_000
    assert settings.compact_at == 0.8 and settings.dry_run is True and settings.max_tokens == 4096
    assert settings.ignored_workspace_keys == ["rate_limits.writes_per_min", "tool_timeout_sec", "max_tool_turns",
                                               "staging.max_files", "compact_at", "dry_run", "max_tokens"]


def test_a_narrower_value_applies_as_the_settings_model_reads_it(tmp_path):
    env = write(tmp_path, "", "rate_limits: {writes_per_min: '3'}\ntool_timeout_sec: ' 5 '\nmax-tool-turns: 7.0\n"
                              "dry_run: 'on'\ncompact_at: '5e-1'\nmodels: {gpt-4o: {contextWindow: '8192'}}\n")
    settings = load_settings(tmp_path / "ws", env=env)
    assert (settings.rate_limits.writes_per_min, settings.tool_timeout_sec, settings.max_tool_turns) == (3, 5.0, 7)
    assert settings.dry_run is True and settings.compact_at == 0.5 and settings.models[BARE].context_window == 8192
    assert settings.ignored_workspace_keys == []


def test_a_models_entry_cannot_outdo_the_users_by_being_more_specific_or_spelled_otherwise(tmp_path):
    env = write(tmp_path, "models: {gpt-4o: {context_window: 4096, constrained: false}}\n",
                'models: {"openai:gpt-4o": {context_window: 131072, constrained: true}, '
                "gpt-4o: {contextWindow: 65536, temperature: 0.5}}\n")
    settings = load_settings(tmp_path / "ws", env=env)
    assert read(settings, ("models", "*", "context_window")) == 4096
    assert read(settings, ("models", "*", "constrained")) is False
    assert settings.models[BARE].temperature == 0.5  # what the user left unset, the workspace may add
    assert settings.ignored_workspace_keys == ["models.openai:gpt-4o.context_window",
                                               "models.openai:gpt-4o.constrained", "models.gpt-4o.context_window"]


def test_a_workspace_may_only_take_writable_folders_back_from_background_processes(tmp_path):
    env = write(tmp_path, "background: {writable: [dist, .next]}\n",
                "background: {writable: [.next, src], max_processes: 9, stop_at_session_end: false}\n")
    settings = load_settings(tmp_path / "ws", env=env)
    assert settings.background.writable == ["dist", ".next"] and settings.background.max_processes == 4
    assert settings.background.stop_at_session_end is True
    assert settings.ignored_workspace_keys == ["background.max_processes", "background.stop_at_session_end",
                                               "background.writable"]
    env = write(tmp_path, "background: {writable: [dist, .next], stop_at_session_end: false}\n",
                "background: {writable: [.next], max_processes: 1, stop_at_session_end: true}\n")
    narrowed = load_settings(tmp_path / "ws", env=env).background
    assert (narrowed.writable, narrowed.max_processes, narrowed.stop_at_session_end) == ([".next"], 1, True)


def test_a_workspace_may_only_narrow_worktrees_and_never_choose_where_they_go(tmp_path):
    env = write(tmp_path, "worktrees: {copy_untracked: [notes.txt]}\n",
                "worktrees: {folder: /tmp/elsewhere, max_running: 30, copy_untracked: [notes.txt, .env]}\n")
    settings = load_settings(tmp_path / "ws", env=env)
    assert (settings.worktrees.folder, settings.worktrees.max_running, settings.worktrees.copy_untracked) == (
        None, 3, ["notes.txt"])
    assert settings.ignored_workspace_keys == ["worktrees.folder", "worktrees.max_running",
                                               "worktrees.copy_untracked"]
    env = write(tmp_path, "worktrees: {copy_untracked: [notes.txt, data]}\n",
                "worktrees: {max_running: 1, copy_untracked: [data]}\n")
    narrowed = load_settings(tmp_path / "ws", env=env).worktrees
    assert (narrowed.max_running, narrowed.copy_untracked) == (1, ["data"])


def test_prices_are_the_users_alone(tmp_path):
    env = write(tmp_path, 'prices: {"openai:gpt-4o": {input: 2.5, output: 10}}\n',
                'prices: {"openai:gpt-4o": {input: 0, output: 0}, gpt-4o: {input: 0, output: 0}}\n')
    settings = load_settings(tmp_path / "ws", env=env)
    assert list(settings.prices) == [FULL] and settings.ignored_workspace_keys == ["prices"]


# ---- 5: the workspace chooses only among the user's providers -----------------------------------------------------

OPENAI_USER = {"OPENAI_API_KEY": "sk-user", "OPENAI_BASE_URL": "https://api.openai.com/v1"}


@pytest.mark.parametrize("key", ["model", "compaction_model"])
@pytest.mark.parametrize("choice", ["ollama:anything", "OLLAMA:anything", "llama3:latest", "qwen2.5:7b"])
def test_a_workspace_cannot_send_the_conversation_to_an_unconfigured_provider(tmp_path, monkeypatch, key, choice):
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11434")  # Sunwell's own environment is not the one it was given
    env = {**write(tmp_path, "model: openai:gpt-4o\n", {key: choice}), **OPENAI_USER}
    settings = load_settings(tmp_path / "ws", env=env)
    assert (settings.model, settings.compaction_model) == ("openai:gpt-4o", None)
    assert settings.ignored_workspace_keys == [key]


@pytest.mark.parametrize("user, extra_env, flags", [
    ("", {"OLLAMA_HOST": "10.0.0.5:11434"}, {}),                      # the user's endpoint
    ("model: ollama:qwen2.5-coder:7b\n", {}, {}),                      # the provider of the user's model
    ("compaction_model: ollama:qwen2.5:0.5b\n", {}, {}),               # or of their summariser
    ("", {"SUNWELL_MODEL": "ollama:qwen2.5:7b"}, {}),
    ("", {}, {"model": "ollama:qwen2.5:7b"}),                          # --model, or the VS Code setting
    ('models: {"ollama:anything": {context_window: 8192}}\n', {}, {}),  # a model the user listed
])  # fmt: skip
def test_a_workspace_may_choose_among_the_users_providers(tmp_path, user, extra_env, flags):
    env = {**write(tmp_path, user, {"compaction_model": "ollama:anything"}), **OPENAI_USER, **extra_env}
    settings = load_settings(tmp_path / "ws", flags, env=env)
    assert settings.compaction_model == "ollama:anything" and settings.ignored_workspace_keys == []


def test_a_listed_model_is_that_model_only(tmp_path):
    env = {**write(tmp_path, 'model: openai:gpt-4o\nmodels: {"ollama:x": {}}\n', {"model": "ollama:y"}),
           **OPENAI_USER}
    assert load_settings(tmp_path / "ws", env=env).ignored_workspace_keys == ["model"]


@pytest.mark.parametrize("choice", ["anthropic:claude-sonnet-4-5", "openai-compatible:qwen"])
def test_a_provider_that_needs_the_users_key_or_endpoint_sends_nothing_without_it(tmp_path, choice):
    """Not refused in the config: until the user sets its key or endpoint it cannot send anything, and once they
    do it is theirs (the turn stops with the provider's own "... is not set")."""
    from sunwell.model_strings import parse_model_string
    from sunwell.models.factory import ProviderConfigError, create_provider

    env = {**write(tmp_path, "model: openai:gpt-4o\n", {"model": choice}), **OPENAI_USER}
    settings = load_settings(tmp_path / "ws", env=env)
    assert settings.model == choice
    with pytest.raises(ProviderConfigError, match="is not set|needs an endpoint"):
        create_provider(parse_model_string(choice), base_url=settings.base_url, env=env)


def test_the_prompt_goes_where_the_user_configured(sunwell, fake, env, tmp_path, workspace):
    env.pop("OLLAMA_HOST", None)  # the user never configured Ollama
    (tmp_path / "config" / "sunwell").mkdir(parents=True)
    (tmp_path / "config" / "sunwell" / "config.yaml").write_text("model: openai:gpt-4o\n")
    (workspace / ".sunwell").mkdir()
    (workspace / ".sunwell" / "config.yaml").write_text("model: ollama:anything\ncompaction_model: ollama:x\n")
    fake.script(Reply(text="hello from the user's model"))
    run = sunwell("run", "the secret plan", "--json")
    assert run.code == 0, run.stderr
    assert [r.body["model"] for r in fake.requests] == ["gpt-4o"]
    assert "the secret plan" in str(fake.requests[0].body["messages"])
    notice = next(e for e in run.events if e["type"] == "notice" and e["code"] == "workspace_config_ignored")
    assert "ignored: model, compaction_model." in notice["message"]
