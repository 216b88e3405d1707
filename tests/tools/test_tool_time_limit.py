"""`tool_timeout_sec` is the time limit of a call to a tool that sets none of its own (README "Configuration")."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import check_stream_rules
from fake_provider import Call, Reply

OPENAI = "openai:gpt-4o"
RUNAWAY = Call("search_files", json.dumps({"pattern": "(a+)+$"}))
"""Backtracks 2**60 times on runaway.txt in the Python engine: a search that would take days."""
GUARD = 40  # seconds; before the fix the search ran to its own 50 s deadline


def configure(tmp_path: Path, workspace: Path, user: str, theirs: str = "") -> None:
    (tmp_path / "config" / "sunwell").mkdir(parents=True)
    (tmp_path / "config" / "sunwell" / "config.yaml").write_text(user)
    if theirs:
        (workspace / ".sunwell").mkdir()
        (workspace / ".sunwell" / "config.yaml").write_text(theirs)


@pytest.mark.parametrize(("user", "theirs"), [
    pytest.param("tool_timeout_sec: 1\n", "tool_timeout_sec: 120\n", id="the workspace cannot raise it"),
    pytest.param("", "tool_timeout_sec: 1\n", id="the workspace may lower it"),
])  # fmt: skip
def test_a_call_that_runs_past_tool_timeout_sec_fails_with_timeout(sunwell, fake, workspace, tmp_path, user, theirs):
    (workspace / "runaway.txt").write_text("a" * 60 + "!\n")
    configure(tmp_path, workspace, 'ripgrep_path: ""\n' + user, theirs)  # the Python engine: it can backtrack
    fake.script(Reply(tool_calls=[RUNAWAY]), Reply(text="too slow"))
    started = time.monotonic()
    run = sunwell("run", "find it", "--model", OPENAI, "--json", timeout=GUARD)
    assert run.code == 0, run.stderr
    check_stream_rules(run.events)
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["error"]["code"] == "timeout" and " 1 s " in result["error"]["message"], result["error"]
    assert result["durationMs"] < 20_000 and time.monotonic() - started < GUARD / 2  # not the old 50 s deadline
    assert "Error [timeout]" in json.dumps(fake.requests[-1].body)


def test_a_tool_with_a_limit_of_its_own_keeps_it(sunwell, fake, workspace, tmp_path):
    configure(tmp_path, workspace, "tool_timeout_sec: 1\nsandbox: 'off'\n")  # run_command: its `timeout` argument
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": "sleep 2; echo slept", "timeout": 10}))]),
                Reply(text="done"))
    run = sunwell("run", "wait", "--model", OPENAI, "--trust", "shell", "--approve", "auto", "--json", timeout=GUARD)
    assert run.code == 0, run.stderr
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and "slept" in result["output"], result
