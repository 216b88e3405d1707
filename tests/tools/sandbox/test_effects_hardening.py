"""What a staged command may plant and have Allow apply (issue 25): a git directory under another name, a git
config that names a program, FIFOs and sockets in the staging layer, and links in or as a dependency folder.

Each case is a real command in real bubblewrap over a real overlay; the attack is run, then what reached the
workspace is read, and where git is the threat, real git is run in the planted folder."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fake_provider import Call, Reply
from sunwell.tools.base import CommandSettings, Limits, ToolContext, UndoHooks
from sunwell.tools.handlers.shell import RUN_COMMAND
from sunwell.tools.workspace.checkpoints import Checkpoints
from sunwell.tools.workspace.jail import Jail
from test_sidecar_support import check_turn

OPENAI = "openai:gpt-4o"
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
pytest_plugins = ["test_sidecar_support"]  # the `sidecar` fixture

FSMONITOR = "[core]\n\trepositoryformatversion = 0\n\tworktree = ..\n\tfsmonitor = \"touch {canary}; false\"\n"


def staged(ws: Path, data: Path, command: str) -> tuple[str, list[dict]]:
    """Run `command` staged, Allow whatever it did; (the result the model reads, the previews shown)."""
    checkpoints = Checkpoints(data / "checkpoints")
    ctx = ToolContext(jail=Jail(ws), undo=UndoHooks(before_changes=lambda files: checkpoints.save_changes("s", "t", files)), limits=Limits(max_output_bytes=50_000, commands=CommandSettings(staging_dir=data / "staging")))

    async def allow() -> tuple[str, dict]:  # as the orchestrator does once the user allows what it shows
        staged = await RUN_COMMAND.stage(RUN_COMMAND.bind({"command": command, "timeout": 60}), ctx)
        try:
            shown = await staged.preview()
            return await staged.apply(), shown
        finally:
            await staged.discard()

    output, shown = asyncio.run(asyncio.wait_for(allow(), 120))
    assert not list((data / "staging").iterdir()), "the staging folder stayed behind"
    return output, [shown]


def refused(output: str) -> str:
    return output.split("not applied (commands may not change these): ", 1)[1]


def git_status_runs_nothing(folder: Path, canary: Path) -> None:
    subprocess.run(["git", "status"], cwd=folder, capture_output=True, timeout=30, check=False)
    assert not canary.exists(), "git ran the planted fsmonitor command"


def test_a_folder_that_git_takes_for_a_repository_is_never_applied(workspace, tmp_path):
    canary = tmp_path / "PWNED"
    config = FSMONITOR.format(canary=canary).replace("\n", "\\n").replace("\t", "\\t").replace('"', '\\"')
    plant = (f"mkdir -p vendor/lib/objects/info vendor/lib/refs/heads && echo 'ref: refs/heads/main' > vendor/lib/HEAD"
             f" && printf \"{config}\" > vendor/lib/config && echo hook > vendor/lib/description && echo ok > ok.txt")
    output, [preview] = staged(workspace, tmp_path / "data", plant)
    assert "vendor/lib/ (a git directory" in refused(output)
    assert not (workspace / "vendor" / "lib" / "HEAD").exists()
    assert not (workspace / "vendor" / "lib" / "config").exists()
    assert "vendor/lib/config" not in [c["path"] for c in preview["changes"]]
    assert "not applied: vendor/lib/" in preview["output"]
    assert (workspace / "ok.txt").read_text() == "ok\n"  # the rest of what the command did is applied
    (workspace / "vendor" / "lib").mkdir(parents=True, exist_ok=True)
    git_status_runs_nothing(workspace / "vendor" / "lib", canary)


def test_a_repository_made_of_a_worktree_link_is_refused_too(workspace, tmp_path):
    """git also takes a folder with HEAD and a `commondir` file for a repository, and a `gitdir:` file for a link."""
    plant = ("mkdir -p a && echo 'ref: refs/heads/main' > a/HEAD && echo /tmp/elsewhere > a/commondir && "
             "mkdir -p b && printf 'gitdir: /tmp/elsewhere\\n' > b/pointer && echo ok > ok.txt")
    output, _ = staged(workspace, tmp_path / "data", plant)
    assert "a/ (a git directory" in refused(output)
    assert "b/pointer (a gitdir: link" in refused(output)
    assert not (workspace / "a").exists()
    assert not (workspace / "b" / "pointer").exists() and (workspace / "ok.txt").exists()


def test_an_existing_repository_under_another_name_cannot_be_changed(workspace, tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(workspace / "dep.git")], check=True)
    canary = tmp_path / "PWNED"
    before = (workspace / "dep.git" / "config").read_text()
    command = (f"git config -f dep.git/config core.fsmonitor 'touch {canary}'; echo x > dep.git/hooks/post-update;"
               " echo ok > ok.txt")
    output, _ = staged(workspace, tmp_path / "data", command)
    assert (workspace / "dep.git" / "config").read_text() == before
    assert not (workspace / "dep.git" / "hooks" / "post-update").exists()
    assert (workspace / "ok.txt").exists(), output


@pytest.mark.parametrize("name, text, key", [
    ("tools/gitconfig", "[core]\n\tpager = touch PWNED\n", "core.pager"),
    ("notes.cfg", "# shared settings\n[diff \"bin\"]\n\ttextconv = ./conv.sh\n", "diff.bin.textconv"),
    ("x/settings", "[include]\n\tpath = ../evil.cfg\n", "include.path"),
    ("y/old-style", "[filter.lfs]\nclean = ./c.sh %f\n", "filter.lfs.clean"),
    ("z/one-line", "[core] fsmonitor = ./f.sh\n", "core.fsmonitor"),
    (".gitmodules", "[submodule \"s\"]\n\tpath = s\n\tupdate = !./run.sh\n", "submodule.s.update"),
])
def test_a_git_config_that_names_a_program_is_never_applied(workspace, tmp_path, name, text, key):
    literal = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace('"', '\\"')
    command = f"mkdir -p \"$(dirname {name})\" && printf \"{literal}\" > {name} && echo ok > ok.txt"
    output, _ = staged(workspace, tmp_path / "data", command)
    assert f"{name} (a git config that runs a program: {key})" in refused(output)
    assert not (workspace / name).exists() and (workspace / "ok.txt").exists()


def test_ordinary_ini_files_and_a_plain_git_config_are_applied(workspace, tmp_path):
    command = ("printf '[metadata]\\nname = demo\\n' > setup.cfg && "
               "printf '[user]\\n\\tname = Me\\n[alias]\\n\\tco = checkout\\n' > team.gitconfig")
    output, _ = staged(workspace, tmp_path / "data", command)
    assert "not applied" not in output
    assert (workspace / "setup.cfg").exists() and (workspace / "team.gitconfig").exists()


def test_fifos_and_sockets_are_reported_and_the_rest_applied(workspace, tmp_path):
    command = ("mkfifo pipe && rm a.txt && mkfifo a.txt && "
               "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('sock')\" && echo ok > ok.txt")
    output, [preview] = staged(workspace, tmp_path / "data", command)
    why = refused(output)
    assert "pipe (a FIFO" in why and "a.txt (a FIFO" in why and "sock (a unix socket" in why
    assert (workspace / "a.txt").read_text() == "hello from a\nsecond line\n"
    assert not (workspace / "pipe").exists() and not (workspace / "sock").exists()
    assert (workspace / "ok.txt").read_text() == "ok\n"
    assert [c["path"] for c in preview["changes"]] == ["ok.txt"]


def test_a_fifo_through_the_cli_neither_hangs_nor_loses_the_other_changes(sunwell, fake, workspace):
    command = ("mkfifo p && python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('s')\" && "
               "echo ok > ok.txt")
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": command}))]), Reply(text="done"))
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--approve", "auto", "--json", timeout=90)
    assert run.code == 0 and run.stderr == "", run.stderr
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and "p (a FIFO" in result["output"] and "s (a unix socket" in result["output"]
    assert (workspace / "ok.txt").read_text() == "ok\n"


def test_a_dependency_folder_that_is_a_link_is_never_followed(workspace, tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "secret.txt").write_text("host file\n")
    output, _ = staged(workspace, tmp_path / "data", f"ln -s {outside} node_modules && echo ok > ok.txt")
    assert "node_modules (a symbolic link" in refused(output)
    assert not os.path.lexists(workspace / "node_modules")
    assert (workspace / "ok.txt").exists()


def test_a_dependency_folder_that_is_a_link_in_the_workspace_is_not_written_through(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "node_modules").symlink_to(outside)
    output, _ = staged(workspace, tmp_path / "data", "rm node_modules && mkdir node_modules && echo x > "
                                                      "node_modules/i.js && echo ok > ok.txt")
    assert list(outside.iterdir()) == []
    assert "could not be applied: node_modules/ (a symbolic link or a file stands there" in output
    assert (workspace / "ok.txt").exists(), output


def test_links_fifos_and_repositories_inside_a_dependency_folder_are_not_applied(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host file\n")
    command = ("mkdir -p node_modules/pkg/lib node_modules/.bin node_modules/evil/objects node_modules/evil/refs && "
               "echo x > node_modules/pkg/lib/i.js && ln -s ../pkg/lib/i.js node_modules/.bin/pkg && "
               f"ln -s {outside} node_modules/out && mkfifo node_modules/pkg/p && "
               "echo 'ref: refs/heads/main' > node_modules/evil/HEAD && echo '[core] pager = x' > node_modules/evil/config")
    output, [preview] = staged(workspace, tmp_path / "data", command)
    assert (workspace / "node_modules" / "pkg" / "lib" / "i.js").read_text() == "x\n"
    for planted in (".bin/pkg", "out", "pkg/p", "evil/HEAD", "evil/config"):
        assert not os.path.lexists(workspace / "node_modules" / planted), planted
    assert "node_modules/ copied in (1 files; 4 entries not applied" in output
    assert "node_modules/: 1 files (copied in whole, not undone; 4 entries not applied" in preview["output"]


def test_without_an_overlay_a_repository_a_command_made_is_moved_out(sunwell, fake, tmp_path):
    ws = tmp_path / "ws,plain"  # an overlay's mount options cannot carry a comma: the command runs unstaged
    ws.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(ws / "kept.git")], check=True)
    plant = ("mkdir -p vendor/lib/objects vendor/lib/refs && echo 'ref: refs/heads/main' > vendor/lib/HEAD && "
             "echo '[core] fsmonitor = x' > vendor/lib/config && echo x > kept.git/description; echo ok > ok.txt")
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": plant}))]), Reply(text="done"))
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--approve", "auto", "--json", cwd=ws)
    assert run.code == 0, run.stderr
    output = next(e for e in run.events if e["type"] == "toolResult")["output"]
    assert "the command created vendor/lib/" in output and not (ws / "vendor" / "lib").exists()
    assert (ws / "kept.git" / "description").read_text() != "x\n"  # shown read-only to the command
    assert (ws / "ok.txt").exists()


async def test_through_the_sidecar_a_fifo_and_a_repository_are_refused_and_the_rest_applied(sidecar, fake,
                                                                                             workspace):
    sidecar.answer = lambda params: {"decision": "allow"}
    command = ("mkfifo p && mkdir -p r/objects r/refs && echo 'ref: refs/heads/main' > r/HEAD && echo ok > ok.txt")
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": command}))]), Reply(text="ok"))
    result, events = await asyncio.wait_for(sidecar.chat("go", trust="shell"), 120)
    check_turn(events, result)
    [asked] = sidecar.approvals
    assert "not applied: p (a FIFO" in asked["preview"]["output"]
    assert "not applied: r/ (a git directory" in asked["preview"]["output"]
    assert [c["path"] for c in asked["preview"]["changes"]] == ["ok.txt"]
    assert (workspace / "ok.txt").exists() and not (workspace / "r").exists() and not (workspace / "p").exists()
