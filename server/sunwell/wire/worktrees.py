"""Worktree sessions on the wire: `sunwell/worktrees` lists them, `sunwell/worktreeAction` merges, discards or
continues one (both declared in wire/protocol.py's REQUESTS); `sunwell/chat`'s `worktree` runs a line in one."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sunwell.wire.base import WireModel
from sunwell.wire.options import Params

__all__ = ["WorktreeActionParams", "WorktreeActionResult", "WorktreeRow", "WorktreeState", "WorktreesResult"]

WorktreeState = Literal["new", "running", "done", "failed", "interrupted", "merged"]
WorktreeName = Annotated[str, Field(min_length=1, max_length=63)]


class WorktreeRow(WireModel):
    """One worktree session of the workspace's repository."""

    name: str
    """Its name, as `--worktree NAME` and `sunwell/chat`'s `worktree` take it."""
    branch: str
    """Its branch, `sunwell/NAME`, where each turn's changes are committed."""
    base: str
    """What the branch was made from (the branch checked out then); its diff is taken against that commit."""
    base_commit: str | None = None
    """The commit the branch was made from: what a review compares it with."""
    path: str
    """The worktree's checkout, outside the workspace (under the data dir or `worktrees.folder`)."""
    session: str | None
    """Its Sunwell session, once a turn ran there; `sunwell/chat` with `worktree` continues it."""
    state: WorktreeState
    """`new` (no turn yet), `running`, `done`, `failed` (the last turn ended in an error), `interrupted` (the
    process running its turn died), `merged`."""


class WorktreesResult(WireModel):
    worktrees: list[WorktreeRow]
    """The worktree sessions of the workspace's repository, the oldest first."""


class WorktreeActionParams(Params):
    name: WorktreeName
    """The worktree session."""
    action: Literal["merge", "discard", "continue"]
    """`merge` its branch into `into`; `discard` it (worktree and branch removed, refused with uncommitted changes
    unless `force`); `continue`: its row, to send the next line with `worktree`."""
    into: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    """The branch to merge into; default: the branch checked out in the workspace."""
    force: bool = False
    """`discard` even with changes not in a commit."""


class WorktreeActionResult(WireModel):
    worktree: WorktreeRow
    """As it is after the action (a discarded one: as it was)."""
    message: str
    """One line for the user: how it was merged, that it was removed."""
