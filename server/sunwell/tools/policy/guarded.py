"""What a command may not change: blocked entries (secrets, .git, .sunwell) and protected ones (.vscode, .envrc).

Before a command, the sandbox hides every blocked entry and shows every protected one read-only (sandbox.py). That
only covers what exists when the command starts: `mkdir .sunwell && echo 'ripgrep_path: ./tool.sh' >
.sunwell/config.yaml`, `git init sub && git -C sub config core.fsmonitor ...` or a new `.vscode/tasks.json` would
run on the host later. So after every command the workspace is scanned again, and whatever now stands under a
blocked or protected name that was not there before is moved out of the workspace into a quarantine folder,
before anything on the host can read it. Symlinks count too (a `.vscode` link to a folder the command filled). A
folder git takes for a repository (tools/policy/gitdirs.py), whatever its name, is protected like configuration: shown
read-only, and moved out when a command made it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sunwell.tools.policy.gitdirs import is_git_dir
from sunwell.tools.workspace.jail import Jail

UNMASKED_NAMES = frozenset({"__pycache__"})
"""Blocked to keep listings clean, not to keep a secret; a virtualenv holds thousands (more than bwrap takes)."""
CREATABLE_NAMES = frozenset({"node_modules", "__pycache__"})
"""Blocked folders a command may create (`npm install`): nothing on the host runs them on its own."""


@dataclass(frozen=True)
class GuardedEntry:
    path: Path
    rel: str
    is_dir: bool
    is_link: bool
    protected: bool
    """True for PROTECTED configuration (shown read-only), False for a blocked entry (hidden)."""


def guarded_entries(jail: Jail) -> list[GuardedEntry]:
    """Every blocked or protected entry of the workspace, outermost only (a blocked folder is not entered), sorted.
    Symlinks are listed, never followed."""
    found: list[GuardedEntry] = []
    stack = [(jail.root, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        if prefix and is_git_dir([e.name for e in entries]):  # a repository under another name: like .git
            found.append(GuardedEntry(directory, prefix.rstrip("/"), True, False, True))
            continue
        for entry in entries:
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            rel = prefix + entry.name
            if entry.name.lower() in UNMASKED_NAMES:
                continue
            blocked = jail.is_blocked_entry(rel, entry.name)  # its folder was entered, so it is not blocked
            if blocked or jail.is_protected_name(entry.name):  # nor protected
                found.append(GuardedEntry(Path(entry.path), rel, is_dir, is_link, not blocked))
            elif is_dir:
                stack.append((Path(entry.path), rel + "/"))
    return sorted(found, key=lambda e: e.rel)


def quarantine_planted(jail: Jail, before: set[str], into: Path | None) -> tuple[list[str], Path | None]:
    """Move out of the workspace every guarded entry that is not in `before` (their rels when the command started).

    Returns the moved rels and the folder they went to (under `into`, else the system temp dir)."""
    planted = [e for e in guarded_entries(jail)
               if e.rel not in before and e.path.name.lower() not in CREATABLE_NAMES]  # fmt: skip
    if not planted:
        return [], None
    base = Path(into) if into is not None else Path(tempfile.gettempdir()) / "sunwell-quarantine"
    folder = base / time.strftime("%Y%m%dT%H%M%S")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = Path(tempfile.mkdtemp(dir=folder))
    moved = []
    for entry in planted:
        target = folder / entry.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.move(str(entry.path), str(target))  # a rename, or a copy that keeps links as links
        except OSError:
            _remove(entry.path)  # cannot be kept: it must not stay where the host reads it
        moved.append(entry.rel + ("/" if entry.is_dir else ""))
    return moved, folder


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
