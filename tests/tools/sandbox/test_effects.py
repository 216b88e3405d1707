"""Shell effects: a command runs in a staging overlay (real bubblewrap, real overlayfs), the approval shows what it
changed, Allow applies it as a checkpoint, Deny leaves the workspace byte-identical, undo puts it back."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import call_tool
from fake_provider import Call, Reply
from sunwell.tools.base import CommandSettings, Limits, ToolContext, ToolFailure, UndoHooks
from sunwell.tools.handlers.shell import RUN_COMMAND, staging_problem
from sunwell.tools.workspace.checkpoints import Checkpoints
from sunwell.tools.workspace.jail import Jail

OPENAI = "openai:gpt-4o"
CHANGES = ("printf 'third line\\n' >> a.txt && mkdir -p made && echo fresh > made/new.txt && rm src/app.py "
           "&& chmod 755 run.sh && head -c 300 /dev/urandom > blob.bin && echo did it")
needs_overlay = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def tree(root: Path) -> dict[str, tuple[bytes, int] | str]:
    """Every entry under root: bytes and mode of files, "dir" for folders (blocked ones too, byte for byte)."""
    found: dict[str, tuple[bytes, int] | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        found[rel] = "dir" if path.is_dir() else (path.read_bytes(), path.stat().st_mode & 0o777)
    return found


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "run.sh").write_text("#!/bin/sh\necho run\n")
    (workspace / "run.sh").chmod(0o644)
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    return workspace


def ask(sunwell, answer: str, command: str = CHANGES, **kwargs):
    return sunwell("run", "change things", "--model", OPENAI, "--trust", "shell", "--approve", "ask", "--json",
                   input=answer + "\n", **kwargs)


def script(fake, command: str = CHANGES) -> None:
    fake.script(Reply(tool_calls=[Call("run_command", json.dumps({"command": command}))]), Reply(text="done"))


@needs_overlay
def test_denied_effects_leave_the_workspace_byte_identical(sunwell, fake, ws):
    before = tree(ws)
    script(fake)
    run = ask(sunwell, "n")
    assert run.code == 0, run.stderr
    # the terminal showed the stat and the diff of what the command did, before asking
    assert "nothing has reached the workspace yet" in run.stderr and "did it" in run.stderr
    for line in ("M         a.txt  +1 -0", "A         made/new.txt  +1 -0", "D         src/app.py  +0 -2",
                 "M (mode)  run.sh", "A         blob.bin (binary)", "+third line", "-    return 42"):
        assert line in run.stderr, line
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["error"]["code"] == "denied" and "nothing it changed was applied" in result["error"]["message"]
    assert tree(ws) == before


@needs_overlay
def test_allowed_effects_are_applied_exactly_and_undone_byte_for_byte(sunwell, fake, ws):
    before = tree(ws)
    script(fake)
    run = ask(sunwell, "y")
    assert run.code == 0, run.stderr
    result = next(e for e in run.events if e["type"] == "toolResult")
    assert result["ok"] and "applied 5 file change(s)" in result["output"], result
    assert (ws / "a.txt").read_text() == "hello from a\nsecond line\nthird line\n"
    assert (ws / "made" / "new.txt").read_text() == "fresh\n" and not (ws / "src" / "app.py").exists()
    assert (ws / "run.sh").stat().st_mode & 0o777 == 0o755 and len((ws / "blob.bin").read_bytes()) == 300

    undo = sunwell("undo")
    assert undo.code == 0, undo.stderr
    after_undo = tree(ws)
    assert after_undo.pop("made") == "dir"  # a folder the turn made stays, empty, as for writes
    assert after_undo == before


@needs_overlay
def test_undo_refuses_what_changed_since_the_command(sunwell, fake, ws):
    script(fake)
    assert ask(sunwell, "y").code == 0
    (ws / "made" / "new.txt").write_text("edited by hand\n")
    refused = sunwell("undo")
    assert refused.code == 1 and "made/new.txt" in refused.stderr and "--force" in refused.stderr
    assert (ws / "a.txt").read_text().endswith("third line\n")  # a refused undo changes nothing


@needs_overlay
def test_a_command_and_a_write_in_one_turn_are_undone_together(sunwell, fake, ws):
    before = tree(ws)
    fake.script(Reply(tool_calls=[Call("write_file", json.dumps({"path": "notes.md", "content": "# notes\n"}))]),
                Reply(tool_calls=[Call("run_command", json.dumps({"command": "cat notes.md >> a.txt && rm run.sh"}))]),
                Reply(text="done"))
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--approve", "auto", "--json")
    assert run.code == 0, run.stderr
    assert (ws / "a.txt").read_text().endswith("# notes\n") and not (ws / "run.sh").exists()
    assert sunwell("undo").code == 0
    assert tree(ws) == before


@needs_overlay
def test_blocked_and_protected_paths_are_reported_and_never_applied(sunwell, fake, ws):
    plant = ("echo '[core] fsmonitor = touch PWNED' > .git/config; mkdir -p .sunwell .vscode sub/.git && "
             "echo 'sandbox: off' > .sunwell/config.yaml && echo '{}' > .vscode/tasks.json && "
             "echo x > sub/.git/config && echo TOKEN=1 > .env.local && ln -s /etc/passwd link && echo ok > ok.txt")
    script(fake, plant)
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--approve", "auto", "--json")
    assert run.code == 0, run.stderr
    output = next(e for e in run.events if e["type"] == "toolResult")["output"]
    for planted in (".sunwell/", ".vscode/", "sub/.git/", ".env.local", "link"):
        assert planted in output.split("not applied")[1], planted
        assert not os.path.lexists(ws / planted.rstrip("/"))
    assert (ws / ".git" / "config").read_text() == "[core]\n"  # blocked: the sandbox never let it be written
    assert (ws / "ok.txt").read_text() == "ok\n"


async def allowed(args: dict, ctx: ToolContext, while_asked: Callable[[], None] | None = None) -> tuple[str, dict]:
    """A staged command the user allows, as the orchestrator runs it: staged, its effects shown (while the card is
    open, `while_asked` runs), then applied; (the result, the effects preview)."""
    staged = await RUN_COMMAND.stage(RUN_COMMAND.bind(args), ctx)
    try:
        shown = await staged.preview()
        if while_asked is not None:
            while_asked()
        return await staged.apply(), shown
    finally:
        await staged.discard()


def context(ws: Path, data: Path, **extra) -> ToolContext:
    checkpoints = Checkpoints(data / "checkpoints")
    return ToolContext(jail=Jail(ws), undo=UndoHooks(before_changes=lambda files: checkpoints.save_changes("s", "t", files)), limits=Limits(max_output_bytes=20_000, commands=CommandSettings(staging_dir=data / "staging", **extra)))


@needs_overlay
def test_a_command_past_the_staging_cap_is_stopped_and_nothing_is_applied(ws, tmp_path):
    ctx = context(ws, tmp_path / "data", staging_max_bytes=50_000_000)
    before = tree(ws)
    with pytest.raises(ToolFailure) as info:  # 1 GB: stopped while it writes, not after
        asyncio.run(call_tool(RUN_COMMAND, {"command": "echo x > small.txt; head -c 1G /dev/zero > big.bin",
                                            "timeout": 120}, ctx))
    assert info.value.error.code == "execution" and "staging.max_bytes" in info.value.error.suggestion
    assert "nothing was applied" in info.value.error.message
    assert tree(ws) == before
    assert not list((tmp_path / "data" / "staging").iterdir())  # the staged copy is gone too

    many = context(ws, tmp_path / "data", staging_max_files=100)
    with pytest.raises(ToolFailure) as info:
        asyncio.run(call_tool(RUN_COMMAND, {"command": "mkdir out && touch out/f{1..500}"}, many))
    assert info.value.error.code == "execution" and "files" in info.value.error.message
    assert tree(ws) == before


@needs_overlay
def test_a_cancelled_command_applies_nothing(ws, tmp_path):
    before = tree(ws)
    ctx = context(ws, tmp_path / "data")

    async def main() -> None:
        command = {"command": "echo changed > a.txt; touch made.txt; sleep 30"}
        task = asyncio.ensure_future(call_tool(RUN_COMMAND, command, ctx))
        staging = tmp_path / "data" / "staging"
        for _ in range(200):  # until the command has written into its stage
            await asyncio.sleep(0.05)
            if any(staging.glob("*/upper/made.txt")):
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert tree(ws) == before
    assert not list((tmp_path / "data" / "staging").iterdir())


@needs_overlay
def test_a_large_build_output_is_summarised_not_listed(ws, tmp_path):
    ctx = context(ws, tmp_path / "data")
    output, preview = asyncio.run(allowed({"command": "mkdir -p build/gen && for i in $(seq 300); do echo $i > "
                                                      "build/gen/f$i.js; done; echo y >> a.txt"}, ctx))
    assert [c["path"] for c in preview["changes"]] == ["a.txt", "build/gen/"]
    assert "build/gen/: 300 added" in preview["output"]
    assert len(list((ws / "build" / "gen").iterdir())) == 300 and "applied 301 file change(s)" in output


@needs_overlay
def test_a_file_changed_while_the_command_ran_is_left_alone(ws, tmp_path):
    def edit() -> None:
        (ws / "a.txt").write_text("the user's edit\n")  # while the card was open

    output, _ = asyncio.run(allowed({"command": "echo mine > a.txt; echo x > b.txt"}, context(ws, tmp_path / "data"),
                                    while_asked=edit))
    assert "changed by someone else while the command ran: a.txt" in output
    assert (ws / "a.txt").read_text() == "the user's edit\n" and (ws / "b.txt").read_text() == "x\n"


def test_where_no_overlay_can_be_mounted_commands_are_asked_before_and_undo_still_works(sunwell, fake, tmp_path):
    ws = tmp_path / "ws,plain"  # an overlay's mount options cannot carry a comma: no staging here
    (ws / "src").mkdir(parents=True)
    (ws / "a.txt").write_text("one\n")
    (ws / "src" / "app.py").write_text("print(1)\n")
    before = tree(ws)
    assert asyncio.run(staging_problem(ToolContext(jail=Jail(ws)))) is not None
    script(fake, "echo two >> a.txt && rm src/app.py && echo new > n.txt")
    run = sunwell("run", "go", "--model", OPENAI, "--trust", "shell", "--approve", "ask", "--json", input="y\n",
                  cwd=ws)
    assert run.code == 0, run.stderr
    notice = next(e for e in run.events if e["type"] == "notice" and e["code"] == "effects_unavailable")
    assert "cannot be previewed" in notice["message"]
    assert "$ echo two" in run.stderr and "staging copy" not in run.stderr  # the command itself, before it ran
    assert (ws / "a.txt").read_text() == "one\ntwo\n" and (ws / "n.txt").exists()
    undo = sunwell("undo", cwd=ws)
    assert undo.code == 0, undo.stderr
    assert tree(ws) == before


def test_staging_limits_come_from_the_user_config_and_a_workspace_may_only_lower_them(tmp_path):
    from sunwell.config import load_settings

    user = tmp_path / "config" / "sunwell" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("staging: {max_bytes: 1000000, max_files: 50}\n")
    ws = tmp_path / "ws"
    (ws / ".sunwell").mkdir(parents=True)
    (ws / ".sunwell" / "config.yaml").write_text("staging: {max_bytes: 9000000000, max_files: 10}\n")
    settings = load_settings(ws, env={"XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert (settings.staging.max_bytes, settings.staging.max_files) == (1_000_000, 10)
    assert settings.ignored_workspace_keys == ["staging.max_bytes"]


@needs_overlay
def test_the_terminal_card_escapes_what_the_command_wrote(sunwell, fake, ws):
    script(fake, "printf 'ok\\033[2J\\033[1;1Hall clear\\n' > \"$(printf 'x\\033[31m.txt')\"")
    run = ask(sunwell, "n")
    assert run.code == 0, run.stderr
    assert "x\\x1b[31m.txt" in run.stderr and "ok\\x1b[2J" in run.stderr and "\x1b[2J" not in run.stderr


@needs_overlay
def test_dependencies_are_copied_in_whole_and_caches_dropped(ws, tmp_path):
    command = ("mkdir -p node_modules/pkg/lib node_modules/tmp __pycache__ && echo x > node_modules/pkg/lib/i.js && "
               "echo t > node_modules/tmp/t && rm -r node_modules/tmp && ln -s lib/i.js node_modules/pkg/main.js && "
               "echo c > __pycache__/m.pyc")
    output, shown = asyncio.run(allowed({"command": command}, context(ws, tmp_path / "data")))
    assert "node_modules/ copied in (1 files; 1 entries not applied" in output
    assert (ws / "node_modules" / "pkg" / "lib" / "i.js").read_text() == "x\n"
    assert not os.path.lexists(ws / "node_modules" / "pkg" / "main.js")  # a command's links are never applied
    assert not (ws / "__pycache__").exists() and shown["changes"] == []
