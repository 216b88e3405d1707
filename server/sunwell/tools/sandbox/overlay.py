"""A command's file changes staged in an overlay, so they can be shown before they reach the workspace.

bubblewrap 0.8 has no `--overlay`, so the command line is wrapped: `unshare -Urm` gives a user and mount namespace
of its own, in which the workspace path gets an overlayfs mounted over it (the real workspace the read-only lower
layer, a staging folder the upper layer), and bwrap then starts from there as usual (tools/sandbox/bwrap.py). The
namespace, and the overlay with it, goes away with the command; what it wrote stays in the upper folder:

- a new or changed file as a plain file (the whole file: overlayfs copies a file up before its first change),
- a deleted file or folder as a character device 0,0 (a whiteout),
- a folder whose old contents are gone (deleted, then made again) marked `user.overlay.opaque` (the `userxattr`
  option: an unprivileged overlay keeps its marks in the `user.` namespace).

`read_changes` turns that into Changes against the workspace as it is now. The workspace itself is never written
by the command; Sunwell applies the changes later, through the jail's writer (tools/sandbox/effects.py).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sunwell.tools.sandbox.bwrap import bwrap_argv, run_probe
from sunwell.tools.workspace.jail import Jail

OPAQUE_XATTR = "user.overlay.opaque"
MOUNT_SCRIPT = 'mount -t overlay overlay -o "userxattr,lowerdir=$1,upperdir=$2,workdir=$3" "$1" && shift 3 && exec "$@"'
UNSAFE_IN_OPTIONS = (",", ":", "\\", '"', "\n")
"""Characters the overlay's mount options cannot carry in a path; a workspace named so runs without staging."""


@dataclass(frozen=True)
class Stage:
    """One command's staging folder: `upper` gets what it writes, `work` is overlayfs' scratch space."""

    root: Path

    @property
    def upper(self) -> Path:
        return self.root / "upper"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @classmethod
    def create(cls, parent: Path) -> Stage:
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        stage = cls(Path(tempfile.mkdtemp(prefix="stage-", dir=parent)))
        stage.upper.mkdir()
        stage.work.mkdir()
        return stage

    def wrap(self, argv: list[str], workspace: Path) -> list[str]:
        """The command line that runs `argv` with this stage mounted over `workspace`."""
        return ["unshare", "-Urm", "sh", "-c", MOUNT_SCRIPT, "sh", str(workspace), str(self.upper), str(self.work),
                *argv]

    def inside(self, path: Path, workspace: Path) -> Path:
        """Where a workspace path is for the command: the same path (the overlay is mounted over the workspace)."""
        return path

    def changes(self, workspace: Path) -> list[Change]:
        return read_changes(self, workspace)

    def discard(self) -> None:
        """Remove the staging folder (overlayfs leaves its work folder unreadable: make it readable first)."""
        for path in (self.work / "work", self.work):
            if path.exists():
                os.chmod(path, 0o700)
        shutil.rmtree(self.root, ignore_errors=True)

    def usage(self) -> tuple[int, int]:
        """(bytes, entries) the command has written so far."""
        size = count = 0
        for _, st in walk_stats(self.upper):
            count += 1
            if stat.S_ISREG(st.st_mode):
                size += st.st_size
        return size, count


_probes: dict[str, str | None] = {}


async def probe_overlay(staging_parent: Path, workspace: Path, bwrap: str,
                        userns_flags: Sequence[str]) -> str | None:
    """Why commands in `workspace` cannot be staged (no unshare, no unprivileged overlayfs, a workspace filesystem
    overlayfs cannot use as its lower layer, bwrap refusing inside the namespace), or None when they can. Tried
    once per staging folder, workspace and bwrap with a real sandboxed command; cached."""
    key = f"{staging_parent}\0{workspace}\0{bwrap}"
    if key not in _probes:
        _probes[key] = await _probe(Path(staging_parent), workspace, bwrap, userns_flags)
    return _probes[key]


async def _probe(staging_parent: Path, workspace: Path, bwrap: str, userns_flags: Sequence[str]) -> str | None:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "the unshare and mount commands (util-linux) are missing"
    try:
        stage = Stage.create(staging_parent)
    except OSError as exc:
        return f"cannot create the staging folder {staging_parent}: {exc.strerror or exc}"
    try:
        with tempfile.TemporaryDirectory(prefix="sunwell-overlay-probe-") as tmp:
            jail = Jail(Path(os.path.realpath(tmp)))  # an empty sandbox: the probe needs only the mount
            sandbox = bwrap_argv(jail.root, jail.root, jail, network=False, bwrap=bwrap, userns_flags=userns_flags)
            problem = await run_probe(stage.wrap([*sandbox, "true"], workspace), cwd=workspace)
        return None if problem is None else f"overlayfs cannot be mounted here ({problem})"
    finally:
        stage.discard()


# ---- reading the upper layer ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One entry the command changed: `kind` is added, modified, deleted or mode (same bytes, other permissions);
    `staged` the path of the new content in the upper layer (None when deleted), `is_dir` for a folder that was
    created (empty, or holding only other changes) or deleted (then its files are listed on their own too);
    `special` says what a staged entry is when it is neither a file, a folder nor a link (never read)."""

    rel: str
    kind: str
    staged: Path | None
    is_dir: bool = False
    is_link: bool = False
    special: str | None = None


def read_changes(stage: Stage, workspace: Path) -> list[Change]:
    """What the command changed, sorted by path: the upper layer compared with the workspace as it is now."""
    changes: list[Change] = []
    _read_dir(stage.upper, workspace, "", changes)
    return sorted(changes, key=lambda c: c.rel)


def _read_dir(upper: Path, lower: Path, prefix: str, out: list[Change]) -> None:
    opaque = prefix != "" and _is_opaque(upper)
    seen: set[str] = set()
    with os.scandir(upper) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        seen.add(entry.name)
        rel, below = prefix + entry.name, lower / entry.name
        st = entry.stat(follow_symlinks=False)
        before = _lstat(below)
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # a whiteout
            out.extend(deleted_changes(below, rel, before))
        elif stat.S_ISDIR(st.st_mode):
            if before is not None and not stat.S_ISDIR(before.st_mode):
                out.extend(deleted_changes(below, rel, before))
            if before is None or not stat.S_ISDIR(before.st_mode):
                out.append(Change(rel, "added", Path(entry.path), is_dir=True))
            _read_dir(Path(entry.path), below, rel + "/", out)
        else:
            if before is not None and stat.S_ISDIR(before.st_mode):
                out.extend(deleted_changes(below, rel, before))
                before = None
            special = special_kind(st.st_mode)
            kind = ("added" if before is None else "modified") if special else file_change(Path(entry.path), st,
                                                                                          below, before)
            if kind is not None:
                out.append(Change(rel, kind, Path(entry.path), is_link=stat.S_ISLNK(st.st_mode), special=special))
    if opaque and lower.is_dir() and not lower.is_symlink():
        for name in sorted(os.listdir(lower)):
            if name not in seen:
                out.extend(deleted_changes(lower / name, prefix + name, _lstat(lower / name)))


def file_change(staged: Path, st: os.stat_result, below: Path, before: os.stat_result | None) -> str | None:
    if before is None:
        return "added"
    if stat.S_ISLNK(st.st_mode) or stat.S_ISLNK(before.st_mode):
        same = stat.S_ISLNK(st.st_mode) and stat.S_ISLNK(before.st_mode) and os.readlink(staged) == os.readlink(below)
        return None if same else "modified"
    if not stat.S_ISREG(st.st_mode) or not stat.S_ISREG(before.st_mode):
        return "modified"
    if st.st_size != before.st_size or not _same_bytes(staged, below):
        return "modified"
    return "mode" if stat.S_IMODE(st.st_mode) != stat.S_IMODE(before.st_mode) else None  # touched only: no change


def deleted_changes(path: Path, rel: str, st: os.stat_result | None) -> Iterator[Change]:
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        for sub_rel, sub_st in sorted(walk_stats(path, rel + "/")):
            if not stat.S_ISDIR(sub_st.st_mode):
                yield Change(sub_rel, "deleted", None, is_link=stat.S_ISLNK(sub_st.st_mode))
        yield Change(rel, "deleted", None, is_dir=True)
    else:
        yield Change(rel, "deleted", None, is_link=stat.S_ISLNK(st.st_mode))


def walk_stats(root: Path, prefix: str = "",
               skip: Callable[[str], bool] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """(rel, lstat) of everything under `root`, links not followed; `skip(rel)` leaves an entry (and what is in it)
    out."""
    stack = [(root, prefix)]
    while stack:
        directory, pre = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            rel = pre + entry.name
            if skip is not None and skip(rel):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield rel, st
            if stat.S_ISDIR(st.st_mode):
                stack.append((Path(entry.path), rel + "/"))


def special_kind(mode: int) -> str | None:
    """What an entry is when it is not a regular file, a folder or a link: a FIFO (opening it blocks), a socket, a
    device; None otherwise."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a unix socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return None


def _is_opaque(path: Path) -> bool:
    try:
        return os.getxattr(path, OPAQUE_XATTR, follow_symlinks=False) == b"y"
    except OSError:
        return False


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _same_bytes(a: Path, b: Path) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            chunk = fa.read(1 << 20)
            if chunk != fb.read(1 << 20):
                return False
            if not chunk:
                return True
