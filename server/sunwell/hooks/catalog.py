"""Which hooks there are, numbered as `sunwell hooks list` shows them, where each comes from, and whether it may run.

A workspace config is written by whoever wrote the repository: a hook it proposes is remembered as approved by the
workspace, its point and a fingerprint of what would run — the argv, the glob, and the content of every workspace file
it may load: the files the argv names, the folder tree of each (the modules a script imports from beside it), a
`-m` module's package (a script or a module of it that changes after the approval is a different command, and is
asked again). The approvals live in `<data>/hooks/approved.json` (tools/policy/remembered.py), outside the
workspace, where no sandboxed program reaches.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sunwell.config.settings import HookConfig, HooksSettings, Settings
from sunwell.tools.policy.remembered import RememberedApprovals

Event = Literal["pre_tool", "post_tool", "turn_end", "session_start"]
EVENTS: tuple[Event, ...] = ("pre_tool", "post_tool", "turn_end", "session_start")
FILE_HASH_LIMIT = 50_000_000
"""A file the argv names that is larger than this is fingerprinted by its size alone."""
FILES_LIMIT = 2_000
"""At most this many files of what a hook may load are fingerprinted (a hook beside a huge tree)."""


@dataclass(frozen=True)
class HookEntry:
    number: int
    """1-based, in the order `sunwell hooks list` prints: the user's, then the workspace's, each by point."""
    event: Event
    config: HookConfig
    source: Literal["user", "workspace"]
    sha256: str
    approved: bool
    """The user's own hooks always are; a workspace's once `sunwell hooks approve N` (or the prompt) said so."""

    @property
    def line(self) -> str:
        """The argv as one line to show (quoted like a shell would need it; it is never given to one)."""
        return shlex.join(self.config.command)

    def wire(self) -> dict[str, object]:
        return {"number": self.number, "event": self.event, "match": self.config.match,
                "command": self.config.command, "timeout": self.config.timeout, "source": self.source,
                "approved": self.approved}


def approvals(data_dir: Path) -> RememberedApprovals:
    return RememberedApprovals(Path(data_dir) / "hooks" / "approved.json", key="event")


def fingerprint(event: str, config: HookConfig, workspace: Path) -> str:
    root = workspace.resolve()
    files = {str(path.relative_to(root)): _file_digest(path) for path in _loaded(config.command, root)}
    what = {"event": event, "match": config.match, "command": config.command, "files": files}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def _loaded(argv: list[str], root: Path) -> list[Path]:
    """The workspace files a hook may load, as an interpreter finds modules: each file the argv names and what lies
    beside it, and a `-m` module's package."""
    found: set[Path] = set()
    for before, arg in zip(["", *argv], argv, strict=False):
        if before == "-m":
            found.update(_module(arg, root))
        if (path := _workspace_file(arg, root)) is not None:
            found.update([path, *_beside(path, root)])
    return sorted(found)[:FILES_LIMIT]


def _beside(script: Path, root: Path) -> list[Path]:
    """What a script imports, requires or sources from beside it: its folder's tree; at the root (which holds
    everything), the root's files of its kind (`helper.py` beside `check.py`)."""
    if script.parent == root:
        return [path for path in root.iterdir() if path.is_file() and path.suffix == script.suffix]
    return _tree(script.parent)


def _module(name: str, root: Path) -> list[Path]:
    """`-m pkg.mod` run from the workspace: the top package's tree, or a module at the root and what is beside it."""
    top = name.split(".")[0]
    if not top.isidentifier():
        return []
    package = (root / top).resolve()
    if package.is_dir() and package.is_relative_to(root):
        return _tree(package)
    single = _workspace_file(f"{top}.py", root)
    return [single, *_beside(single, root)] if single is not None else []


def _tree(folder: Path) -> list[Path]:
    """The files under `folder`, symbolic links to folders not followed, FILES_LIMIT at most."""
    return list(itertools.islice((Path(top, name) for top, _, names in os.walk(folder) for name in names
                                  if Path(top, name).is_file()), FILES_LIMIT))


def hook_entries(settings: Settings, workspace: Path) -> list[HookEntry]:
    """Every hook, numbered: the user's (approved), then the workspace's proposals (approved or not)."""
    store = approvals(Path(settings.data_dir or "."))
    entries: list[HookEntry] = []
    for source, hooks in (("user", settings.hooks), ("workspace", settings.proposed_hooks)):
        for event, config in _each(hooks):
            sha = fingerprint(event, config, workspace)
            approved = source == "user" or store.has(workspace, event, sha)
            entries.append(HookEntry(len(entries) + 1, event, config, source, sha, approved))  # type: ignore[arg-type]
    return entries


def approve(entry: HookEntry, workspace: Path, data_dir: Path) -> None:
    approvals(data_dir).add(workspace, entry.event, entry.sha256, replace=False)


def _each(hooks: HooksSettings) -> list[tuple[Event, HookConfig]]:
    return [(event, config) for event in EVENTS for config in getattr(hooks, event)]


def _workspace_file(arg: str, workspace: Path) -> Path | None:
    try:
        path = (workspace / arg).resolve()
        inside = path.is_relative_to(workspace.resolve())
        return path if inside and path.is_file() else None
    except (OSError, ValueError):
        return None


def _file_digest(path: Path) -> str:
    try:
        if path.stat().st_size > FILE_HASH_LIMIT:
            return f"size:{path.stat().st_size}"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"
