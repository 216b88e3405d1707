"""Which rows of a session log make its conversation now: the branch a rewind chose (issue 34, Edit & resend, Retry).

A line sent in place of a turn (`sunwell/chat`'s `replaceTurn`, `sunwell run --replace-turn`) first appends a
`rewind` row naming that turn (agent/session.py). Read back, the rewind takes the conversation to where it was
before the turn: the rows from that turn's first one up to the rewind are off the branch (the turn, the ones after
it, a `::compact` made since). Nothing is deleted or rewritten: the log keeps both branches (`sunwell sessions
export`, `SessionStore.events(whole=True)`) and every reader of the conversation sees the chosen one: the messages
the model is sent, the replay a front end draws, `::context`, usage, the sessions list, resume (a turn off the
branch is never taken up again).

Rewinding does not touch files: what the replaced turn wrote stays, and Undo still goes back turn by turn, newest
first, that turn's changes included (its checkpoints are kept by turn, beside the log).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

log = logging.getLogger(__name__)
R = TypeVar("R")
REWIND = "rewind"


def on_branch(rows: Iterable[R], key: Callable[[R], tuple[str, str, Any]]) -> list[R]:
    """The rows of the chosen branch, in log order. `key(row)` is the row's (turn, kind, data); a rewind's data (a
    dict, or its JSON text) names the turn it goes back before. The rewind rows stay: they say what happened."""
    kept: list[R] = []
    starts: dict[str, int] = {}
    """Turn -> where its first row is in `kept`."""
    for row in rows:
        turn, kind, data = key(row)
        if kind == REWIND:
            at = starts.get(rewound_turn(data) or "")
            if at is None:  # written for a turn already cut off, by a process racing another: it changes nothing
                log.warning("a rewind to before %r, which is not on the branch, is ignored", data)
                continue
            del kept[at:]
            starts = {name: index for name, index in starts.items() if index < at}
        elif turn and turn not in starts:
            starts[turn] = len(kept)
        kept.append(row)
    return kept


def rewound_turn(data: Any) -> str | None:
    """The turn a rewind row goes back before; None when its data says none (a row of a newer Sunwell, say)."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except ValueError:
            return None
    turn = data.get("turn") if isinstance(data, dict) else None
    return turn if isinstance(turn, str) else None
