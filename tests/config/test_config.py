"""Settings precedence and the one-line errors that name the key and its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sunwell.config import ConfigError, load_settings


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_precedence(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data")}
    ws = tmp_path / "ws"
    _write(tmp_path / "cfg/sunwell/config.yaml", "model: openai:gpt-4o\ntrust: shell\nmax_tool_turns: 7\n")
    _write(ws / ".sunwell/config.yaml", "trust: read_only\nmax-tool-turns: 6\n")  # the workspace may only lower
    settings = load_settings(ws, {}, env)
    assert (settings.model, settings.trust, settings.max_tool_turns) == ("openai:gpt-4o", "read_only", 6)
    settings = load_settings(ws, {"max_tool_turns": 3}, {**env, "SUNWELL_MAX_TOOL_TURNS": "5"})
    assert settings.max_tool_turns == 3
    assert load_settings(ws, {}, {**env, "SUNWELL_MAX_TOOL_TURNS": "5"}).max_tool_turns == 5
    assert settings.data_dir == tmp_path / "data" / "sunwell"


@pytest.mark.parametrize("text, needle", [
    ("modle: x\n", "'modle'"),
    ("trust: everything\n", "'trust'"),
    ("max_tool_turns: many\n", "'max_tool_turns'"),
    ("models:\n  qwen:\n    emulation: yaml\n", "'models.qwen.emulation'"),
    ("models:\n  qwen: 5\n", "'models.qwen'"),
    ("- a list\n", "mapping"),
    ("model: [unclosed\n", "not valid YAML"),
])
def test_bad_workspace_config_names_key_and_file(tmp_path, text, needle):
    ws = tmp_path / "ws"
    path = _write(ws / ".sunwell/config.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_settings(ws, {}, {"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert needle in str(info.value) and str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_environment_value_names_the_source(tmp_path):
    with pytest.raises(ConfigError, match="environment.*'trust'"):
        load_settings(None, {}, {"XDG_CONFIG_HOME": str(tmp_path), "SUNWELL_TRUST": "root"})


def test_cli_exits_2_on_a_bad_config(sunwell, workspace):
    _write(workspace / ".sunwell/config.yaml", "trust: nope\n")
    run = sunwell("run", "hi", "--model", "openai:gpt-4o")
    assert run.code == 2 and "config.yaml" in run.stderr and "'trust'" in run.stderr
