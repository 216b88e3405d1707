"""Undo for a command that could not be staged (no overlayfs here, or `sandbox: off`): a snapshot before it runs.

Before the command, every workspace file outside the guarded entries is listed with its size, mtime, inode and
mode, and copied aside while the copies stay within a budget (copies, not hard links: a command that rewrites a
file in place would change a linked copy too). After it, the tree is listed again; what was added, changed or
deleted is checkpointed from the copies, so `undo` puts it back like a write. A changed file too large to have been
copied is named as one undo cannot restore.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sunwell.tools.policy.guarded import CREATABLE_NAMES, UNMASKED_NAMES
from sunwell.tools.sandbox.effects import Record, file_sha
from sunwell.tools.sandbox.overlay import walk_stats
from sunwell.tools.workspace.jail import Jail

BUDGET = 64_000_000
"""Bytes copied aside before one command, at most (the staging cap, if smaller)."""
LARGEST = 8_000_000
"""A larger file is listed but not copied."""

Stamp = tuple[int, int, int, int]  # size, mtime_ns, inode, mode


@dataclass
class Snapshot:
    jail: Jail
    folder: Path
    stamps: dict[str, Stamp] = field(default_factory=dict)
    copied: set[str] = field(default_factory=set)

    @classmethod
    def take(cls, jail: Jail, parent: Path | None, budget: int = BUDGET) -> Snapshot:
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        snap = cls(jail, Path(tempfile.mkdtemp(prefix="snapshot-", dir=parent)))
        for rel, st in _files(jail):
            snap.stamps[rel] = _stamp(st)
            if st.st_size <= min(LARGEST, budget) and stat.S_ISREG(st.st_mode):
                target = snap.folder / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    shutil.copyfile(jail.root / rel, target, follow_symlinks=False)
                except OSError:
                    continue
                budget -= st.st_size
                snap.copied.add(rel)
        return snap

    def record(self, record: Record) -> list[str]:
        """Checkpoint what the command changed; returns the changed files undo cannot restore (not copied)."""
        now = dict(_files(self.jail))
        changed = sorted(rel for rel in self.stamps.keys() | now.keys()
                         if self.stamps.get(rel) != (_stamp(now[rel]) if rel in now else None))  # fmt: skip
        lost = [rel for rel in changed if rel in self.stamps and rel not in self.copied]
        items = []
        for rel in changed:
            if rel in lost:
                continue
            prior = self.folder / rel if rel in self.stamps else self.folder / ".absent" / rel
            items.append((prior, rel, file_sha(self.jail.root / rel) if rel in now else None))
        if items:
            record(items)
        return lost

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _files(jail: Jail) -> list[tuple[str, os.stat_result]]:
    """Every file of the workspace a command's change could be undone for (not blocked or protected)."""

    def skip(rel: str) -> bool:
        name = rel.rpartition("/")[2].lower()
        return name in UNMASKED_NAMES | CREATABLE_NAMES or jail.is_blocked(rel) or jail.is_protected(rel)

    return [(rel, st) for rel, st in walk_stats(jail.root, skip=skip) if stat.S_ISREG(st.st_mode)]


def _stamp(st: os.stat_result) -> Stamp:
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode
