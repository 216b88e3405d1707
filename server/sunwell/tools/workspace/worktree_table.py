"""The worktree sessions of one repository, as a small JSON table in the data dir (`worktrees/REPO-ID.json`).

One row per worktree: its name, branch, base, checkout, session and state. Every change is read, changed and
written under an exclusive lock on the table's lock file, so a `sunwell run --worktree` and the sidecar never lose
each other's rows. A row marked `running` names the process that runs its turn; a process that died leaves the row
`interrupted` when read, so a crash never holds a place under `max_running`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from sunwell.tools.workspace.file_lock import lock_exclusive

WorktreeState = Literal["new", "running", "done", "failed", "interrupted", "merged"]


@dataclass
class WorktreeRecord:
    name: str
    branch: str
    base: str
    """What the branch was made from, as the user named it (a branch, or HEAD's branch)."""
    base_commit: str
    """The commit it was made from: what its diff is taken against."""
    path: str
    """The checkout's root."""
    session: str | None = None
    state: WorktreeState = "new"
    pid: int | None = None
    """The process running its turn while `running`."""
    ports: int | None = None
    """The first of its block of ports (worktree_ports.py PORT_BLOCK): its commands get it as PORT, so two sessions'
    servers do not collide."""
    copied: list[str] = field(default_factory=list)
    """Untracked files copied in (`worktrees.copy_untracked`): never committed."""
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


class WorktreeTable:
    def __init__(self, file: Path) -> None:
        self.file = file

    def rows(self) -> list[WorktreeRecord]:
        return list(self._read().values())

    def get(self, name: str) -> WorktreeRecord | None:
        return self._read().get(name)

    @contextmanager
    def changing(self) -> Iterator[dict[str, WorktreeRecord]]:
        """The rows by name, locked: what the block leaves in the dict is written back."""
        self.file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.file.with_suffix(".lock"), "a+", encoding="utf-8") as lock:
            lock_exclusive(lock)
            rows = self._read()
            yield rows
            temporary = self.file.with_suffix(".tmp")
            temporary.write_text(json.dumps([asdict(row) for row in rows.values()], indent=1), encoding="utf-8")
            os.replace(temporary, self.file)

    def update(self, name: str, change: Callable[[WorktreeRecord], None]) -> WorktreeRecord | None:
        with self.changing() as rows:
            if (row := rows.get(name)) is not None:
                change(row)
            return row

    def _read(self) -> dict[str, WorktreeRecord]:
        try:
            raw = json.loads(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # a damaged table lists nothing; the worktrees themselves are still git's
        known = {f.name for f in fields(WorktreeRecord)}
        rows = [WorktreeRecord(**{k: v for k, v in item.items() if k in known}) for item in raw
                if isinstance(item, dict) and {"name", "branch", "base", "base_commit", "path"} <= item.keys()]
        for row in rows:
            if row.state == "running" and not _alive(row.pid):
                row.state, row.pid = "interrupted", None
        return {row.name: row for row in rows}


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
