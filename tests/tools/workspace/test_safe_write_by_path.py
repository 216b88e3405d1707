"""The writer where os.open takes no dir_fd (Windows): each parent checked by path, the temp file renamed over the
target. Played here with the descriptor walk turned off; the rules are the same as with it (tests/tools/workspace/test_edits.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sunwell.tools.base import ToolFailure
from sunwell.tools.workspace import safe_write
from sunwell.tools.workspace.jail import Jail
from sunwell.tools.workspace.safe_write import (
    inspect,
    prepare_write,
    read_existing,
    remove_target,
    write_target,
)


@pytest.fixture(autouse=True)
def by_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_write, "_BY_FD", False)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "x.txt").write_text("old\n")
    (ws / "sub" / "x.txt").chmod(0o755)
    return ws


def test_creates_folders_and_files_and_keeps_a_files_mode(ws: Path):
    jail = Jail(ws)
    assert write_target(prepare_write(jail, "new/deep/a.txt"), b"fresh") is True
    assert (ws / "new" / "deep" / "a.txt").read_bytes() == b"fresh"
    assert write_target(prepare_write(jail, "sub/x.txt"), b"new\n") is False
    assert (ws / "sub" / "x.txt").read_bytes() == b"new\n" and (ws / "sub" / "x.txt").stat().st_mode & 0o777 == 0o755
    assert [p.name for p in (ws / "sub").iterdir()] == ["x.txt"]  # no temp file left


def test_reads_inspects_and_removes(ws: Path):
    target = prepare_write(Jail(ws), "sub/x.txt")
    assert read_existing(target) == b"old\n" and inspect(target).st_size == 4
    with pytest.raises(ToolFailure, match="too large"):
        read_existing(target, limit=2)
    assert remove_target(target) is True and not (ws / "sub" / "x.txt").exists()
    assert remove_target(target) is False and read_existing(target) is None and inspect(target) is None
    assert read_existing(prepare_write(Jail(ws), "missing/x.txt")) is None


def test_a_parent_swapped_for_a_link_after_the_check_stops_the_write(ws: Path):
    target = prepare_write(Jail(ws), "sub/x.txt")  # the jail's check passes: sub is a real folder
    os.rename(ws / "sub", ws / "sub.old")
    (ws / "sub").symlink_to(ws.parent / "outside")
    with pytest.raises(ToolFailure, match="became a symbolic link"):
        write_target(target, b"pwned")
    assert (ws.parent / "outside" / "secret.txt").read_text() == "outside\n"
    assert not (ws.parent / "outside" / "x.txt").exists()


def test_links_and_hard_links_are_never_written_through(ws: Path):
    os.link(ws.parent / "outside" / "secret.txt", ws / "hard.txt")
    with pytest.raises(ToolFailure, match="hard links"):
        write_target(prepare_write(Jail(ws), "hard.txt"), b"pwned")
    target = prepare_write(Jail(ws), "sub/y.txt")
    (ws / "sub" / "y.txt").symlink_to(ws.parent / "outside" / "secret.txt")  # planted after the check
    with pytest.raises(ToolFailure, match="symbolic link"):
        write_target(target, b"pwned")
    assert (ws.parent / "outside" / "secret.txt").read_text() == "outside\n"
