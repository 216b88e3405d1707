"""Undo for a command that could not be staged (no overlayfs here, or `sandbox: off`): a snapshot before it runs.

Before the command, every workspace file outside the guarded entries is listed with its size, mtime, inode and
mode, and copied aside while the copies stay within a budget (copies, not hard links: a command that rewrites a
file in place would change a linked copy too). After it, the tree is listed again; what was added, changed or
deleted is checkpointed from the copies, so `undo` puts it back like a write. A changed file too large to have been
copied is named as one undo cannot restore.

The snapshot outlives its process: taken under a key (the session and the call, ToolContext.recovery), its folder
has a name made from that key and a manifest (the stamps, the copies, the guarded entries there before), written
atomically before the command starts. A resumed turn finds it by the same key (`Snapshot.found`) and records what
the command cut off by the crash did. A folder whose process died and was never resumed is bounded in time: each
`take` removes the snapshot folders older than a day (KEPT_FOR), one listing of the staging folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sunwell.tools.policy.guarded import CREATABLE_NAMES, UNMASKED_NAMES
from sunwell.tools.sandbox.effects import Record, file_sha
from sunwell.tools.sandbox.overlay import walk_stats
from sunwell.tools.workspace.checkpoints import atomic_write
from sunwell.tools.workspace.jail import Jail

BUDGET = 64_000_000
"""Bytes copied aside before one command, at most (the staging cap, if smaller)."""
LARGEST = 8_000_000
"""A larger file is listed but not copied."""
KEPT_FOR = 86_400.0
"""Seconds a snapshot folder may outlive its command (longer than any command may run): older, it belongs to a
process that died and was never resumed, and the next `take` removes it."""
PREFIX = "snapshot-"
MANIFEST = "manifest.json"

Stamp = tuple[int, int, int, int]  # size, mtime_ns, inode, mode


@dataclass
class Snapshot:
    jail: Jail
    folder: Path
    stamps: dict[str, Stamp] = field(default_factory=dict)
    copied: set[str] = field(default_factory=set)
    guarded: set[str] = field(default_factory=set)
    """The guarded entries there before the command (what `quarantine_planted` leaves)."""

    @classmethod
    def take(cls, jail: Jail, parent: Path, budget: int = BUDGET, key: str = "",
             guarded: Iterable[str] = ()) -> Snapshot:
        """Copy the workspace aside, in `parent` (Sunwell's own: its old snapshot folders are removed); under `key`
        (non-empty) in a folder a resumed turn can find after a crash."""
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _sweep(parent)
        if key:
            folder = parent / _name(key)
            shutil.rmtree(folder, ignore_errors=True)  # a take of this very call cut off before its manifest
            folder.mkdir(mode=0o700)
        else:
            folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
        snap = cls(jail, folder, guarded=set(guarded))
        for rel, st in _files(jail):
            snap.stamps[rel] = _stamp(st)
            if st.st_size <= min(LARGEST, budget) and stat.S_ISREG(st.st_mode):
                target = snap.folder / "files" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    shutil.copyfile(jail.root / rel, target, follow_symlinks=False)
                except OSError:
                    continue
                budget -= st.st_size
                snap.copied.add(rel)
        snap._keep()
        return snap

    @classmethod
    def found(cls, jail: Jail, parent: Path, key: str) -> Snapshot | None:
        """The snapshot taken under `key` by a process that died while its command ran, or None: none was taken,
        or its take was cut off before the manifest (the command never started: that folder is removed), or it
        was older than KEPT_FOR and is gone."""
        folder = parent / _name(key)
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
            if manifest["root"] != str(jail.root):
                return None
            stamps = {rel: (s[0], s[1], s[2], s[3]) for rel, s in manifest["stamps"].items()}
            return cls(jail, folder, stamps, set(manifest["copied"]), set(manifest["guarded"]))
        except FileNotFoundError:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError):  # not one this Sunwell wrote
            return None

    def record(self, record: Record) -> tuple[list[str], list[str]]:
        """Checkpoint what the command changed; returns the changed files undo can restore, and those it cannot
        (too large to have been copied)."""
        now = dict(_files(self.jail))
        changed = sorted(rel for rel in self.stamps.keys() | now.keys()
                         if self.stamps.get(rel) != (_stamp(now[rel]) if rel in now else None))  # fmt: skip
        lost = [rel for rel in changed if rel in self.stamps and rel not in self.copied]
        items = []
        for rel in changed:
            if rel in lost:
                continue
            # a prior that does not exist (never a copy: those are under files/) means the file is new
            prior = self.folder / ("files" if rel in self.stamps else "absent") / rel
            items.append((prior, rel, file_sha(self.jail.root / rel) if rel in now else None))
        if items:
            record(items)
        return [rel for rel in changed if rel not in lost], lost

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def _keep(self) -> None:
        """Write the manifest atomically: a folder without one is a take that never finished."""
        data = {"root": str(self.jail.root), "stamps": self.stamps, "copied": sorted(self.copied),
                "guarded": sorted(self.guarded)}
        atomic_write(self.folder / MANIFEST, json.dumps(data).encode("utf-8"))


def _name(key: str) -> str:
    """A folder name for `key` (a session and a call id: a call id is the provider's, any characters)."""
    return PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _sweep(parent: Path) -> None:
    """Remove the snapshot folders older than KEPT_FOR: left by a process that died and was never resumed."""
    oldest = time.time() - KEPT_FOR
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        try:
            old = entry.name.startswith(PREFIX) and entry.stat(follow_symlinks=False).st_mtime < oldest
        except OSError:
            continue
        if old:
            shutil.rmtree(entry.path, ignore_errors=True)


def _files(jail: Jail) -> list[tuple[str, os.stat_result]]:
    """Every file of the workspace a command's change could be undone for (not blocked or protected)."""

    def skip(rel: str) -> bool:
        name = rel.rpartition("/")[2].lower()
        return name in UNMASKED_NAMES | CREATABLE_NAMES or jail.is_blocked(rel) or jail.is_protected(rel)

    return [(rel, st) for rel, st in walk_stats(jail.root, skip=skip) if stat.S_ISREG(st.st_mode)]


def _stamp(st: os.stat_result) -> Stamp:
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode
