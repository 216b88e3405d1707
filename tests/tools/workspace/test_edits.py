"""write_file and edit_file on a real tree in a temp dir: the attacks first, then the features."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pytest

from conftest import call_tool
from sunwell.tools.base import ToolContext, ToolFailure, Trust, UndoHooks
from sunwell.tools.handlers.edits import EDIT_FILE, MAX_CONTENT_BYTES, WRITE_FILE
from sunwell.tools.workspace.jail import Jail
from sunwell.tools.workspace.safe_write import dir_is_inside, prepare_write, remove_orphans, write_target

SECRET = b"outside secret\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_bytes(SECRET)
    return out


@pytest.fixture
def ws(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "sub").mkdir()
    (root / "a.txt").write_text("hello\nworld\n")
    (root / "src" / "app.py").write_text("def main():\n    return 42\n")
    (root / ".env").write_text("TOKEN=canary\n")
    return root


_at_temp_open: list[Callable[[], None]] = []
_audit_hook_installed = False


def _run_at_temp_open(event: str, args: tuple) -> None:
    if event == "open" and _at_temp_open and isinstance(args[0], str) and args[0].startswith(".sunwell-"):
        _at_temp_open.pop(0)()


@pytest.fixture
def when_the_temp_file_opens() -> Iterator[Callable[[Callable[[], None]], None]]:
    """Run an action at the moment the writer creates its temp file: after it opened the target's folder,
    before the check and the rename. CPython's audit event for open() is the seam, so the writer runs
    unchanged and the moment is exact, not raced. (An audit hook cannot be removed: it is installed once
    and idles when unarmed.)"""
    global _audit_hook_installed
    if not _audit_hook_installed:
        sys.addaudithook(_run_at_temp_open)
        _audit_hook_installed = True
    yield _at_temp_open.append
    left = list(_at_temp_open)
    _at_temp_open.clear()
    assert not left, "the writer never created its temp file"


def ctx(root: Path, **hooks) -> ToolContext:
    return ToolContext(jail=Jail(root), undo=UndoHooks(**hooks))


async def fails(tool, args: dict, context: ToolContext) -> ToolFailure:
    with pytest.raises(ToolFailure) as info:
        await call_tool(tool, args, context)
    return info.value


def snapshot(*dirs: Path) -> dict[str, bytes | None]:
    """Every entry under the given folders (a link as its target text), to show that nothing changed."""
    seen: dict[str, bytes | None] = {}
    for top in dirs:
        for path in sorted(top.rglob("*")):
            if path.is_symlink():
                seen[str(path)] = os.readlink(path).encode()
            elif path.is_file():
                seen[str(path)] = path.read_bytes() + oct(path.stat().st_mode).encode()
            else:
                seen[str(path)] = None
    return seen


# ---- write attacks ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["../x.txt", "sub/../../x.txt", "OUTSIDE/x.txt", "OUTSIDE/secret.txt", ".env", ".ENV", ".env.local",
     ".git/hooks/pre-commit", ".sunwell/config.yaml", "src/.git/config", "key.pem"],
)  # fmt: skip
async def test_write_outside_or_blocked_is_refused(ws: Path, outside: Path, path: str) -> None:
    path = path.replace("OUTSIDE", str(outside))
    before = snapshot(ws, outside)
    for handler, args in ((WRITE_FILE, {"path": path, "content": "pwned"}),
                          (EDIT_FILE, {"path": path, "old_text": "TOKEN", "new_text": "pwned"})):  # fmt: skip
        failure = await fails(handler, args, ctx(ws))
        assert failure.error.code == "permission", failure.error
        with pytest.raises(ToolFailure, match="escapes|blocked"):
            handler.preview(handler.bind(args), ctx(ws))
    assert snapshot(ws, outside) == before
    assert not (ws.parent / "x.txt").exists()


async def test_symlink_as_final_component_is_refused(ws: Path, outside: Path) -> None:
    (ws / "to_outside.txt").symlink_to(outside / "secret.txt")
    (ws / "dangling.txt").symlink_to(outside / "new.txt")
    (ws / "alias.txt").symlink_to(ws / "a.txt")  # even a link inside the workspace is not followed
    (ws / "loop").symlink_to(ws / "loop")
    before = snapshot(ws, outside)
    for name in ("to_outside.txt", "dangling.txt", "alias.txt", "loop"):
        failure = await fails(WRITE_FILE, {"path": name, "content": "pwned"}, ctx(ws))
        assert failure.error.code in ("permission", "validation"), (name, failure.error)
    failure = await fails(EDIT_FILE, {"path": "alias.txt", "old_text": "hello", "new_text": "x"}, ctx(ws))
    assert failure.error.code == "permission" and "symbolic link" in failure.error.message
    assert snapshot(ws, outside) == before
    assert not (outside / "new.txt").exists()


async def test_symlinked_parent_leaving_the_workspace_is_refused(ws: Path, outside: Path) -> None:
    (ws / "out").symlink_to(outside)
    before = snapshot(outside)
    for path in ("out/new.txt", "out/secret.txt", "out/deeper/new.txt"):
        failure = await fails(WRITE_FILE, {"path": path, "content": "pwned"}, ctx(ws))
        assert failure.error.code == "permission"
    assert snapshot(outside) == before


async def test_symlinked_parent_inside_the_workspace_writes_the_real_file(ws: Path) -> None:
    (ws / "srclink").symlink_to(ws / "src")
    out = await call_tool(WRITE_FILE, {"path": "srclink/new.py", "content": "x = 1\n"}, ctx(ws))
    assert out == "wrote 6 bytes to src/new.py (created)"
    assert (ws / "src" / "new.py").read_text() == "x = 1\n"


async def test_parent_swapped_for_a_symlink_between_check_and_write(ws: Path, outside: Path) -> None:
    jail = Jail(ws)
    existing = prepare_write(jail, "sub/x.txt")  # phase one passes: sub is a real folder
    missing = prepare_write(jail, "newdir/deep/x.txt")
    (ws / "sub").rename(ws / "sub.old")
    (ws / "sub").symlink_to(outside)  # the attacker's swap
    (ws / "newdir").symlink_to(outside)
    for target in (existing, missing):
        with pytest.raises(ToolFailure) as info:
            write_target(target, b"pwned")
        assert info.value.error.code == "permission" and "symbolic link" in info.value.error.message
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_final_component_swapped_for_a_symlink_between_check_and_write(ws: Path, outside: Path) -> None:
    target = prepare_write(Jail(ws), "a.txt")
    (ws / "a.txt").unlink()
    (ws / "a.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolFailure) as info:
        write_target(target, b"pwned")
    assert info.value.error.code == "permission"
    assert (outside / "secret.txt").read_bytes() == SECRET
    assert (ws / "a.txt").is_symlink()


def test_a_parent_moved_out_after_opening_is_detected(ws: Path, outside: Path) -> None:
    # write_target asks this, through the open directory, just before the rename.
    fd = os.open(ws / "sub", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert dir_is_inside(fd, Jail(ws).root)
        (ws / "sub").rename(outside / "sub")
        assert not dir_is_inside(fd, Jail(ws).root)
    finally:
        os.close(fd)


async def test_a_folder_moved_out_between_opening_it_and_the_rename_stops_the_write(
        ws: Path, outside: Path, when_the_temp_file_opens) -> None:
    def swap() -> None:  # the attacker moves the folder out and leaves a link, so the path looks unchanged
        (ws / "sub").rename(outside / "sub")
        (ws / "sub").symlink_to(outside / "sub")

    when_the_temp_file_opens(swap)
    failure = await fails(WRITE_FILE, {"path": "sub/x.txt", "content": "pwned"}, ctx(ws))
    assert failure.error.code == "permission" and "moved out of the workspace" in failure.error.message
    assert (ws / "sub").is_symlink()  # the swap really happened mid-write
    assert list((outside / "sub").iterdir()) == []  # neither the file nor the temp file landed outside


async def test_a_write_that_fails_after_the_temp_file_leaves_no_temp_file(
        ws: Path, when_the_temp_file_opens) -> None:
    when_the_temp_file_opens(lambda: (ws / "sub" / "x.txt").mkdir())  # the destination becomes a folder
    failure = await fails(WRITE_FILE, {"path": "sub/x.txt", "content": "new"}, ctx(ws))
    assert failure.error.code == "unsupported" and "is a directory" in failure.error.message
    assert os.listdir(ws / "sub") == ["x.txt"] and (ws / "sub" / "x.txt").is_dir()


async def test_hard_link_to_an_outside_file_is_refused(ws: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", ws / "hard.txt")
    for handler, args in ((WRITE_FILE, {"path": "hard.txt", "content": "pwned"}),
                          (EDIT_FILE, {"path": "hard.txt", "old_text": "outside", "new_text": "pwned"})):  # fmt: skip
        failure = await fails(handler, args, ctx(ws))
        assert failure.error.code == "permission" and "hard links" in failure.error.message
    assert (outside / "secret.txt").read_bytes() == SECRET
    assert os.stat(ws / "hard.txt").st_ino == os.stat(outside / "secret.txt").st_ino


@pytest.mark.parametrize("path", ["src", "src/", ".", "sub/.."])
async def test_a_directory_is_unsupported(ws: Path, path: str) -> None:
    failure = await fails(WRITE_FILE, {"path": path, "content": "x"}, ctx(ws))
    assert failure.error.code == "unsupported"
    assert (ws / "src" / "app.py").exists()


async def test_a_file_used_as_a_folder_is_unsupported(ws: Path) -> None:
    failure = await fails(WRITE_FILE, {"path": "a.txt/b.txt", "content": "x"}, ctx(ws))
    assert failure.error.code == "unsupported"


async def test_fifo_is_not_written(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    failure = await fails(WRITE_FILE, {"path": "pipe", "content": "x"}, ctx(ws))
    assert failure.error.code == "unsupported"


# ---- write_file ------------------------------------------------------------------------------------------------


async def test_write_creates_parents_and_replaces(ws: Path) -> None:
    out = await call_tool(WRITE_FILE, {"path": "docs/guide/intro.md", "content": "# Intro\n"}, ctx(ws))
    assert out == "wrote 8 bytes to docs/guide/intro.md (created)"
    assert (ws / "docs" / "guide" / "intro.md").read_text() == "# Intro\n"
    out = await call_tool(WRITE_FILE, {"path": "a.txt", "content": "héllo\n"}, ctx(ws))
    assert out == "wrote 7 bytes to a.txt (replaced)"
    assert (ws / "a.txt").read_bytes() == "héllo\n".encode()
    assert not [p for p in ws.rglob("*.tmp")]  # no temp file left behind


async def test_absolute_path_inside_the_workspace_is_allowed(ws: Path) -> None:
    out = await call_tool(WRITE_FILE, {"path": str(ws / "abs.txt"), "content": ""}, ctx(ws))
    assert out == "wrote 0 bytes to abs.txt (created)"


async def test_write_keeps_the_mode_and_new_files_respect_the_umask(ws: Path) -> None:
    os.chmod(ws / "a.txt", 0o751)
    await call_tool(WRITE_FILE, {"path": "a.txt", "content": "#!/bin/sh\n"}, ctx(ws))
    assert stat.S_IMODE(os.stat(ws / "a.txt").st_mode) == 0o751
    old = os.umask(0o027)
    try:
        await call_tool(WRITE_FILE, {"path": "new.txt", "content": "x"}, ctx(ws))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(ws / "new.txt").st_mode) == 0o640


async def test_write_validation(ws: Path) -> None:
    big = "x" * (MAX_CONTENT_BYTES + 1)
    assert (await fails(WRITE_FILE, {"path": "big.txt", "content": big}, ctx(ws))).error.code == "validation"
    assert (await fails(WRITE_FILE, {"path": "a.txt"}, ctx(ws))).error.code == "validation"
    assert (await fails(WRITE_FILE, {"path": "a.txt", "content": 3}, ctx(ws))).error.code == "validation"
    bad = {"path": "a.txt", "content": "\ud800"}
    assert (await fails(WRITE_FILE, bad, ctx(ws))).error.code == "validation"
    assert not (ws / "big.txt").exists() and (ws / "a.txt").read_text() == "hello\nworld\n"


def test_write_preview(ws: Path) -> None:
    new = WRITE_FILE.preview(WRITE_FILE.bind({"path": "./docs/new.md", "content": "hi"}), ctx(ws))
    assert new == {"kind": "diff", "path": "docs/new.md", "before": None, "after": "hi", "remoteSchema": None}
    old = WRITE_FILE.preview(WRITE_FILE.bind({"path": "a.txt", "content": "bye"}), ctx(ws))
    assert old == {"kind": "diff", "path": "a.txt", "before": "hello\nworld\n", "after": "bye", "remoteSchema": None}
    assert not (ws / "docs").exists()  # a preview changes nothing


async def test_hooks_run_around_the_write(ws: Path) -> None:
    calls = []

    def checkpoint(path: Path, rel: str) -> None:
        calls.append(("checkpoint", path, rel, path.read_text()))  # still the old content

    def after_write(path: Path, rel: str, data: bytes) -> None:
        calls.append(("after", path, rel, data))

    context = ctx(ws, before_write=checkpoint, after_write=after_write)
    await call_tool(WRITE_FILE, {"path": "a.txt", "content": "new"}, context)
    real = Jail(ws).root / "a.txt"
    assert calls == [("checkpoint", real, "a.txt", "hello\nworld\n"), ("after", real, "a.txt", b"new")]
    calls.clear()
    await call_tool(EDIT_FILE, {"path": "a.txt", "old_text": "new", "new_text": "newer"}, context)
    assert calls == [("checkpoint", real, "a.txt", "new"), ("after", real, "a.txt", b"newer")]
    calls.clear()
    await fails(EDIT_FILE, {"path": "a.txt", "old_text": "absent", "new_text": "x"}, context)
    await fails(WRITE_FILE, {"path": ".env", "content": "x"}, context)
    assert calls == []  # invalid calls never reach the hooks


async def test_a_failing_checkpoint_stops_the_write(ws: Path) -> None:
    def checkpoint(path: Path, rel: str) -> None:
        raise OSError("disk full")

    failure = await fails(WRITE_FILE, {"path": "a.txt", "content": "new"}, ctx(ws, before_write=checkpoint))
    assert failure.error.code == "execution" and "nothing was written" in failure.error.message

    def limited(path: Path, rel: str) -> None:
        raise ToolFailure("rate_limit", "too many writes")

    failure = await fails(WRITE_FILE, {"path": "b/new.txt", "content": "new"}, ctx(ws, before_write=limited))
    assert failure.error.code == "rate_limit"
    assert (ws / "a.txt").read_text() == "hello\nworld\n" and not (ws / "b").exists()


async def test_a_failing_after_write_hook_does_not_hide_the_write(ws: Path) -> None:
    def after_write(path: Path, rel: str, data: bytes) -> None:
        raise RuntimeError("accounting broke")

    out = await call_tool(WRITE_FILE, {"path": "a.txt", "content": "new"}, ctx(ws, after_write=after_write))
    assert out == "wrote 3 bytes to a.txt (replaced)" and (ws / "a.txt").read_text() == "new"


# ---- edit_file -------------------------------------------------------------------------------------------------


async def test_edit_replaces_one_match_and_shows_a_diff(ws: Path) -> None:
    os.chmod(ws / "src" / "app.py", 0o700)
    out = await call_tool(EDIT_FILE, {"path": "src/app.py", "old_text": "return 42", "new_text": "return 43"}, ctx(ws))
    assert out.startswith("replaced 1 occurrence in src/app.py\n")
    assert "-    return 42" in out and "+    return 43" in out
    assert (ws / "src" / "app.py").read_text() == "def main():\n    return 43\n"
    assert stat.S_IMODE(os.stat(ws / "src" / "app.py").st_mode) == 0o700


async def test_edit_without_a_match_shows_the_closest_lines(ws: Path) -> None:
    lines = [f"line {i}: value = {i * 7}" for i in range(1, 60)]
    lines[30] = "def compute(total, count):"
    lines[31] = "    return total / count"
    (ws / "m.py").write_text("\n".join(lines) + "\n")
    args = {"path": "m.py", "old_text": "def compute(total, n):\n    return total / n", "new_text": "x"}
    failure = await fails(EDIT_FILE, args, ctx(ws))
    assert failure.error.code == "validation"
    message = failure.error.message
    assert "not found" in message and "lines 31-32" in message
    assert "    31 | def compute(total, count):" in message and "    32 |     return total / count" in message
    assert failure.error.suggestion and "exactly" in failure.error.suggestion
    with pytest.raises(ToolFailure) as info:  # the preview fails the same way, so nobody is asked
        EDIT_FILE.preview(EDIT_FILE.bind(args), ctx(ws))
    assert info.value.error == failure.error


async def test_edit_without_anything_similar_says_so(ws: Path) -> None:
    args = {"path": "src/app.py", "old_text": "class Totally:\n    unrelated = True", "new_text": "x"}
    failure = await fails(EDIT_FILE, args, ctx(ws))
    assert "No similar lines were found" in failure.error.message and "|" not in failure.error.message


async def test_edit_names_a_whitespace_only_difference(ws: Path) -> None:
    args = {"path": "src/app.py", "old_text": "def main():\n  return 42", "new_text": "x"}
    failure = await fails(EDIT_FILE, args, ctx(ws))
    assert "differs only in whitespace" in failure.error.message and "lines 1-2" in failure.error.message


async def test_edit_counts_several_matches_and_replace_all(ws: Path) -> None:
    (ws / "n.txt").write_text("x = 1\ny = 2\nx = 1\n\nx = 1\n")
    args = {"path": "n.txt", "old_text": "x = 1", "new_text": "x = 9"}
    failure = await fails(EDIT_FILE, args, ctx(ws))
    assert failure.error.code == "validation"
    assert "matches 3 places" in failure.error.message and "lines 1, 3, 5" in failure.error.message
    assert "replace_all" in (failure.error.suggestion or "")
    out = await call_tool(EDIT_FILE, {**args, "replace_all": True}, ctx(ws))
    assert out.startswith("replaced 3 occurrences in n.txt")
    assert (ws / "n.txt").read_text() == "x = 9\ny = 2\nx = 9\n\nx = 9\n"


async def test_edit_validation(ws: Path) -> None:
    (ws / "bin.dat").write_bytes(b"\x00\x01abc")
    (ws / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (ws / "empty.txt").write_text("")
    cases = [
        ({"path": "a.txt", "old_text": "", "new_text": "x"}, "validation"),
        ({"path": "a.txt", "old_text": "hello", "new_text": "hello"}, "validation"),
        ({"path": "a.txt", "old_text": "hello", "new_text": "x", "replace_all": "yes"}, "validation"),
        ({"path": "missing.txt", "old_text": "a", "new_text": "b"}, "not_found"),
        ({"path": "bin.dat", "old_text": "abc", "new_text": "x"}, "unsupported"),
        ({"path": "latin.txt", "old_text": "caf", "new_text": "x"}, "unsupported"),
        ({"path": "empty.txt", "old_text": "a", "new_text": "b"}, "validation"),
    ]
    for args, code in cases:
        assert (await fails(EDIT_FILE, args, ctx(ws))).error.code == code, args
    assert not (ws / "missing.txt").exists()


async def test_edit_matches_a_crlf_file_written_with_lf(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await call_tool(EDIT_FILE, {"path": "w.txt", "old_text": "one\ntwo", "new_text": "1\n2"}, ctx(ws))
    assert (ws / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_preview(ws: Path) -> None:
    preview = EDIT_FILE.preview(EDIT_FILE.bind({"path": "a.txt", "old_text": "world", "new_text": "there"}), ctx(ws))
    assert preview == {"kind": "diff", "path": "a.txt", "before": "hello\nworld\n", "after": "hello\nthere\n",
                       "remoteSchema": None}
    assert (ws / "a.txt").read_text() == "hello\nworld\n"


def test_definitions() -> None:
    for tool in (WRITE_FILE, EDIT_FILE):
        assert (tool.min_trust, tool.approval, tool.risk, tool.read_only) == (Trust.workspace, "ask", "write", False)
        assert tool.parameters["additionalProperties"] is False and tool.preview is not None
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
    assert WRITE_FILE.parameters["required"] == ["path", "content"]
    assert EDIT_FILE.parameters["required"] == ["path", "old_text", "new_text"]


@pytest.mark.skipif(os.name == "nt", reason="no orphans are removed on Windows")
def test_remove_orphans_takes_only_the_temp_files_of_dead_writers(ws: Path, outside: Path) -> None:
    import subprocess

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan, mine = ws / "src" / f".sunwell-{dead}-0123456789ab.tmp", ws / f".sunwell-{os.getpid()}-0123456789ab.tmp"
    alive = ws / "src" / f".sunwell-{os.getppid()}-0123456789ab.tmp"
    for path in (orphan, mine, alive, outside / f".sunwell-{dead}-0123456789ab.tmp"):
        path.write_text("half")
    (ws / "sub" / f".sunwell-{dead}-abcdef012345.tmp").symlink_to(outside / "secret.txt")
    (ws / "sub" / f".sunwell-{dead}-tmp.txt").write_text("not ours")
    removed = remove_orphans(ws, ["src", "", "sub", "../outside", "missing", "src"])
    assert removed == [f"src/{orphan.name}"] and not orphan.exists()
    assert mine.exists() and alive.exists() and (outside / f".sunwell-{dead}-0123456789ab.tmp").exists()
    assert len(list((ws / "sub").iterdir())) == 2 and (outside / "secret.txt").read_bytes() == SECRET
