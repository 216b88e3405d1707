"""A command's file changes staged in a copy of the workspace, where no overlay can be mounted (macOS).

The workspace is cloned into a staging folder (`cp -c`: APFS clones, which cost no space until written; elsewhere
`cp --reflink=auto`, a plain copy where the filesystem has no clones), the jail's blocked entries are removed from
the clone, and what is left is listed (size, mtime, mode, type). The command then runs in the clone, in a sandbox
that lets it write there only (tools/sandbox/seatbelt.py). Afterwards the clone is listed again: what is new, gone
or different is compared with the workspace as it is now and becomes the same Changes an overlay gives
(tools/sandbox/overlay.py), judged and applied by tools/sandbox/effects.py. A file the user changed in the
workspace meanwhile is not a change of the command's: only what differs from the clone's first listing counts.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sunwell.tools.policy.guarded import GuardedEntry
from sunwell.tools.sandbox.overlay import Change, deleted_changes, file_change, special_kind, walk_stats

Listing = dict[str, tuple[int, int, int, int]]  # rel -> (st_mode, size, mtime_ns, inode)


@dataclass
class CopyStage:
    """One command's clone of the workspace (`upper`, named like an overlay's upper layer: it holds the new
    content) and the listing taken before the command ran."""

    root: Path
    before: Listing = field(default_factory=dict)

    @property
    def upper(self) -> Path:
        return self.root / "copy"

    @property
    def tmp(self) -> Path:
        """The command's TMPDIR, thrown away with the clone."""
        return self.root / "tmp"

    @classmethod
    def create(cls, parent: Path, workspace: Path, entries: Sequence[GuardedEntry]) -> CopyStage:
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # real paths: Seatbelt matches them (/private/var/folders, not /var/folders)
        stage = cls(Path(os.path.realpath(tempfile.mkdtemp(prefix="stage-", dir=parent))))
        try:
            stage.tmp.mkdir()
            clone_tree(workspace, stage.upper)
            for entry in entries:  # secrets never stay in the clone; protected config stays, read-only to it
                if not entry.protected:
                    _remove(stage.upper / entry.rel)
            stage.before = _listing(stage.upper)
        except BaseException:
            stage.discard()
            raise
        return stage

    def inside(self, path: Path, workspace: Path) -> Path:
        """Where a workspace path is in the clone."""
        return self.upper / path.relative_to(workspace)

    def changes(self, workspace: Path) -> list[Change]:
        """What the command changed, sorted by path, against the workspace as it is now."""
        now = _listing(self.upper)
        out: list[Change] = []
        gone = sorted(rel for rel in self.before.keys() - now.keys())
        for rel in gone:  # the outermost only: deleted_changes lists what was under it from the workspace
            if not any(rel.startswith(g + "/") for g in gone):
                out.extend(deleted_changes(workspace / rel, rel, _lstat(workspace / rel)))
        for rel, stamp in sorted(now.items()):
            staged, old = self.upper / rel, self.before.get(rel)
            if old is not None and stat.S_IFMT(old[0]) != stat.S_IFMT(stamp[0]):  # a file became a folder...
                out.extend(deleted_changes(workspace / rel, rel, _lstat(workspace / rel)))
                old = None
            if stat.S_ISDIR(stamp[0]):
                if old is None:
                    out.append(Change(rel, "added", staged, is_dir=True))
                continue
            if old == stamp:
                continue
            below = workspace / rel
            before = _lstat(below)
            special = special_kind(stamp[0])
            if special:
                kind: str | None = "added" if before is None else "modified"
            else:
                kind = file_change(staged, os.lstat(staged), below, before)
            if kind is not None:
                out.append(Change(rel, kind, staged, is_link=stat.S_ISLNK(stamp[0]), special=special))
        return sorted(out, key=lambda c: c.rel)

    def usage(self) -> tuple[int, int]:
        """(bytes, entries) the command has written or made so far: what differs from the first listing."""
        size = count = 0
        for rel, st in walk_stats(self.upper):
            if self.before.get(rel) != _stamp(st):
                count += 1
                size += st.st_size if stat.S_ISREG(st.st_mode) else 0
        return size, count

    def discard(self) -> None:
        """Remove the clone (a command may have left folders without write permission: give it back first)."""

        def retry(function, path, _exc) -> None:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
            function(path)

        if not self.root.exists():
            return
        if sys.version_info >= (3, 12):
            shutil.rmtree(self.root, onexc=retry)
        else:
            shutil.rmtree(self.root, onerror=retry)


def clone_tree(source: Path, target: Path) -> None:
    """Copy `source` to `target` (new), links as links, modes and times kept: clones where the filesystem makes
    them (APFS, Btrfs, XFS), else a plain copy."""
    flags = ["-c", "-R", "-p"] if sys.platform == "darwin" else ["-a", "--reflink=auto"]
    cp = shutil.which("cp")
    if cp is not None and sys.platform != "win32":
        done = subprocess.run([cp, *flags, f"{source}/.", str(target)], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        shutil.rmtree(target, ignore_errors=True)  # e.g. cp -c on a volume without clones: copy below
    shutil.copytree(source, target, symlinks=True)


def _listing(root: Path) -> Listing:
    return {rel: _stamp(st) for rel, st in walk_stats(root)}


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    if stat.S_ISDIR(st.st_mode):
        return st.st_mode, 0, 0, 0  # a folder's size and time change with its entries, which are listed themselves
    return st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
