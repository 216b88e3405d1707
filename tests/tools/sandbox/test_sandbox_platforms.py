"""run_command where the sandbox is not bubblewrap: Windows (none yet) and macOS (Seatbelt).

Windows is played here by a sitecustomize that makes Sunwell's backend choice say "none", its process runner take
its Windows path (asyncio's pipes, the process killed, not a group) and its writer work by path (no dir_fd): the
real CLI, a real command, the real undo. The Seatbelt profile cannot run on Linux; what is checked is the policy a real workspace gives (macOS played
end to end: tests/tools/sandbox/test_copy_stage.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import SERVER
from fake_provider import Call, Reply
from sunwell.tools.policy.guarded import guarded_entries
from sunwell.tools.sandbox.seatbelt import seatbelt_policy, seatbelt_profile
from sunwell.tools.workspace.jail import Jail

OPENAI = "openai:gpt-4o"
AS_WINDOWS = """
import types
import sunwell.tools.sandbox.backend as backend
import sunwell.tools.sandbox.process as process
import sunwell.tools.workspace.safe_write as safe_write
backend.backend_for = lambda platform_name: "none"
process.sys = types.SimpleNamespace(platform="win32")
safe_write._BY_FD = False
"""


@pytest.fixture
def as_windows(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "as-windows"
    site.mkdir()
    (site / "sitecustomize.py").write_text(AS_WINDOWS)
    return {"PYTHONPATH": os.pathsep.join([str(site), str(SERVER)])}


def test_without_a_sandbox_a_command_is_asked_first_said_once_and_undone(sunwell, fake, workspace, as_windows):
    (workspace / "a.txt").write_text("one\n")
    command = "echo two >> a.txt && echo new > n.txt"
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": command}))]),
                Reply(tool_calls=[Call("run_command", json.dumps({"command": "echo again"}))]), Reply(text="done"))
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--approve", "ask", "--json",
                  input="y\ny\n", extra_env=as_windows)
    assert run.code == 0, run.stderr
    notices = [e for e in run.events if e["type"] == "notice" and e["code"] in ("sandbox_unavailable",
                                                                                  "effects_unavailable")]
    assert [n["code"] for n in notices] == ["sandbox_unavailable"]  # once, for two commands
    assert "no command sandbox" in notices[0]["message"] and "asked before it runs" in notices[0]["message"]
    assert "$ echo two" in run.stderr  # asked with the command itself, before it ran
    results = [e for e in run.events if e["type"] == "toolResult"]
    assert all(r["ok"] for r in results) and "[exit code: 0]" in results[0]["output"]
    assert (workspace / "a.txt").read_text() == "one\ntwo\n" and (workspace / "n.txt").exists()
    undo = sunwell("undo", extra_env=as_windows)
    assert undo.code == 0, undo.stderr
    assert (workspace / "a.txt").read_text() == "one\n" and not (workspace / "n.txt").exists()


def test_without_a_sandbox_a_denied_command_never_runs(sunwell, fake, workspace, as_windows):
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": "echo x > planted.txt"}))]),
                Reply(text="ok"))
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--approve", "ask", "--json", input="n\n",
                  extra_env=as_windows)
    assert run.code == 0, run.stderr
    assert not (workspace / "planted.txt").exists()


def test_the_seatbelt_policy_of_a_real_workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".vscode").mkdir(parents=True)
    (ws / "secrets").mkdir()
    (ws / ".env").write_text("KEY=1\n")
    (ws / "src").mkdir()
    jail = Jail(ws)
    home, copy, tmp = str(tmp_path / "home"), tmp_path / "stage" / "copy", tmp_path / "stage" / "tmp"
    policy = seatbelt_policy(jail.root, guarded_entries(jail), copy=copy, tmp=tmp, network=False, home=home,
                             user_home="/Users/me", ro_paths="~/.pyenv")  # a single string, as the config allows
    assert policy.writable == [str(copy), str(tmp), home]  # never the workspace itself
    assert policy.hidden == ["/Users/me"] and str(jail.root) in policy.shown and str(copy) in policy.shown
    assert policy.protected == [str(copy / ".vscode")]  # read-only in the clone the command writes
    assert policy.blocked_files == [str(jail.root / ".env")]  # unreadable where it is (the clone has none)
    assert policy.blocked_dirs == [str(jail.root / "secrets")]
    profile, params = seatbelt_profile(policy)
    assert "(allow network" not in profile
    assert ("BLOCKED_FILE_0", str(jail.root / ".env")) in params
    assert seatbelt_policy(jail.root, [], copy=copy, tmp=tmp, network=True, home=home, user_home="/").hidden == []
