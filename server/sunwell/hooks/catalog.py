"""Which hooks there are, numbered as `sunwell hooks list` shows them, where each comes from, and whether it may run.

A workspace config is written by whoever wrote the repository: a hook it proposes is remembered as approved by the
workspace, its point and a fingerprint of what would run — the argv, the glob, and the content of every file the argv
names inside the workspace (a script in the repository that changes after the approval is a different command, and
is asked again). The approvals live in `<data>/hooks/approved.json` (tools/policy/remembered.py), outside the
workspace, where no sandboxed program reaches.
"""

from __future__ import annotations

import hashlib
import json
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
    files = {}
    for arg in config.command:
        path = _workspace_file(arg, workspace)
        if path is not None:
            files[arg] = _file_digest(path)
    what = {"event": event, "match": config.match, "command": config.command, "files": files}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


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
