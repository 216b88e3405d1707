"""The sidecar's plain functions, without a process: options, settings precedence, params parsing, the model
catalogue, approval answers, and the wire schema the TypeScript types are generated from."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from sunwell.agent.engine import Engine
from sunwell.config import Settings
from sunwell.lsp.catalog import model_catalog
from sunwell.lsp.client import approve_result
from sunwell.lsp.configuration import data_dir_problem, read_options, resolve_settings, workspace_root
from sunwell.lsp.sessions import iso_time
from sunwell.wire import protocol
from sunwell.wire.protocol import ChatParams, InvalidParams, parse
from sunwell.wire.user_requests import ApproveResult


def test_options_keep_the_valid_keys_and_name_the_bad_ones():
    options, problems = read_options({"model": "openai:gpt-4o", "trust": "root", "maxToolTurns": "many",
                                      "colour": "blue", "dataDir": "/tmp/d"}, "initializationOptions")
    assert options.model == "openai:gpt-4o" and options.data_dir == Path("/tmp/d")
    assert options.trust is None and options.max_tool_turns is None
    assert len(problems) == 3
    assert any("'colour'" in p for p in problems) and any("'trust'" in p for p in problems)
    assert any("'maxToolTurns'" in p for p in problems)
    assert read_options(None, "x") == (read_options({}, "x")[0], [])
    assert read_options(["model"], "x")[1] == ["x must be an object; ignored"]
    assert read_options({"colour": 1}, "configuration", warn_unknown=False)[1] == []


def test_client_options_win_over_environment_and_files(tmp_path):
    (tmp_path / ".sunwell").mkdir()
    (tmp_path / ".sunwell" / "config.yaml").write_text("model: anthropic:claude-sonnet-4-5\nmax_tool_turns: 7\n")
    env = {"SUNWELL_DATA_DIR": str(tmp_path / "env-data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    options, _ = read_options({"dataDir": str(tmp_path / "client-data"), "model": "openai:gpt-4o"}, "x")
    settings, problems = resolve_settings(tmp_path, options, env)
    assert problems == []
    assert settings.data_dir == tmp_path / "client-data"
    assert settings.model == "openai:gpt-4o" and settings.max_tool_turns == 7
    assert settings.approval == "ask"  # the sidecar's default: ask the client

    defaults, _ = resolve_settings(tmp_path, read_options({}, "x")[0], env)
    assert defaults.data_dir == tmp_path / "env-data" and defaults.model == "anthropic:claude-sonnet-4-5"


def test_a_broken_config_file_is_reported_and_the_client_options_still_apply(tmp_path):
    (tmp_path / ".sunwell").mkdir()
    (tmp_path / ".sunwell" / "config.yaml").write_text("trust: [not, a, level]\n")
    options, _ = read_options({"model": "openai:gpt-4o", "dataDir": str(tmp_path / "d")}, "x")
    settings, problems = resolve_settings(tmp_path, options, {"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert len(problems) == 1 and "config.yaml" in problems[0] and "trust" in problems[0]
    assert settings.model == "openai:gpt-4o" and settings.trust == "workspace"


def test_data_dir_problems(tmp_path):
    assert data_dir_problem(tmp_path / "new" / "deeper") is None and (tmp_path / "new" / "deeper").is_dir()
    (tmp_path / "file").write_text("")
    assert "cannot be created" in data_dir_problem(tmp_path / "file" / "data")


def test_workspace_root_prefers_the_first_folder(tmp_path):
    folder = types.WorkspaceFolder(uri=(tmp_path / "a").as_uri(), name="a")
    params = types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=(tmp_path / "b").as_uri(),
                                    workspace_folders=[folder])
    assert workspace_root(params) == tmp_path / "a"
    params.workspace_folders = None
    assert workspace_root(params) == tmp_path / "b"
    params.root_uri, params.root_path = None, str(tmp_path / "c")
    assert workspace_root(params) == tmp_path / "c"
    params.root_path = None
    assert workspace_root(params) == Path.cwd()


@pytest.mark.parametrize("params,where", [
    ({}, "'text'"), ({"text": ""}, "'text'"), ({"text": "hi", "trust": "root"}, "'trust'"),
    ({"text": "hi", "session": 3}, "'session'"),
])
def test_invalid_chat_params_name_the_key(params, where):
    with pytest.raises(InvalidParams, match=where):
        parse(ChatParams, params, protocol.CHAT)


def test_chat_params_ignore_unknown_keys_and_accept_none():
    assert parse(ChatParams, {"text": "hi", "future": 1}, protocol.CHAT).text == "hi"
    with pytest.raises(InvalidParams, match="must be an object"):
        parse(ChatParams, ["hi"], protocol.CHAT)
    assert parse(protocol.EmptyParams, None, protocol.SESSIONS) == protocol.EmptyParams()


def test_model_catalogue_lists_the_current_model_and_the_overridden_ones(tmp_path):
    settings = Settings.model_validate({"model": "gpt-4o", "models": {
        "openai-compatible:qwen2.5-coder-0.5b": {"native_tools": False, "emulation": "xml"},
        "claude-sonnet-4-5": {"context_window": 100_000}}})
    catalogue = model_catalog(Engine(settings, tmp_path)).wire()
    assert catalogue["current"] == "openai:gpt-4o"
    by_id = {m["id"]: m for m in catalogue["models"]}
    assert list(by_id) == ["openai:gpt-4o", "openai-compatible:qwen2.5-coder-0.5b", "anthropic:claude-sonnet-4-5"]
    qwen = by_id["openai-compatible:qwen2.5-coder-0.5b"]["capabilities"]
    assert qwen["nativeTools"] is False and qwen["emulation"] == "xml"
    assert by_id["anthropic:claude-sonnet-4-5"]["capabilities"]["contextWindow"] == 100_000
    assert model_catalog(Engine(Settings(), tmp_path)).wire() == {"current": None, "models": []}


@pytest.mark.parametrize("answer,decision,note", [
    ({"decision": "allow"}, "allow", None), ({"decision": "allowSession"}, "allowSession", None),
    ({"decision": "deny", "note": "not main"}, "deny", "not main"), ({"decision": "deny", "note": 7}, "deny", None),
])
def test_decision_and_note_of_an_answer(answer, decision, note):
    assert approve_result(answer) == ApproveResult(decision=decision, note=note)


@pytest.mark.parametrize("answer", [{"decision": 1}, "allow", None, {}, {"decision": "maybe"}])
def test_an_answer_with_no_known_decision_is_refused_for_the_policy_to_deny(answer):
    with pytest.raises(ValueError):
        approve_result(answer)


def test_times_are_iso_utc():
    assert iso_time(0) == "1970-01-01T00:00:00Z"


def test_every_method_has_a_json_schema_with_camel_case_keys():
    schemas = {method: {"params": params.model_json_schema(by_alias=True),
                        "result": result.model_json_schema(by_alias=True)}
               for method, (params, result) in protocol.REQUESTS.items()}
    assert set(schemas) == {protocol.CHAT, protocol.SESSIONS, protocol.SESSION, protocol.UNDO, protocol.TOOLS,
                            protocol.MODELS, protocol.COMMANDS, protocol.MCP, protocol.MCP_RESTART, protocol.APPROVE,
                            protocol.USAGE, protocol.RESUME, protocol.ASK, protocol.CODE_INTEL,
                            protocol.LEARNED_APIS, protocol.LEARNED_FORGET, protocol.MCP_SIGN_OUT, protocol.SECRET,
                            protocol.ELICIT, protocol.PROCESSES, protocol.PROCESS_STOP, protocol.WORKTREES,
                            protocol.WORKTREE_ACTION}
    assert "toolCalls" in schemas[protocol.CHAT]["result"]["properties"]
    assert "callId" in schemas[protocol.APPROVE]["params"]["properties"]
    assert schemas[protocol.CHAT]["params"]["required"] == ["text"]
