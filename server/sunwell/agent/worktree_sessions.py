"""Sessions in their own git worktree, as every front end runs them (`sunwell run --worktree`, `sunwell/chat`'s
`worktree`): the worktree opened (made when new), its turn counted against `worktrees.max_running`, and at the
turn's end everything it changed committed on its branch: the message from the user's line, the user as author, no
hook run (tools/workspace/git.py).

The session itself is an ordinary one whose workspace is the worktree's checkout: the front end loads that
checkout's settings (its workspace config only narrows, as any repository's) and builds its engine there, so the
jail, blocked paths, AGENTS.md and the sandbox are the checkout's and nothing of the user's workspace is touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sunwell.config import Settings
from sunwell.tools.workspace.worktree_merge import Merged, merge
from sunwell.tools.workspace.worktree_ports import place_note, port_env
from sunwell.tools.workspace.worktree_table import WorktreeRecord
from sunwell.tools.workspace.worktrees import (
    NAME_PATTERN,
    NAME_RULE,
    Repository,
    WorktreeError,
    Worktrees,
    check_name,
    name_for,
)
from sunwell.wire.worktrees import WorktreeRow

if TYPE_CHECKING:
    from sunwell.agent.engine import Engine

__all__ = ["NAME_PATTERN", "NAME_RULE", "Merged", "TurnEnd", "WorktreeBusy", "WorktreeError", "WorktreeRecord", "WorktreeSessions"]

SUBJECT_LIMIT = 72
"""The longest first line of a worktree commit's message (git's convention)."""


class WorktreeBusy(WorktreeError):
    """`max_running` worktree turns run already, or one runs in this worktree."""


class WorktreeSessions:
    """The worktree sessions of the repository `workspace` is in, by the user's settings."""

    def __init__(self, settings: Settings, workspace: Path) -> None:
        self.settings = settings
        self.worktrees = Worktrees(Repository.of(workspace), settings.worktrees, Path(settings.data_dir or "."))

    def rows(self) -> list[WorktreeRow]:
        return [row_of(row) for row in self.worktrees.table.rows()]

    def open(self, name: str | None, prompt: str = "", base: str | None = None) -> tuple[WorktreeRecord, bool]:
        """The worktree `name` (new: made from `base`, by default the main checkout's branch); a name from the
        prompt when none is given. Returns it and whether it was made now; a base given for one that exists and
        started elsewhere is refused (its branch cannot move)."""
        if name is not None and (row := self.worktrees.table.get(check_name(name))) is not None:
            if base is not None and base != row.base:
                raise WorktreeError(f"worktree '{row.name}' exists, made from {row.base}: leave out the base to "
                                    f"continue it, or name a new worktree")
            return row, False
        return self.worktrees.create(name or name_for(prompt, self.worktrees.taken()), base), True

    def workspace_of(self, row: WorktreeRecord) -> Path:
        return self.worktrees.workspace_of(row)

    @staticmethod
    def equip(engine: Engine, row: WorktreeRecord) -> Engine:
        """`engine`, of `row`'s checkout, told where it works: its commands get the worktree's ports, its model
        the words on where it is (tools/workspace/worktree_ports.py)."""
        engine.command_env = port_env(row.ports) if row.ports is not None else {}
        engine.instructions = [place_note(row.name, row.branch, row.ports)]
        return engine

    @contextmanager
    def turn(self, name: str, line: str) -> Iterator[TurnEnd]:
        """One turn in worktree `name` (`begin`, then `end` whatever happens)."""
        end = self.begin(name)
        try:
            yield end
        finally:
            self.end(name, line, end)

    def begin(self, name: str) -> TurnEnd:
        """A turn starts in worktree `name`: refused when `max_running` turns run already, or one runs in it."""
        cap = self.settings.worktrees.max_running
        with self.worktrees.table.changing() as rows:
            row = rows[name]
            running = [other.name for other in rows.values() if other.state == "running"]
            if name in running:
                raise WorktreeBusy(f"a turn runs in worktree '{name}' already: wait for it to end")
            if len(running) >= cap:
                raise WorktreeBusy(f"{len(running)} worktree sessions are running (worktrees.max_running: {cap}); "
                                   f"wait for one to end ({', '.join(sorted(running))})")
            row.state, row.pid = "running", os.getpid()
        return TurnEnd()

    def end(self, name: str, line: str, end: TurnEnd) -> None:
        """The turn ended: what it changed committed on the branch, the row saying how it ended."""
        row = self.worktrees.table.get(name)
        if row is None:
            return
        try:
            end.commit = self.worktrees.commit(row, commit_message(line, name, end.session))
        finally:
            def ended(row: WorktreeRecord) -> None:
                row.state, row.pid = ("failed" if end.status in ("error", "interrupted") else "done"), None
                row.session = end.session or row.session

            self.worktrees.table.update(name, ended)

    def merge(self, name: str, into: str | None = None) -> Merged:
        return merge(self.worktrees, name, into)

    def drop(self, name: str, force: bool = False) -> WorktreeRecord:
        return self.worktrees.drop(name, force)

    def diff(self, name: str) -> str:
        return self.worktrees.diff(self.worktrees.get(name))


class TurnEnd:
    """What the front end tells `WorktreeSessions.turn` of the turn it ran, and the commit it got."""

    def __init__(self) -> None:
        self.session: str | None = None
        self.status = "error"
        self.commit: str | None = None


def commit_message(line: str, name: str, session: str | None) -> str:
    subject = next((text.strip() for text in line.splitlines() if text.strip()), f"worktree session {name}")
    if len(subject) > SUBJECT_LIMIT:
        subject = subject[:SUBJECT_LIMIT - 1].rstrip() + "…"
    return f"{subject}\n\nSunwell worktree session {name}" + (f", session {session}" if session else "") + "\n"


def row_of(row: WorktreeRecord) -> WorktreeRow:
    return WorktreeRow(name=row.name, branch=row.branch, base=row.base, base_commit=row.base_commit, path=row.path, session=row.session,
                       state=row.state)
