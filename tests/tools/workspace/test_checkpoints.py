"""Checkpoints and undo, driven through the real write_file/edit_file handlers on a temp dir (the engine's part, the
two ToolContext hooks, is wired here the way the engine wires it)."""

from __future__ import annotations

import json
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import call_tool
from sunwell.tools.base import ToolContext, ToolFailure, UndoHooks
from sunwell.tools.handlers.edits import EDIT_FILE, WRITE_FILE
from sunwell.tools.workspace.checkpoints import Checkpoints, UndoConflict, UndoError
from sunwell.tools.workspace.jail import Jail

BINARY = bytes(range(256)) * 4 + b"\r\n\x00tail"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "src" / "app.py").write_text("def main():\n    return 42\n")
    (root / "blob.bin").write_bytes(BINARY)
    os.chmod(root / "blob.bin", 0o751)
    return root


@pytest.fixture
def cps(tmp_path: Path) -> Checkpoints:
    return Checkpoints(tmp_path / "data" / "checkpoints")


def turn_ctx(ws: Path, cps: Checkpoints, session: str, turn: str) -> ToolContext:
    return ToolContext(jail=Jail(ws), undo=UndoHooks(before_write=lambda path, rel: cps.save(session, turn, path, rel), after_write=lambda path, rel, data: cps.record_after(session, turn, rel, data)))  # fmt: skip


def state(root: Path) -> dict[str, tuple[bytes, int] | None]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) if p.is_file() else None
        for p in sorted(root.rglob("*"))
    }


async def first_turn(ws: Path, cps: Checkpoints) -> None:
    ctx = turn_ctx(ws, cps, "s1", "t1")
    await call_tool(WRITE_FILE, {"path": "blob.bin", "content": "now text\n"}, ctx)
    await call_tool(EDIT_FILE, {"path": "src/app.py", "old_text": "42", "new_text": "43"}, ctx)
    await call_tool(EDIT_FILE, {"path": "src/app.py", "old_text": "43", "new_text": "44"}, ctx)  # saved once per turn
    await call_tool(WRITE_FILE, {"path": "new/dir/created.txt", "content": "fresh\n"}, ctx)


async def test_undo_restores_bytes_and_mode_and_deletes_created_files(ws: Path, cps: Checkpoints) -> None:
    before = state(ws)
    await first_turn(ws, cps)
    os.chmod(ws / "blob.bin", 0o600)  # the mode is put back too (the after-hash only covers the content)
    assert cps.turns("s1") == ["t1"] and cps.pending("s1") == ["t1"]
    result = cps.undo("s1", ws, Jail(ws))
    assert result.turn == "t1" and result.conflicts == []
    assert result.restored == ["blob.bin", "src/app.py"] and result.deleted == ["new/dir/created.txt"]
    after = state(ws)
    assert after.pop("new") is None and after.pop("new/dir") is None  # created folders stay, empty
    assert after == before
    assert (ws / "blob.bin").read_bytes() == BINARY and stat.S_IMODE((ws / "blob.bin").stat().st_mode) == 0o751
    assert cps.pending("s1") == [] and cps.undo("s1", ws, Jail(ws)).turn is None  # nothing left


async def test_undo_refuses_a_file_changed_since_and_changes_nothing(ws: Path, cps: Checkpoints) -> None:
    await first_turn(ws, cps)
    (ws / "src" / "app.py").write_text("someone else's work\n")
    (ws / "new" / "dir" / "created.txt").write_text("edited by the user\n")
    changed = state(ws)
    with pytest.raises(UndoConflict) as info:
        cps.undo("s1", ws, Jail(ws))
    assert info.value.files == ["src/app.py", "new/dir/created.txt"]
    assert "src/app.py" in str(info.value) and "force" in str(info.value)
    assert state(ws) == changed and cps.pending("s1") == ["t1"]
    result = cps.undo("s1", ws, Jail(ws), force=True)
    assert result.conflicts == ["src/app.py", "new/dir/created.txt"]
    assert (ws / "src" / "app.py").read_text() == "def main():\n    return 42\n"
    assert not (ws / "new" / "dir" / "created.txt").exists()


async def test_two_turns_undone_one_after_the_other(ws: Path, cps: Checkpoints) -> None:
    await call_tool(WRITE_FILE, {"path": "a.txt", "content": "beta\n"}, turn_ctx(ws, cps, "s1", "t1"))
    await call_tool(WRITE_FILE, {"path": "b.txt", "content": "b\n"}, turn_ctx(ws, cps, "s1", "t1"))
    await call_tool(EDIT_FILE, {"path": "a.txt", "old_text": "beta", "new_text": "gamma"},
                    turn_ctx(ws, cps, "s1", "t2"))
    assert cps.turns("s1") == ["t1", "t2"]
    assert cps.undo("s1", ws, Jail(ws)).turn == "t2"
    assert (ws / "a.txt").read_text() == "beta\n" and (ws / "b.txt").exists()
    assert cps.undo("s1", ws, Jail(ws)).turn == "t1"
    assert (ws / "a.txt").read_text() == "alpha\n" and not (ws / "b.txt").exists()
    assert cps.turns("s1") == ["t1", "t2"] and cps.pending("s1") == []
    with pytest.raises(UndoError, match="already undone"):
        cps.undo("s1", ws, Jail(ws), turn="t1")
    with pytest.raises(UndoError, match="no checkpoint"):
        cps.undo("s1", ws, Jail(ws), turn="t9")


async def test_a_file_already_back_is_left_alone(ws: Path, cps: Checkpoints) -> None:
    await call_tool(WRITE_FILE, {"path": "a.txt", "content": "beta\n"}, turn_ctx(ws, cps, "s1", "t1"))
    (ws / "a.txt").write_text("alpha\n")  # the user reverted it by hand
    result = cps.undo("s1", ws, Jail(ws))
    assert result.unchanged == ["a.txt"] and result.restored == [] and result.conflicts == []


async def test_a_failed_write_is_not_a_conflict(ws: Path, cps: Checkpoints) -> None:
    (ws / "a.txt").write_text("x = 1\nx = 1\n")
    ctx = turn_ctx(ws, cps, "s1", "t1")
    cps.save("s1", "t1", Jail(ws).root / "a.txt", "a.txt")  # checkpoint taken, then the write never happens
    with pytest.raises(ToolFailure):
        await call_tool(EDIT_FILE, {"path": "a.txt", "old_text": "x = 1", "new_text": "y"}, ctx)
    assert cps.undo("s1", ws, Jail(ws)).unchanged == ["a.txt"]


def test_concurrent_saves_from_separate_objects_are_all_kept(ws: Path, cps: Checkpoints) -> None:
    names = [f"f{i}.txt" for i in range(24)]
    for name in names:
        (ws / name).write_text(name)
    with ThreadPoolExecutor(8) as pool:  # a fresh Checkpoints each time, as the engine makes one per turn
        list(pool.map(lambda n: Checkpoints(cps.root).save("s1", "t1", ws / n, n), names))
    meta = json.loads((cps.root / "s1" / "meta.json").read_text())
    assert sorted(f["rel"] for f in meta["turns"][0]["files"]) == sorted(names)


def test_undo_of_an_unknown_session_is_empty_and_creates_nothing(ws: Path, cps: Checkpoints) -> None:
    assert cps.undo("nobody", ws, Jail(ws)).turn is None
    assert not cps.root.exists()


# ---- tampering and escapes -------------------------------------------------------------------------------------


def tamper(cps: Checkpoints, session: str, change) -> None:
    meta_file = cps.root / session / "meta.json"
    meta = json.loads(meta_file.read_text())
    change(meta["turns"][-1]["files"][0])
    meta_file.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "change",
    [
        lambda f: f.update(rel="../escaped.txt"),
        lambda f: f.update(rel="src/../../escaped.txt"),
        lambda f: f.update(rel="OUTSIDE/escaped.txt"),
        lambda f: f.update(rel=".env"),
        lambda f: f.update(rel=".git/hooks/pre-commit"),
        lambda f: f.update(sha256="../../../escaped"),
        lambda f: f.update(mode="0777"),
        lambda f: f.update(existed="yes"),
    ],
)
async def test_tampered_metadata_never_writes_outside(ws: Path, cps: Checkpoints, tmp_path: Path, change) -> None:
    await call_tool(WRITE_FILE, {"path": "a.txt", "content": "beta\n"}, turn_ctx(ws, cps, "s1", "t1"))
    await call_tool(WRITE_FILE, {"path": "b.txt", "content": "b\n"}, turn_ctx(ws, cps, "s1", "t1"))
    tamper(cps, "s1", lambda f: change(f) or f.update(rel=f["rel"].replace("OUTSIDE", str(tmp_path))))
    before = state(tmp_path)
    with pytest.raises(UndoError, match="refusing|invalid"):
        cps.undo("s1", ws, Jail(ws), force=True)
    assert state(tmp_path) == before  # nothing at all changed, in or out of the workspace
    assert not (tmp_path / "escaped.txt").exists()


async def test_a_damaged_copy_is_refused(ws: Path, cps: Checkpoints) -> None:
    await call_tool(WRITE_FILE, {"path": "a.txt", "content": "beta\n"}, turn_ctx(ws, cps, "s1", "t1"))
    meta = json.loads((cps.root / "s1" / "meta.json").read_text())
    (cps.root / "s1" / "blobs" / meta["turns"][0]["files"][0]["sha256"]).write_bytes(b"evil\n")
    with pytest.raises(UndoError, match="damaged"):
        cps.undo("s1", ws, Jail(ws))
    assert (ws / "a.txt").read_text() == "beta\n"


async def test_undo_through_a_parent_swapped_for_a_symlink_is_refused(ws: Path, cps: Checkpoints,
                                                                      tmp_path: Path) -> None:  # fmt: skip
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "dir" / "created.txt").write_text("fresh\n")  # what the attacker hopes undo deletes
    await first_turn(ws, cps)
    (ws / "new").rename(tmp_path / "moved")
    (ws / "new").symlink_to(outside)
    with pytest.raises(UndoError, match="refusing"):
        cps.undo("s1", ws, Jail(ws), force=True)
    assert (outside / "dir" / "created.txt").read_text() == "fresh\n"


def test_save_never_follows_a_symlink(ws: Path, cps: Checkpoints, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("secret\n")
    (ws / "link").symlink_to(tmp_path / "secret")
    with pytest.raises(ToolFailure):
        cps.save("s1", "t1", ws / "link", "link")
    assert not list((cps.root / "s1" / "blobs").glob("*")) if (cps.root / "s1" / "blobs").exists() else True


def test_session_ids_are_checked(ws: Path, cps: Checkpoints) -> None:
    for bad in ("../x", "", "a/b", ".."):
        with pytest.raises(ValueError):
            cps.turns(bad)
