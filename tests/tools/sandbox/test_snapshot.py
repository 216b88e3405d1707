"""The snapshot an unstaged command is undone from (tools/sandbox/snapshot.py): kept under its call's key for a
resumed turn, read back from its manifest, and bounded in time when no turn ever comes back for it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from sunwell.tools.base import CallIdentity, CommandSettings, Limits, ToolContext, UndoHooks
from sunwell.tools.handlers.shell import RunCommandArguments, command_cut_off
from sunwell.tools.sandbox.snapshot import KEPT_FOR, Snapshot
from sunwell.tools.workspace.checkpoints import Checkpoints
from sunwell.tools.workspace.jail import Jail


def test_a_snapshot_folder_older_than_a_day_goes_when_another_is_taken(workspace: Path, tmp_path: Path) -> None:
    parent = tmp_path / "staging"
    dead = Snapshot.take(Jail(workspace), parent, key="s1/call_1").folder
    running = Snapshot.take(Jail(workspace), parent, key="s2/call_1").folder  # same call id, another session
    other = parent / "stage-kept"  # not a snapshot: never swept
    other.mkdir()
    long_ago = time.time() - KEPT_FOR - 60
    for folder in (dead, other):
        os.utime(folder, (long_ago, long_ago))
    Snapshot.take(Jail(workspace), parent, key="s3/call_1")
    assert not dead.exists() and running.exists() and other.exists() and running != dead


def test_a_take_cut_off_before_its_manifest_is_found_as_none_and_removed(workspace: Path, tmp_path: Path) -> None:
    snap = Snapshot.take(Jail(workspace), tmp_path, key="s/call_1")
    (snap.folder / "manifest.json").unlink()
    assert Snapshot.found(Jail(workspace), tmp_path, "s/call_1") is None and not snap.folder.exists()
    assert Snapshot.found(Jail(workspace), tmp_path, "s/never") is None


def test_a_command_cut_off_is_recorded_for_undo_from_its_kept_snapshot(workspace: Path, tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path / "checkpoints")
    ctx = ToolContext(jail=Jail(workspace), undo=UndoHooks(before_changes=lambda files: checkpoints.save_changes("s", "t", files)), limits=Limits(commands=CommandSettings(staging_dir=tmp_path / "staging")), call=CallIdentity(id="call_1", recovery="s/call_1"))
    Snapshot.take(ctx.jail, tmp_path / "staging", key=ctx.recovery)  # what run_command took; then the crash
    (workspace / "a.txt").write_text("changed by the command\n")
    (workspace / "made.txt").write_text("new\n")
    note = asyncio.run(command_cut_off(RunCommandArguments(command="…"), ctx))
    assert note is not None and "undo puts back the 2 workspace file(s) changed since it started (a.txt, made.txt)" in note
    assert sorted(checkpoints.files("s", "t")) == ["a.txt", "made.txt"]
    assert not list((tmp_path / "staging").iterdir())
    assert asyncio.run(command_cut_off(RunCommandArguments(command="…"), ctx)) is None  # settled once
