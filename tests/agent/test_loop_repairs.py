"""The loop's repairs end to end: argument coercion, misspelt tool names, "did you mean", tools fitted to the window."""

from __future__ import annotations

import json

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply
from sunwell.models.tokens import tools_tokens
from sunwell.wire.messages import ToolSpec

OPENAI = "openai:gpt-4o"


def notices(run, code):
    return [e for e in run.events if e["type"] == "notice" and e["code"] == code]


def sent_calls(request):
    messages = request.body["messages"]
    return [c["function"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]


def sent_results(request):
    return [m["content"] for m in request.body["messages"] if m["role"] == "tool"]


def test_string_numbers_are_coerced_and_the_call_runs(sunwell, fake):
    fake.script(Reply(tool_calls=[Call("read_file", '{"path": "a.txt", "limit": "1"}')]), Reply(text="ok"))
    run = sunwell("run", "first line of a.txt?", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    call = next(e for e in run.events if e["type"] == "toolCall")
    assert call["arguments"] == {"path": "a.txt", "limit": "1"}  # the event shows the call as the model made it
    [notice] = notices(run, "coerced_arguments")
    assert notice["level"] == "info" and "read_file" in notice["message"] and "'limit'" in notice["message"]
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and "hello from a" in result["output"] and "second line" not in result["output"]
    assert json.loads(sent_calls(fake.requests[-1])[0]["arguments"]) == {"path": "a.txt", "limit": 1}


@pytest.mark.parametrize("name", ["Read_File", "functions.read_file", "read file"])
def test_a_misspelt_tool_name_runs_the_offered_tool(sunwell, fake, name):
    fake.script(Reply(tool_calls=[Call(name, '{"path": "a.txt"}')]), Reply(text="ok"))
    run = sunwell("run", "what does a.txt say?", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    [notice] = notices(run, "repaired_tool_name")
    assert notice["level"] == "info" and name in notice["message"] and "read_file" in notice["message"]
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and result["name"] == "read_file" and "hello from a" in result["output"]
    assert [c["name"] for c in sent_calls(fake.requests[-1])] == ["read_file"]


def test_an_unknown_tool_gets_a_did_you_mean(sunwell, fake):
    fake.script(Reply(tool_calls=[Call("open_file", '{"path": "a.txt"}')]), Reply(text="sorry"))
    run = sunwell("run", "what does a.txt say?", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["error"]["code"] == "unknown_tool" and not notices(run, "repaired_tool_name")
    [content] = sent_results(fake.requests[-1])
    assert "Error [unknown_tool]" in content and "did you mean 'read_file'" in content


def test_a_misspelt_tool_above_the_trust_level_is_a_permission_error(sunwell, fake):
    fake.script(Reply(tool_calls=[Call("Write_File", '{"path": "b.txt", "content": "x"}')]), Reply(text="sorry"))
    run = sunwell("run", "write b.txt", "--model", OPENAI, "--json", "--trust", "read_only")
    assert run.code == 0, run.stderr
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["error"]["code"] == "permission" and "trust level workspace" in result["error"]["message"]


@pytest.mark.parametrize("window", [None, 2000])
def test_a_small_context_window_gets_fitted_tools(sunwell, fake, workspace, window):
    if window is not None:
        (workspace / ".sunwell").mkdir()
        (workspace / ".sunwell" / "config.yaml").write_text(f"models:\n  gpt-4o:\n    context_window: {window}\n")
    fake.script(Reply(text="ok"))
    run = sunwell("run", "What does a.txt say?", "--model", OPENAI, "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    tools = [ToolSpec(**t["function"]) for t in fake.requests[0].body["tools"]]
    fitted = notices(run, "tools_fitted")
    if window is None:
        assert fitted == [] and tools_tokens(tools) > 500
        return
    assert tools_tokens(tools) <= window // 4 and "read_file" in [t.name for t in tools]
    assert fitted[0]["level"] == "info" and f"{window}-token" in fitted[0]["message"]
