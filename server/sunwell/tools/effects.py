"""What a staged command did to the workspace: judged, shown, and applied through the jail's writer as one
checkpoint (tools/overlay.py stages it; tools/shell.py runs it).

Each change is judged by the path it would reach, as a write by the model would be:
- a blocked or protected path (.git, .env, keys, .sunwell, .vscode...) and a symbolic link are reported and never
  applied: the workspace config, a git hook or a link out of the workspace cannot arrive this way;
- `__pycache__` is dropped: the cache the next run makes again, and never worth a line in a card;
- a tree under a blocked name a command may create (node_modules) is copied in whole, listed as one line, and is
  not part of undo;
- every other file is written with safe_write (atomic, no links followed), after its prior state is checkpointed,
  and only if the workspace file is still what the command saw (else it is reported as a conflict and left alone).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sunwell.tools.base import ToolFailure
from sunwell.tools.guarded import CREATABLE_NAMES, UNMASKED_NAMES
from sunwell.tools.jail import Jail
from sunwell.tools.overlay import Change, Stage, read_changes
from sunwell.tools.safe_write import prepare_write, remove_target, write_target

TEXT_LIMIT = 256_000
"""Larger files are listed without their text."""
TEXT_BUDGET = 2_000_000
"""All the text one preview carries; past it, files are listed without text."""
MAX_LISTED = 300
FOLDER_SUMMARY_AT = 25
"""A folder with more changes than this is one line of counts in the preview (a build output), not file by file."""

Record = Callable[[list[tuple[Path, str, str | None]]], None]
"""Checkpoints (prior file, workspace-relative path, sha256 of what will be written or None for a deletion) before
anything changes: tools/base.py ToolContext.checkpoint_changes."""


@dataclass
class Effects:
    files: list[Change] = field(default_factory=list)
    """Applied through the writer: files added, modified, deleted or re-moded, and folders made or removed."""
    refused: list[tuple[str, str]] = field(default_factory=list)
    """Blocked, protected or links, never applied: (rel, why), a folder's rel ending in `/` (what is in it is not
    listed again)."""
    trees: list[tuple[str, Path, int]] = field(default_factory=list)
    """(folder, its staged copy, file count) of creatable blocked folders, copied in whole."""
    seen: dict[str, str | None] = field(default_factory=dict)
    """sha256 of each changed workspace file as the command saw it (None: it did not exist)."""


def assess(stage: Stage, jail: Jail) -> Effects:
    """Sort what the command changed into what may be applied, and what may not (see the module docstring)."""
    effects = Effects()
    trees: dict[str, int] = {}
    for change in read_changes(stage, jail.root):
        parts = change.rel.split("/")
        if any(p.lower() in UNMASKED_NAMES for p in parts):
            continue
        creatable = next((i for i, p in enumerate(parts) if p.lower() in CREATABLE_NAMES), None)
        if creatable is not None and not jail.is_blocked("/".join(parts[:creatable])):
            if change.kind != "deleted":
                folder = "/".join(parts[: creatable + 1])
                trees[folder] = trees.get(folder, 0) + (0 if change.is_dir else 1)
            continue
        why = _refusal(change, jail)
        if why:
            if not any(rel.endswith("/") and change.rel.startswith(rel) for rel, _ in effects.refused):
                effects.refused.append((change.rel + ("/" if change.is_dir else ""), why))
            continue
        effects.files.append(change)
        if not change.is_dir:
            effects.seen[change.rel] = None if change.kind == "added" else file_sha(jail.root / change.rel)
    effects.trees = [(folder, stage.upper / folder, count) for folder, count in sorted(trees.items())]
    return effects


def _refusal(change: Change, jail: Jail) -> str | None:
    if jail.is_blocked(change.rel):
        return "a blocked path"
    if jail.is_protected(change.rel):
        return "configuration the editor or shell runs"
    if change.is_link:
        return "a symbolic link: Sunwell does not make links for a command"
    return None


# ---- the preview ------------------------------------------------------------------------------------------------


def preview(effects: Effects, jail: Jail, *, command: str, cwd: str, exit_code: int, output: str) -> dict[str, Any]:
    """PROTOCOL.md's `effects` preview: every file with its text before and after where it is text and small."""
    listed, summaries = _group(effects.files)
    budget = TEXT_BUDGET
    changes = []
    for change in listed[:MAX_LISTED]:
        if isinstance(change, tuple):  # a folder summary: its most common kind of change
            folder, kind = change
            changes.append({"path": folder, "change": kind, "before": None, "after": None, "binary": False})
            continue
        before = None if change.kind == "added" else _bytes(jail.root / change.rel)
        after = None if change.kind == "deleted" else _bytes(change.staged)
        binary = _is_binary(before) or _is_binary(after)
        size = len(before or b"") + len(after or b"")
        show = not binary and size <= budget
        budget -= size if show else 0
        changes.append({"path": change.rel, "change": change.kind, "binary": binary,
                        "before": _text(before) if show else None, "after": _text(after) if show else None})
    notes = summaries + [f"{folder}/: {count:,} files (copied in whole, not undone)" for folder, _, count in
                         effects.trees] + [f"not applied: {rel} ({why})" for rel, why in effects.refused]  # fmt: skip
    shown = output + ("".join(f"\n[Sunwell: {n}]" for n in notes) if notes else "")
    return {"kind": "effects", "command": command, "cwd": cwd, "exitCode": exit_code, "output": shown,
            "changes": changes, "truncated": len(listed) > MAX_LISTED}


def _group(files: Sequence[Change]) -> tuple[list[Change | tuple[str, str]], list[str]]:
    """Files in order, except that a folder with many changes (by its first two levels) becomes one entry,
    `(folder/, its most common kind of change)`, and one line of counts."""
    counts = Counter(_folder(c.rel) for c in files if not c.is_dir)
    big = {folder for folder, n in counts.items() if folder and n > FOLDER_SUMMARY_AT}
    kinds: dict[str, Counter[str]] = {folder: Counter() for folder in big}
    listed: list[Change | str] = []
    for change in (c for c in files if not c.is_dir):
        folder = _folder(change.rel)
        if folder not in big:
            listed.append(change)
            continue
        if not kinds[folder]:
            listed.append(folder)  # where the folder's first file was
        kinds[folder][change.kind] += 1
    summaries = [f"{folder}/: " + ", ".join(f"{n:,} {kind}" for kind, n in sorted(kinds[folder].items()))
                 for folder in sorted(big)]  # fmt: skip
    return [(e + "/", kinds[e].most_common(1)[0][0]) if isinstance(e, str) else e for e in listed], summaries


def _folder(rel: str) -> str:
    parts = rel.split("/")[:-1]
    return "/".join(parts[:2])


def _bytes(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        if os.lstat(path).st_size > TEXT_LIMIT:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _is_binary(data: bytes | None) -> bool:
    if data is None:
        return False
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8")


# ---- applying ---------------------------------------------------------------------------------------------------


@dataclass
class Applied:
    changed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def note(self, effects: Effects) -> str:
        """What the model is told, after the command's own output."""
        lines = []
        if self.changed:
            shown = ", ".join(self.changed[:20]) + (f" and {len(self.changed) - 20:,} more" if len(self.changed) > 20
                                                    else "")  # fmt: skip
            lines.append(f"applied {len(self.changed):,} file change(s) to the workspace: {shown}")
        lines += [f"{folder}/ copied in ({count:,} files)" for folder, _, count in effects.trees]
        if self.conflicts:
            lines.append("not applied, changed by someone else while the command ran: " + ", ".join(self.conflicts))
        if self.failed:
            lines.append("could not be applied: " + ", ".join(self.failed))
        if effects.refused:
            lines.append("not applied (commands may not change these): "
                         + ", ".join(f"{rel} ({why})" for rel, why in effects.refused))
        return "".join(f"\n[Sunwell: {line}]" for line in lines)


def apply(effects: Effects, jail: Jail, record: Record | None) -> Applied:
    """Write the changes into the workspace, checkpointed first; a file changed meanwhile is left alone."""
    applied = Applied()
    files = [c for c in effects.files if not c.is_dir]
    ready = []
    for change in files:
        if file_sha(jail.root / change.rel) != effects.seen.get(change.rel):
            applied.conflicts.append(change.rel)
        else:
            ready.append(change)
    targets = {c.rel: prepare_write(jail, c.rel) for c in ready}
    if record is not None and ready:
        record([(targets[c.rel].path, c.rel, None if c.kind == "deleted" else file_sha(c.staged)) for c in ready])
    for change in ready:
        target = targets[change.rel]
        try:
            if change.kind == "deleted":
                remove_target(target)
            else:
                assert change.staged is not None
                data, mode = change.staged.read_bytes(), stat.S_IMODE(os.lstat(change.staged).st_mode) & 0o777
                write_target(target, data, mode=mode)
        except ToolFailure as failure:  # e.g. a file with other hard links: left alone, said, the rest applied
            applied.failed.append(f"{change.rel} ({failure.error.message})")
            continue
        applied.changed.append(change.rel)
    for change in effects.files:
        if change.is_dir and change.kind == "added":
            _make_dir(jail, change.rel)
    for change in sorted((c for c in effects.files if c.is_dir and c.kind == "deleted"), key=lambda c: -len(c.rel)):
        with contextlib.suppress(OSError, ToolFailure):
            os.rmdir(jail.resolve(change.rel))  # only when empty: a file kept back (conflict) keeps its folder
    for folder, staged, _ in effects.trees:
        _copy_tree(jail, folder, staged)
    return applied


def _make_dir(jail: Jail, rel: str) -> None:
    real = jail.resolve(rel, must_exist=False)
    if not real.exists():
        real.mkdir(parents=True, exist_ok=True)


def _copy_tree(jail: Jail, folder: str, staged: Path) -> None:
    """A creatable blocked folder (node_modules): copied in whole, links kept as links, never through one."""
    parent_rel, _, name = folder.rpartition("/")
    parent = jail.resolve(parent_rel or ".", must_exist=False)
    parent.mkdir(parents=True, exist_ok=True)
    dest = parent / name
    if dest.is_symlink():
        raise ToolFailure("permission", f"{folder} is a symbolic link; the command's changes to it were not applied")
    shutil.copytree(staged, dest, symlinks=True, dirs_exist_ok=True, ignore=_whiteouts)


def _whiteouts(folder: str, names: list[str]) -> set[str]:
    """What overlayfs left for deleted entries (character devices 0,0): nothing to copy."""
    return {name for name in names if stat.S_ISCHR(os.lstat(os.path.join(folder, name)).st_mode)}


def file_sha(path: Path | None) -> str | None:
    """The sha256 of a regular file (never through a symlink); None when there is none."""
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


