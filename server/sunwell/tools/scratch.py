"""What the agent's own tools keep for a session: the key-value store of `kv_set`/`kv_get` and `update_plan`'s plan.

`ScratchState` is the session's and lives as long as its live state (agent/live.py `LiveSession`): a long-lived
front end keeps it across turns, `::clear` forgets it, a session reopened from disk starts with an empty store (its
plan is still in its log). A turn hands its tools a `Scratch`: that state, and the way to tell the turn's stream
that the plan changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sunwell.wire.events import PlanEvent

MAX_BYTES = 64 * 1024
"""What one session's store may hold: its keys and values, as UTF-8."""


class StoreFull(Exception):
    """A value that would take the store past MAX_BYTES; nothing was stored."""


@dataclass
class ScratchState:
    values: dict[str, str] = field(default_factory=dict)
    plan: PlanEvent | None = None
    """The last plan `update_plan` set in this session (its items and explanation), None before the first."""

    @property
    def size(self) -> int:
        return sum(_size(key, value) for key, value in self.values.items())

    def put(self, key: str, value: str) -> int:
        """Store `value` under `key`, replacing what it held; the store's size after. Raises StoreFull."""
        after = self.size - (_size(key, self.values[key]) if key in self.values else 0) + _size(key, value)
        if after > MAX_BYTES:
            raise StoreFull(after)
        self.values[key] = value
        return after


def _size(key: str, value: str) -> int:
    return len(key.encode("utf-8")) + len(value.encode("utf-8"))


@dataclass(frozen=True)
class Scratch:
    """A turn's way to the session's scratch state (ToolContext.scratch)."""

    state: ScratchState
    show_plan: Callable[[PlanEvent], object] = lambda event: None
    """Sends a `plan` event on the running turn's stream (and so into the session's log)."""
