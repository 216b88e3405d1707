"""Approvals, dry run, trust and the loop guard through the real CLI (a pseudo-terminal for `ask`); and the
approval request itself, the wire model of `sunwell/approve`, as the gate builds it from a tool's preview."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest
from pydantic import ValidationError

from conftest import check_stream_rules
from fake_provider import Call, Reply
from person import Person
from sunwell.agent.gate import Gate
from sunwell.tools.base import Tool, ToolContext
from sunwell.tools.policy.approval import ApprovalPolicy
from sunwell.wire.approval import ApprovalRequest, CommandPreview, DiffPreview, EffectsPreview, ToolPreview
from sunwell.wire.messages import ToolCall

OPENAI = "openai:gpt-4o"


def write_call(path="notes.txt", content="new notes\n") -> Call:
    return Call("write_file", json.dumps({"path": path, "content": content}))


def shell_call(command: str) -> Call:
    return Call("run_command", json.dumps({"command": command}))


class Terminal:
    """`sunwell run` with its stdin and stderr on a pseudo-terminal, as a person would run it."""

    def __init__(self, env, cwd, *args):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "sunwell", "run", *args], cwd=cwd, env=env,
                                     stdin=slave, stderr=slave, stdout=subprocess.PIPE, text=True)
        os.close(slave)
        self.screen = ""

    def expect(self, needle: str, timeout: float = 60) -> str:  # failures only; xdist: 4 workers, 2 cores
        deadline = time.monotonic() + timeout
        while needle not in self.screen:
            assert time.monotonic() < deadline, f"never saw {needle!r} in:\n{self.screen}"
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.screen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:
                    break
        return self.screen

    def answer(self, text: str) -> None:
        os.write(self.master, (text + "\n").encode())

    def finish(self) -> tuple[int, str]:
        out, _ = self.proc.communicate(timeout=30)
        os.close(self.master)
        return self.proc.returncode, out


def test_an_unanswered_approval_at_the_terminal_is_denied_and_the_run_ends(env, workspace, fake):
    """The abandoned read of the answer must not hold the process at exit until someone presses Enter."""
    (workspace.parent / "config" / "sunwell").mkdir(parents=True)  # env's XDG_CONFIG_HOME
    (workspace.parent / "config" / "sunwell" / "config.yaml").write_text("approval_timeout_sec: 2\n")
    fake.script(Reply(tool_calls=[write_call()]), Reply(text="Not written."))
    term = Terminal(env, workspace, "update notes", "--model", OPENAI, "--approve", "ask", "--json")
    term.expect("Allow?")
    code, out = term.finish()  # no one answers
    assert code == 0
    [result] = [e for e in map(json.loads, out.splitlines()) if e["type"] == "toolResult"]
    assert result["error"]["code"] == "denied", result
    assert not (workspace / "notes.txt").exists()


def test_ask_shows_the_diff_and_writes_when_approved(env, workspace, fake):
    (workspace / "notes.txt").write_text("old notes\n")
    fake.script(Reply(tool_calls=[write_call()]), Reply(text="Updated."))
    term = Terminal(env, workspace, "update notes", "--model", OPENAI, "--approve", "ask", "--json")
    screen = term.expect("Allow?")
    assert "-old notes" in screen and "+new notes" in screen
    term.answer("y")
    code, out = term.finish()
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    check_stream_rules(events)
    assert {"type": "approval", "decision": "allow", "by": "user"}.items() <= next(
        e for e in events if e["type"] == "approval").items()
    assert (workspace / "notes.txt").read_text() == "new notes\n"


def test_denied_at_the_prompt_leaves_the_file_and_tells_the_model(env, workspace, fake):
    (workspace / "notes.txt").write_text("old notes\n")
    fake.script(Reply(tool_calls=[write_call()]), Reply(text="OK, not changed."))
    term = Terminal(env, workspace, "update notes", "--model", OPENAI, "--approve", "ask")
    term.expect("Allow?")
    term.answer("n")
    code, _ = term.finish()
    assert code == 0
    assert (workspace / "notes.txt").read_text() == "old notes\n"
    assert "Error [denied]" in json.dumps(fake.requests[-1].body)


def test_allow_for_session_covers_the_exact_command_only(env, workspace, fake):
    fake.script(Reply(tool_calls=[shell_call("echo one")]), Reply(tool_calls=[shell_call("echo one")]),
                Reply(tool_calls=[shell_call("echo one; touch pwned")]), Reply(text="done"))
    term = Terminal(env, workspace, "go", "--model", OPENAI, "--approve", "ask", "--trust", "shell", "--json")
    term.expect("$ echo one")
    term.answer("a")
    term.expect("$ echo one; touch pwned")  # the same prefix is asked again
    term.answer("n")
    _, out = term.finish()
    events = [json.loads(line) for line in out.splitlines()]
    approvals = [(e["decision"], e["by"]) for e in events if e["type"] == "approval"]
    assert approvals == [("allowSession", "user"), ("allow", "policy"), ("deny", "user")]
    assert not (workspace / "pwned").exists()


def test_yes_and_deny_modes(sunwell, fake, workspace):
    fake.script(Reply(tool_calls=[write_call("a/b/new.txt", "hi")]), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--yes", "--json")
    assert run.code == 0, run.stderr
    assert (workspace / "a/b/new.txt").read_text() == "hi"
    assert [e["by"] for e in run.events if e["type"] == "approval"] == ["policy"]

    fake.script(Reply(tool_calls=[write_call("other.txt")]), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--json")  # no TTY: deny by default
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["error"]["code"] == "denied" and not (workspace / "other.txt").exists()


def test_command_allowlist_from_config_runs_without_asking(sunwell, fake, workspace, tmp_path):
    config = tmp_path / "config" / "sunwell" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("command_allowlist: ['echo *']\n")
    fake.script(Reply(tool_calls=[shell_call("echo allowed")]), Reply(tool_calls=[shell_call("touch pwned")]),
                Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--json")  # no TTY: deny unless allowlisted
    assert run.code == 0, run.stderr
    assert [(e["decision"], e["by"]) for e in run.events if e["type"] == "approval"] == [
        ("allow", "policy"), ("deny", "policy")]
    assert not (workspace / "pwned").exists()


def test_dry_run_executes_nothing(sunwell, fake, workspace):
    fake.script(Reply(tool_calls=[write_call(), Call("read_file", '{"path": "a.txt"}')]), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--yes", "--dry-run", "--json")
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    codes = [e["error"]["code"] for e in run.events if e["type"] == "toolResult"]
    assert codes == ["dry_run", "dry_run"] and not (workspace / "notes.txt").exists()
    assert run.events[-1]["toolCalls"] == 2


def test_trust_caps_what_runs_even_if_the_model_invents_it(sunwell, fake, workspace):
    fake.script(Reply(tool_calls=[shell_call("touch x"), write_call()]), Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--yes", "--trust", "read_only", "--json")
    errors = [e["error"]["code"] for e in run.events if e["type"] == "toolResult"]
    assert errors == ["permission", "permission"]
    offered = {t["function"]["name"] for t in fake.requests[0].body["tools"]}
    assert offered == {"list_files", "search_files", "read_file", "web_fetch", "update_plan", "ask_user", "task",
                       "get_time", "math_eval", "kv_set", "kv_get", "learn_api"}  # the process tools: with run_command
    assert not (workspace / "x").exists() and not (workspace / "notes.txt").exists()


def test_loop_guard_stops_a_model_repeating_a_failing_call(sunwell, fake):
    bad = Reply(tool_calls=[Call("read_file", '{"path": "missing.txt"}')])
    fake.script(*[bad] * 5)
    run = sunwell("run", "go", "--model", OPENAI, "--json")
    assert run.code == 1
    check_stream_rules(run.events)
    assert run.events[-1]["status"] == "error"
    assert any(e["type"] == "notice" and e["code"] == "loop_guard" for e in run.events)
    third = fake.requests[3].body["messages"][-1]["content"]
    assert "failed 3 times" in third


# ---- the request on the wire ------------------------------------------------------------------------------------


def request(preview, risk="shell") -> ApprovalRequest:
    return ApprovalRequest(session="s", turn="t", call_id="c1", name="run_command", arguments={"command": "ls"},
                           risk=risk, preview=preview)


def test_a_preview_dict_becomes_its_tagged_model_and_goes_out_camel_cased():
    assert isinstance(request({"kind": "command", "command": "ls", "cwd": "."}).preview, CommandPreview)
    diff = request({"kind": "diff", "path": "a.txt", "before": None, "after": "x\n"}, risk="write")
    assert isinstance(diff.preview, DiffPreview) and diff.session_rule() == ("s", "run_command", "")
    effects = request({"kind": "effects", "command": "make", "cwd": "src", "exitCode": 2, "output": "boom",
                       "changes": [{"path": "out.o", "change": "added", "before": None, "after": None,
                                    "binary": True}], "truncated": False})
    assert isinstance(effects.preview, EffectsPreview) and effects.command == "make"
    assert effects.wire() == {
        "session": "s", "turn": "t", "callId": "c1", "name": "run_command", "arguments": {"command": "ls"},
        "risk": "shell", "preview": {"kind": "effects", "command": "make", "cwd": "src", "exitCode": 2,
                                     "output": "boom", "changes": [{"path": "out.o", "change": "added",
                                                                    "before": None, "after": None, "binary": True}],
                                     "truncated": False}}
    tool = request({"kind": "tool", "server": "docs", "tool": "search", "arguments": {"q": "x"}}, risk="mcp")
    assert isinstance(tool.preview, ToolPreview) and tool.command is None


@pytest.mark.parametrize("preview", [
    {"kind": "diff", "path": "a.txt", "before": None},  # no after
    {"kind": "command", "command": "ls"},  # no cwd
    {"kind": "effects", "command": "ls", "cwd": ".", "exitCode": 0, "output": "", "truncated": False,
     "changes": [{"path": "a", "change": "renamed", "before": None, "after": None, "binary": False}]},
    {"kind": "picture", "url": "x"},
    {},
])
def test_a_preview_that_is_not_one_of_the_four_kinds_is_refused(preview):
    with pytest.raises(ValidationError):
        request(preview)


def _gate_tool(preview) -> Tool:
    async def handler(args, ctx):
        raise AssertionError("never run")

    return Tool.dynamic({"type": "object"}, handler, name="skill", description="d", approval="ask", risk="shell",
                        read_only=False, preview=preview)


def _admit(tool: Tool, answer: str = "deny"):
    asked: list[ApprovalRequest] = []

    async def ask(req: ApprovalRequest) -> str:
        asked.append(req)
        return answer

    gate = Gate(ApprovalPolicy(mode="ask", client=Person(approve=ask)))
    call = ToolCall(id="c1", name=tool.name, arguments={"q": 1})
    verdict = asyncio.run(gate.admit(tool, call, tool.bind(call.arguments), ToolContext(jail=None), "s", "t",
                                     emit=lambda event: None))
    return verdict, asked


def test_the_gate_refuses_a_call_whose_preview_cannot_be_shown_without_asking():
    verdict, asked = _admit(_gate_tool(lambda args, ctx: {"kind": "command", "command": "ls"}))
    assert asked == [] and verdict.error.code == "execution"
    assert "could not show what it would do" in verdict.error.message and "cwd" in verdict.error.message


def test_the_gate_shows_a_tool_without_a_preview_of_its_own_as_the_call_itself():
    verdict, [asked] = _admit(_gate_tool(None), answer="allow")
    assert verdict.error is None and verdict.decision == "allow"
    assert asked.preview == ToolPreview(server="", tool="skill", arguments={"q": 1})
