"""Staging in a clone of the workspace (macOS, where no overlay exists), run here for real on Linux: a real copy,
real commands in it, the real judge and writer (tools/sandbox/effects.py), and macOS played end to end through the
CLI with a stand-in for /usr/bin/sandbox-exec that records the profile it is given and runs the command."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import SERVER
from fake_provider import Call, Reply
from sunwell.tools.policy.guarded import guarded_entries
from sunwell.tools.sandbox.copy_stage import CopyStage
from sunwell.tools.sandbox.effects import apply, assess
from sunwell.tools.workspace.jail import Jail

OPENAI = "openai:gpt-4o"


@pytest.fixture
def ws(workspace: Path) -> Path:
    ws = workspace
    (ws / "src").mkdir(parents=True, exist_ok=True)
    (ws / "a.txt").write_text("one\n")
    (ws / "src" / "app.py").write_text("print(1)\n")
    (ws / "run.sh").write_text("echo run\n")
    (ws / ".env").write_text("KEY=secret\n")
    (ws / ".vscode").mkdir()
    (ws / ".vscode" / "tasks.json").write_text("{}\n")
    return ws


def staged(ws: Path, tmp_path: Path, command: str) -> tuple[CopyStage, Jail]:
    jail = Jail(ws)
    stage = CopyStage.create(tmp_path / "staging", jail.root, guarded_entries(jail))
    subprocess.run(["bash", "-c", command], cwd=stage.upper, check=True)
    return stage, jail


def test_the_clone_holds_the_workspace_but_its_secrets(ws, tmp_path):
    stage, _ = staged(ws, tmp_path, "true")
    assert (stage.upper / "a.txt").read_text() == "one\n" and (stage.upper / ".vscode" / "tasks.json").exists()
    assert not (stage.upper / ".env").exists()
    assert stage.changes(ws) == [] and stage.usage() == (0, 0)
    stage.discard()
    assert not stage.root.exists()


def test_what_a_command_did_in_the_clone_becomes_changes_and_is_applied(ws, tmp_path):
    stage, jail = staged(ws, tmp_path, "echo two >> a.txt && rm src/app.py && mkdir made && echo n > made/n.txt "
                                       "&& chmod 755 run.sh && echo planted > .vscode/tasks.json && echo k > .env")
    changes = {(c.rel, c.kind) for c in stage.changes(ws)}
    assert changes == {("a.txt", "modified"), ("src/app.py", "deleted"), ("made", "added"),
                       ("made/n.txt", "added"), ("run.sh", "mode"), (".vscode/tasks.json", "modified"),
                       (".env", "modified")}  # fmt: skip
    assert stage.usage()[1] >= 5
    found = assess(stage, jail)
    assert {rel for rel, _ in found.refused} == {".env", ".vscode/tasks.json"}
    apply(found, jail, None)
    assert (ws / "a.txt").read_text() == "one\ntwo\n" and not (ws / "src" / "app.py").exists()
    assert (ws / "made" / "n.txt").read_text() == "n\n" and os.stat(ws / "run.sh").st_mode & 0o777 == 0o755
    assert (ws / ".env").read_text() == "KEY=secret\n" and (ws / ".vscode" / "tasks.json").read_text() == "{}\n"
    stage.discard()


def test_the_users_edits_meanwhile_are_not_the_commands(ws, tmp_path):
    stage, _ = staged(ws, tmp_path, "echo x > b.txt")
    (ws / "a.txt").write_text("the user's edit\n")
    assert [(c.rel, c.kind) for c in stage.changes(ws)] == [("b.txt", "added")]
    stage.discard()


def test_a_folder_the_command_made_unwritable_is_still_discarded(ws, tmp_path):
    stage, _ = staged(ws, tmp_path, "mkdir -p locked/in && echo x > locked/in/f && chmod 500 locked/in locked")
    stage.discard()
    assert not stage.root.exists()


FAKE_SANDBOX_EXEC = """#!/bin/sh
# stands in for /usr/bin/sandbox-exec: records its arguments and where it ran, then runs the command
# (the command's environment is an allowlist: the log's path is written in here)
log={log}
printf '%s\\n' "$PWD" > "$log"
while [ "$1" = -p ] || case "$1" in -D*) true;; *) false;; esac; do
  if [ "$1" = -p ]; then printf '%s\\n' "$2" >> "$log.profile"; shift 2; else printf '%s\\n' "$1" >> "$log"; shift; fi
done
exec "$@"
"""

AS_MACOS = """
import sunwell.tools.sandbox.backend as backend
import sunwell.tools.sandbox.seatbelt as seatbelt
FAKE = {fake!r}
backend.backend_for = lambda platform_name: "seatbelt"
backend.find_sandbox = lambda *a, **k: backend.SandboxFound("seatbelt", FAKE, "played")
real_argv = seatbelt.seatbelt_argv
seatbelt.seatbelt_argv = lambda policy, sandbox_exec=FAKE: real_argv(policy, FAKE)
"""


def test_macos_played_a_command_runs_in_the_clone_and_is_approved_by_what_it_did(sunwell, fake, ws, tmp_path):
    site = tmp_path / "as-macos"
    site.mkdir()
    sandbox_exec = site / "sandbox-exec"
    log = tmp_path / "seatbelt.log"
    sandbox_exec.write_text(FAKE_SANDBOX_EXEC.replace("{log}", shlex.quote(str(log))))
    sandbox_exec.chmod(0o755)
    (site / "sitecustomize.py").write_text(AS_MACOS.format(fake=str(sandbox_exec)))
    extra = {"PYTHONPATH": os.pathsep.join([str(site), str(SERVER)])}
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": "echo two >> ../a.txt; cat ../.env; pwd",
                                                                  "cwd": "src"}))]),
                Reply(text="done"))  # fmt: skip
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--approve", "ask", "--json", input="y\n",
                  cwd=ws, extra_env=extra)
    assert run.code == 0, run.stderr
    assert not [e for e in run.events if e["type"] == "notice" and e["code"] == "effects_unavailable"]
    assert "it ran in a staging copy" in run.stderr and "A         a.txt" not in run.stderr  # asked after it ran
    assert "M         a.txt" in run.stderr  # with what it changed
    where, *params = log.read_text().splitlines()
    clone = next(p.split("=", 1)[1] for p in params if p.startswith("-DWRITABLE_0="))
    assert where == os.path.join(clone, "src") and clone != str(ws)
    assert f"-DBLOCKED_FILE_0={ws / '.env'}" in params
    assert "(deny default)" in Path(str(log) + ".profile").read_text()
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert "KEY=secret" not in result["output"]  # the clone has no .env
    assert (ws / "a.txt").read_text() == "one\ntwo\n", run.stderr + json.dumps(result)
    assert not Path(clone).exists()  # the clone is gone once applied
    undo = sunwell("undo", cwd=ws, extra_env=extra)
    assert undo.code == 0, undo.stderr
    assert (ws / "a.txt").read_text() == "one\n"
