"""MCP tools end to end through the real CLI: a scripted model (the fake provider) calling the toolbox's tools over
real stdio, approvals at a pseudo-terminal, the audit log, `sunwell mcp list`, `::mcp`, and servers a workspace
proposes, which never start before the user approved them."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import check_stream_rules
from fake_provider import Call, Reply
from mcp_support import toolbox, write_user_config
from test_approvals import Terminal

OPENAI = "openai:gpt-4o"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def add(a: int, b: int) -> Call:
    return Call("box__add", json.dumps({"a": a, "b": b}))


def offered(request) -> list[str]:
    return [tool["function"]["name"] for tool in request.body.get("tools", [])]


def asked(term: Terminal, times: int, timeout: float = 30) -> str:
    """The screen once the terminal has asked `times` questions."""
    deadline = time.monotonic() + timeout
    while term.screen.count("Allow?") < times:
        assert time.monotonic() < deadline, f"asked fewer than {times} times:\n{term.screen}"
        ready, _, _ = select.select([term.master], [], [], 0.2)
        if ready:
            term.screen += os.read(term.master, 4096).decode(errors="replace")
    return term.screen


def propose(workspace: Path, **servers: dict) -> None:
    (workspace / ".sunwell").mkdir(exist_ok=True)
    (workspace / ".sunwell" / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}))


@pytest.fixture
def config_home(env) -> Path:
    return Path(env["XDG_CONFIG_HOME"])


@needs_bwrap
def test_a_scripted_model_calls_an_mcp_tool_end_to_end(sunwell, fake, config_home, env):
    write_user_config(config_home, mcp_servers={"box": toolbox()})
    fake.script(Reply(text="Let me add.", tool_calls=[add(2, 3)]), Reply(text="It is 5."))
    run = sunwell("run", "what is 2+3?", "--model", OPENAI, "--json", "--trust", "shell", "--yes")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    assert "box__add" in offered(fake.requests[0]) and "box__echo" in offered(fake.requests[0])
    spec = next(t for t in fake.requests[0].body["tools"] if t["function"]["name"] == "box__add")["function"]
    assert spec["parameters"]["required"] == ["a", "b"] and "MCP tool `add` of the server `box`" in \
        spec["description"]
    approval = next(e for e in run.events if e["type"] == "approval")
    assert (approval["decision"], approval["by"]) == ("allow", "policy")
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and result["name"] == "box__add" and '"sum": 5' in result["output"]
    tool_message = next(m for m in fake.requests[1].body["messages"] if m["role"] == "tool")
    assert '"sum": 5' in tool_message["content"]
    assert run.stderr == ""
    audit = "".join(p.read_text() for p in (Path(env["SUNWELL_DATA_DIR"]) / "audit").glob("*.jsonl"))
    line = next(json.loads(line) for line in audit.splitlines() if json.loads(line)["tool"] == "box__add")
    assert line["arguments"] == {"a": 2, "b": 3} and line["ok"] and line["decision"] == "allow"


PICTURE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
"""The toolbox's 1x1 PNG (tests/mcp_servers/toolbox.py), in base64."""


@pytest.mark.parametrize("model", [OPENAI, "anthropic:claude-sonnet-4-5"])
def test_an_image_an_mcp_tool_returns_is_an_image_block_for_anthropic_and_a_note_for_chat_completions(
        sunwell, fake, config_home, model):
    """The result's parts reach each provider in its own shape; `toolResult.output` is the same text for both."""
    write_user_config(config_home, mcp_servers={"box": toolbox(sandbox="off")})
    fake.script(Reply(tool_calls=[Call("box__picture", "{}")]), Reply(text="A red dot."))
    run = sunwell("run", "what is the picture?", "--model", model, "--json", "--trust", "shell", "--yes")
    assert run.code == 0, run.stderr
    result = next(e for e in run.events if e["type"] == "toolResult")
    note = "[image: image/png, about 72 bytes — not shown, tool results are text]"
    assert result["ok"] and result["output"] == f"a tiny picture\n{note}" and "data" not in result
    if model == OPENAI:
        tool_message = next(m for m in fake.requests[1].body["messages"] if m["role"] == "tool")
        assert tool_message["content"] == f"a tiny picture\n{note}"
    else:
        block = next(b for m in fake.requests[1].body["messages"] if m["role"] == "user" for b in m["content"]
                     if b["type"] == "tool_result")
        assert [(b["type"], b.get("text")) for b in block["content"]] == [("text", "a tiny picture"), ("image", None)]
        assert block["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": PICTURE}


def test_mcp_tools_need_their_trust_and_their_servers_start_only_then(sunwell, fake, config_home):
    write_user_config(config_home, mcp_servers={"box": toolbox(sandbox="off")})
    fake.script(Reply(tool_calls=[add(1, 1)]), Reply(text="cannot"))
    run = sunwell("run", "add", "--model", OPENAI, "--json", "--yes")  # trust workspace: below shell
    assert run.code == 0, run.stderr
    assert not any(name.startswith("box__") for name in offered(fake.requests[0]))
    error = next(e for e in run.events if e["type"] == "toolResult")["error"]
    assert error["code"] == "unknown_tool"  # never started, so never listed: the model only invented it


def test_approval_deny_and_allow_for_session_of_the_exact_arguments(env, workspace, fake, config_home):
    write_user_config(config_home, mcp_servers={"box": toolbox(sandbox="off")})
    fake.script(Reply(tool_calls=[add(1, 2)]), Reply(tool_calls=[add(1, 2)]), Reply(tool_calls=[add(5, 6)]),
                Reply(tool_calls=[add(5, 6)]), Reply(tool_calls=[add(3, 4)]), Reply(text="done"))
    term = Terminal(env, workspace, "add", "--model", OPENAI, "--approve", "ask", "--trust", "shell", "--json")
    screen = term.expect("Allow?")
    assert "box__add wants to call a tool of an MCP server" in screen
    assert "add on the MCP server box, with:" in screen and '"a": 1' in screen
    term.answer("n")  # the same call again in this turn is denied again, without asking (issue 34, bug 5)
    assert '"a": 5' in asked(term, 2).rsplit("Allow?", 2)[1]
    term.answer("a")
    assert '"a": 3' in asked(term, 3).rsplit("Allow?", 2)[1]  # other arguments: asked again
    term.answer("y")
    code, out = term.finish()
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    check_stream_rules(events)
    approvals = [(e["decision"], e["by"]) for e in events if e["type"] == "approval"]
    assert approvals == [("deny", "user"), ("allowSession", "user"), ("allow", "policy"), ("allow", "user")]
    results = [e for e in events if e["type"] == "toolResult"]
    assert [r["error"]["code"] for r in results[:2]] == ["denied", "denied"] and "already" in results[1]["error"]["message"]
    assert [r["ok"] for r in results[2:]] == [True, True, True]


def test_approval_mode_deny_refuses_mcp_calls(sunwell, fake, config_home):
    write_user_config(config_home, mcp_servers={"box": toolbox(sandbox="off")})
    fake.script(Reply(tool_calls=[add(1, 2)]), Reply(text="denied"))
    run = sunwell("run", "add", "--model", OPENAI, "--json", "--trust", "shell", "--approve", "deny")
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["error"]["code"] == "denied"


def test_a_server_that_fails_is_a_notice_and_the_turn_goes_on(sunwell, fake, config_home):
    write_user_config(config_home, mcp_servers={"bad": toolbox("--crash-at-start", sandbox="off")})
    fake.script(Reply(text="fine without it"))
    run = sunwell("run", "hi", "--model", OPENAI, "--json", "--trust", "shell")
    assert run.code == 0 and run.stderr == ""
    notice = next(e for e in run.events if e["type"] == "notice")
    assert notice["code"] == "mcp_server" and "MCP server bad exited while starting" in notice["message"]
    assert run.events[-1]["status"] == "completed"


def test_mcp_list_shows_servers_states_and_tools(sunwell, config_home, workspace):
    write_user_config(config_home, mcp_servers={"box": toolbox(sandbox="off", tools=["echo", "add"]),
                                                "bad": toolbox("--crash-at-start", sandbox="off")})
    propose(workspace, theirs=toolbox())
    run = sunwell("mcp", "list", "--json")
    assert run.code == 0, run.stderr
    rows = {row["name"]: row for row in map(json.loads, run.stdout.splitlines())}
    assert rows["box"]["state"] == "running" and rows["box"]["tools"] == ["box__echo", "box__add"]
    assert rows["bad"]["state"] == "failed: exited while starting" and rows["bad"]["tools"] == []
    assert rows["theirs"]["state"] == "awaiting approval" and rows["theirs"]["source"] == "workspace"
    assert rows["theirs"]["sandbox"] == "on" and "toolbox.py" in rows["theirs"]["launch"]
    assert {row["transport"] for row in rows.values()} == {"stdio"}
    text = sunwell("mcp", "list")
    assert "approve it with: sunwell mcp approve theirs" in text.stdout and "tools: box__echo, box__add" in text.stdout


@needs_bwrap
def test_a_workspace_proposed_server_does_not_start_until_approved(sunwell, fake, workspace, env):
    propose(workspace, box={**toolbox(), "approval": "auto", "sandbox": "off"})
    fake.script(Reply(text="no tools from there"))
    run = sunwell("run", "hi", "--model", OPENAI, "--json", "--trust", "full", "--yes")
    assert run.code == 0, run.stderr
    assert not any(name.startswith("box__") for name in offered(fake.requests[0]))
    notices = {e["code"]: e["message"] for e in run.events if e["type"] == "notice"}
    assert "sunwell mcp approve box" in notices["mcp_server"]
    assert "mcp_servers.box.approval" in notices["workspace_config_ignored"]
    assert "mcp_servers.box.sandbox" in notices["workspace_config_ignored"]

    refused = sunwell("mcp", "approve", "box")  # no terminal, no --yes: nothing is approved
    assert refused.code == 2 and "--yes" in refused.stderr
    approved = sunwell("mcp", "approve", "box", "--yes")
    assert approved.code == 0 and "toolbox.py" in approved.stdout
    fake.script(Reply(tool_calls=[add(2, 2)]), Reply(text="4"))
    run = sunwell("run", "add", "--model", OPENAI, "--json", "--trust", "full", "--yes")
    assert "box__add" in offered(fake.requests[1])
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and '"sum": 4' in result["output"]

    propose(workspace, box={**toolbox("--name", "changed")})  # another command line: asked again
    rows = {r["name"]: r for r in map(json.loads, sunwell("mcp", "list", "--json").stdout.splitlines())}
    assert rows["box"]["state"] == "awaiting approval"


@needs_bwrap
def test_a_proposed_server_is_approved_at_the_terminal_once(env, workspace, fake):
    propose(workspace, box=toolbox())
    fake.script(Reply(tool_calls=[add(5, 5)]), Reply(text="10"), Reply(text="again"))
    term = Terminal(env, workspace, "add", "--model", OPENAI, "--approve", "ask", "--trust", "shell", "--json")
    screen = term.expect("Allow?")
    assert "MCP server box (proposed by the workspace config) wants to run a command" in screen
    assert "toolbox.py" in screen
    term.answer("y")
    term.screen = ""
    term.expect("Allow?")  # the call itself
    term.answer("y")
    code, _ = term.finish()
    assert code == 0
    # remembered: the next run starts it without asking
    run = subprocess.run([sys.executable, "-m", "sunwell", "run", "hi", "--model", OPENAI, "--json", "--trust",
                          "shell", "--approve", "deny"], cwd=workspace, env=env, capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 0 and "box__add" in offered(fake.requests[-1])


def test_the_mcp_chat_command(env, workspace, config_home):
    write_user_config(config_home, mcp_servers={"box": toolbox(sandbox="off", tools=["echo"])})
    propose(workspace, theirs=toolbox())
    proc = subprocess.run([sys.executable, "-m", "sunwell", "chat", "--model", OPENAI, "--trust", "shell"],
                          input="::mcp\n::help mcp\n", cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "**box** — stopped" in proc.stdout and "toolbox.py" in proc.stdout  # a chat command starts nothing
    assert "runs as you" in proc.stdout.split("**box**")[1].split("**theirs**")[0]  # sandbox: off, said
    assert "**theirs** — awaiting approval" in proc.stdout and "sunwell mcp approve theirs" in proc.stdout
    assert "::mcp" in proc.stdout


def test_a_lens_may_name_mcp_tools(sunwell, fake, config_home, workspace):
    lens = workspace / "echo.lens"
    lens.write_text("name: echo-only\ndescription: Only the echo tool.\n"
                    "tool_policy:\n  allowed_tools: [read_file, box__echo]\n")
    unknown = sunwell("lens", "check", str(lens))
    assert unknown.code == 1 and "Unknown tool 'box__echo'" in unknown.stdout
    write_user_config(config_home, mcp_servers={"box": toolbox(sandbox="off")})
    assert sunwell("lens", "check", str(lens)).code == 0
    fake.script(Reply(tool_calls=[Call("box__echo", '{"text": "narrowed"}')]), Reply(text="ok"))
    run = sunwell("run", "echo", "--model", OPENAI, "--json", "--trust", "shell", "--yes", "--lens", "echo.lens")
    assert run.code == 0, run.stderr
    assert sorted(offered(fake.requests[0])) == ["box__echo", "read_file"]
    assert next(e for e in run.events if e["type"] == "toolResult")["output"] == "narrowed"
