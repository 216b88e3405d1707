"""What a staged command did to the workspace: judged, shown, and applied through the jail's writer as one
checkpoint (tools/sandbox/overlay.py stages it; tools/handlers/shell.py runs it).

Each change is judged by the path it would reach, as a write by the model would be, and by what it is:
- a blocked or protected path (.git, .env, keys, .sunwell, .vscode...), a symbolic link, a FIFO, a socket or a
  device, anything in a folder git takes for a repository, and a file git would read as a link to a repository or
  as config that runs a program (tools/policy/gitdirs.py) are reported and never applied: the workspace config, a git hook,
  a repository under another name or a link out of the workspace cannot arrive this way, and nothing that is not a
  regular file is ever opened (a FIFO would block the preview);
- `__pycache__` is dropped: the cache the next run makes again, and never worth a line in a card;
- a tree under a blocked name a command may create (node_modules) is copied in whole but for what the rules above
  refuse (tools/sandbox/tree_copy.py), listed as one line, and is not part of undo;
- every other file is written with safe_write (atomic, no links followed), after its prior state is checkpointed,
  and only if the workspace file is still what the command saw (else it is reported as a conflict and left alone).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from sunwell.tools.base import ToolFailure
from sunwell.tools.policy import gitdirs
from sunwell.tools.policy.guarded import CREATABLE_NAMES, UNMASKED_NAMES
from sunwell.tools.sandbox.copy_stage import CopyStage
from sunwell.tools.sandbox.overlay import Change, Stage
from sunwell.tools.sandbox.tree_copy import copy_tree
from sunwell.tools.workspace import open_flags
from sunwell.tools.workspace.jail import Jail
from sunwell.tools.workspace.safe_write import prepare_write, remove_target, write_target

TEXT_LIMIT = 256_000
"""Larger files are listed without their text."""
TEXT_BUDGET = 2_000_000
"""All the text one preview carries; past it, files are listed without text."""
MAX_LISTED = 300
FOLDER_SUMMARY_AT = 25
"""A folder with more changes than this is one line of counts in the preview (a build output), not file by file."""

Record = Callable[[list[tuple[Path, str, str | None]]], None]
"""Checkpoints (prior file, workspace-relative path, sha256 of what will be written or None for a deletion) before
anything changes: tools/base.py UndoHooks.before_changes."""


@dataclass
class Tree:
    """A creatable blocked folder (node_modules) the command made or changed: copied in whole (tools/sandbox/tree_copy.py)
    but for `skipped`, the entries in it that are never applied (links, FIFOs, sockets, repositories, git config
    that runs a program)."""

    folder: str
    staged: Path
    files: int = 0
    skipped: set[str] = field(default_factory=set)

    def not_applied(self) -> str:
        if not self.skipped:
            return ""
        return f"; {len(self.skipped):,} entries not applied: links, FIFOs, sockets, git directories or config"


@dataclass
class Effects:
    files: list[Change] = field(default_factory=list)
    """Applied through the writer: files added, modified, deleted or re-moded, and folders made or removed."""
    refused: list[tuple[str, str]] = field(default_factory=list)
    """Never applied: (rel, why), a folder's rel ending in `/` (what is in it is not listed again)."""
    trees: list[Tree] = field(default_factory=list)
    seen: dict[str, str | None] = field(default_factory=dict)
    """sha256 of each changed workspace file as the command saw it (None: it did not exist)."""


def assess(stage: Stage | CopyStage, jail: Jail) -> Effects:
    """Sort what the command changed into what may be applied, and what may not (see the module docstring)."""
    effects = Effects()
    changes = [c for c in stage.changes(jail.root)
               if not any(p.lower() in UNMASKED_NAMES for p in c.rel.split("/"))]  # fmt: skip
    repositories = _repositories(stage, jail.root, changes)
    trees: dict[str, Tree] = {}
    for change in changes:
        parts = change.rel.split("/")
        creatable = next((i for i, p in enumerate(parts) if p.lower() in CREATABLE_NAMES), None)
        if creatable is not None and not jail.is_blocked("/".join(parts[:creatable])):
            folder = "/".join(parts[: creatable + 1])
            _into_tree(trees, effects, folder, change, _hazard(change, repositories), stage)
            continue
        why = _refusal(change, jail) or _hazard(change, repositories)
        if why:
            rel, reason = why if isinstance(why, tuple) else (change.rel + ("/" if change.is_dir else ""), why)
            if not any(done.endswith("/") and (rel + "/").startswith(done) for done, _ in effects.refused):
                effects.refused.append((rel, reason))
            continue
        effects.files.append(change)
        if not change.is_dir:
            effects.seen[change.rel] = None if change.kind == "added" else file_sha(jail.root / change.rel)
    effects.trees = [trees[folder] for folder in sorted(trees)]
    return effects


def _into_tree(trees: dict[str, Tree], effects: Effects, folder: str, change: Change,
               why: str | tuple[str, str] | None, stage: Stage | CopyStage) -> None:
    if change.kind == "deleted":
        return  # a tree is copied over what is there: nothing in it is removed
    at, reason = why if isinstance(why, tuple) else (change.rel, why)
    if reason and at.rstrip("/") == folder:  # the folder itself is a link, a FIFO, a repository: none of it
        if (at, reason) not in effects.refused:
            effects.refused.append((at, reason))
        trees.pop(folder, None)
        return
    if any(r.rstrip("/") == folder for r, _ in effects.refused):
        return
    tree = trees.setdefault(folder, Tree(folder, stage.upper / folder))
    if reason:
        tree.skipped.add(at.rstrip("/"))
    elif not change.is_dir:
        tree.files += 1


def _refusal(change: Change, jail: Jail) -> str | None:
    if jail.is_blocked(change.rel):
        return "a blocked path"
    if jail.is_protected(change.rel):
        return "configuration an editor or tool runs programs from"
    return None


def _hazard(change: Change, repositories: list[str]) -> str | tuple[str, str] | None:
    """Why a change is never applied wherever it is: what it is (a link, a FIFO…), the repository it is in (then
    `(repository/, why)`), or what git would do with its content."""
    repository = next((r for r in repositories if r == "" or change.rel == r or change.rel.startswith(r + "/")), None)
    if repository is not None:
        return (repository + "/" if repository else "./"), "a git directory: git runs what its config says"
    if change.is_link:
        return "a symbolic link: Sunwell does not make links for a command"
    if change.special:
        return f"{change.special}: only files and folders are applied"
    if change.staged is None or change.is_dir:
        return None
    try:
        with open_regular(change.staged) as stream:
            return gitdirs.hazard(stream)
    except OSError:
        return "not a regular file in the staging layer"


def _repositories(stage: Stage | CopyStage, root: Path, changes: Sequence[Change]) -> list[str]:
    """Every folder holding a change (or being one) that git takes for a repository once the change is applied:
    its entries in the staging layer or the workspace, whichever has them (a folder that stops being one counts
    too: changing a repository is refused like making one)."""
    folders = {""}
    for change in changes:
        parts = change.rel.split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts) + (1 if change.is_dir else 0)))
    names = ("HEAD", "objects", "refs", "commondir")
    return sorted(f for f in folders
                  if gitdirs.is_git_dir([n for n in names if any(os.path.lexists(base / f / n)
                                                                  for base in (stage.upper, root))]))  # fmt: skip


# ---- the preview ------------------------------------------------------------------------------------------------


def preview(effects: Effects, jail: Jail, *, command: str, cwd: str, exit_code: int, output: str) -> dict[str, Any]:
    """The `effects` preview (docs/sidecar.md "EffectsPreview"): every file with its text before and after where
    it is text and small."""
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
    notes = summaries + [f"{t.folder}/: {t.files:,} files (copied in whole, not undone{t.not_applied()})" for t in effects.trees]
    notes += [f"not applied: {rel} ({why})" for rel, why in effects.refused]
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
        with open_regular(path) as f:
            return None if os.fstat(f.fileno()).st_size > TEXT_LIMIT else f.read()
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
        lines += [f"{t.folder}/ copied in ({t.files:,} files{t.not_applied()})" for t in effects.trees]
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
                with open_regular(change.staged) as f:
                    data, mode = f.read(), stat.S_IMODE(os.fstat(f.fileno()).st_mode) & 0o777
                write_target(target, data, mode=mode)
        except ToolFailure as failure:  # e.g. a file with other hard links: left alone, said, the rest applied
            applied.failed.append(f"{change.rel} ({failure.error.message})")
            continue
        except OSError as exc:
            applied.failed.append(f"{change.rel} ({exc.strerror or exc})")
            continue
        applied.changed.append(change.rel)
    for change in effects.files:
        if change.is_dir and change.kind == "added":
            _make_dir(jail, change.rel)
    for change in sorted((c for c in effects.files if c.is_dir and c.kind == "deleted"), key=lambda c: -len(c.rel)):
        with contextlib.suppress(OSError, ToolFailure):
            os.rmdir(jail.resolve(change.rel))  # only when empty: a file kept back (conflict) keeps its folder
    for tree in effects.trees:
        applied.failed += copy_tree(jail, tree.folder, tree.staged, tree.skipped)
    return applied


def _make_dir(jail: Jail, rel: str) -> None:
    real = jail.resolve(rel, must_exist=False)
    if not real.exists():
        real.mkdir(parents=True, exist_ok=True)


def file_sha(path: Path | None) -> str | None:
    """The sha256 of a regular file (never through a symlink); None when there is none."""
    if path is None:
        return None
    try:
        f = open_regular(path)
    except OSError:
        return None
    digest = hashlib.sha256()
    with f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def open_regular(path: Path) -> BinaryIO:
    """A regular file opened to read, never through a link, never waiting on a FIFO (else OSError)."""
    fd = os.open(path, open_flags.READ_NOFOLLOW)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


